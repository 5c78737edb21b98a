"""An evaluation run of one model on a project's items, a result per (run, item), every model
call it made (the response cache a replay answers from) and every tool call it recorded.

``EvaluationRun``: the project, the model and its endpoint, the protocol settings, which items
(``verified``, ``all`` or ``release:NAME``), the item versions it ran on, who and when, and its
job(s) (a large run is split into chunks, one job each). ``EvaluationResult``: one per (run,
item), unique, so a resumed run never repeats a finished item. ``EvaluationCall``: one model
call, keyed by its request key (``benchmark.llm.cache.request_key``: endpoint, model, messages
with images as hashes, tools, params). ``ToolCallRecord``: one provider call, keyed by
``benchmark.evaluation.base.call_key`` per project and item; records travel with the project.
"""

from __future__ import annotations

from django.conf import settings as django_settings
from django.db import models

from benchmark.evaluation.base import Status
from benchmark.fields import JSONField, JSONTextField, NulTextField
from benchmark.models import Item, Job, Project

__all__ = ["EvaluationCall", "EvaluationResult", "EvaluationRun", "ToolCallRecord"]


class ItemChoice(models.TextChoices):
    VERIFIED = "verified", "Verified items"
    ALL = "all", "All items"


class EvaluationRun(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="evaluation_runs")
    model = models.CharField(max_length=200)
    base_url = models.CharField(max_length=500)
    #: The protocol's settings as chosen (``EvalSettings`` fields) and ``workers``.
    settings = JSONField(default=dict, blank=True)
    #: ``verified``, ``all`` or ``release:NAME``.
    items = models.CharField(max_length=220, default=ItemChoice.VERIFIED)
    #: ``{item id: version}`` of every item the run covers, when it was created (the
    #: item's newest ItemVersion number, 0 when it has none): the leaderboard says when
    #: items changed since.
    item_versions = JSONField(default=dict, blank=True)
    item_count = models.PositiveIntegerField(default=0)
    #: Answer every model and tool call from the record only (a replay).
    replay = models.BooleanField(default=False)
    job = models.ForeignKey(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluation_runs"
    )
    #: The ids of the run's chunk jobs (one job when the run is small), newest set.
    job_ids = JSONField(default=list, blank=True)
    #: The protocol's summary once the run has finished (``summarize``).
    summary = JSONField(default=dict, blank=True)
    #: ``{column key: [low, high]}``: bootstrap 95 % intervals over items of the summary's
    #: figures (the protocol's ``summarize`` on resampled items, seeded).
    intervals = JSONField(default=dict, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "model", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.model} on {self.project} (evaluation #{self.pk})"

    @property
    def price(self) -> tuple[float, float] | None:
        """(input, output) price per million tokens set for the run (``settings["price"]``:
        from the evaluation form, or the project's model settings), or None: no price, the
        cost is unknown."""
        raw = (self.settings or {}).get("price")
        if not isinstance(raw, dict):
            return None
        try:
            return float(raw["input"]), float(raw["output"])
        except (KeyError, TypeError, ValueError):
            return None

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """What these tokens cost at the run's price, or None when it has no price."""
        price = self.price
        if price is None:
            return None
        return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000


STATUS_CHOICES = [
    (Status.OK, "ok"),
    (Status.ERROR, "error"),
    (Status.NOT_EXECUTABLE, "not executable here"),
]


class EvaluationResult(models.Model):
    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="results")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="evaluation_results")
    status = models.CharField(max_length=20, choices=STATUS_CHOICES)
    #: The output and the trace hold what tools and models said, as they said it: kept as
    #: their JSON text (``JSONTextField``: the keys in order, a NUL character kept, on
    #: PostgreSQL as on SQLite). ``scores`` stays JSON: the database reads scores out of it.
    output = JSONTextField(null=True, blank=True)
    scores = JSONField(default=dict, blank=True)
    #: ``{relative path: sha256}``: the output's files, stored by content hash.
    files = JSONField(default=dict, blank=True)
    trace = JSONTextField(default=list, blank=True)
    model_calls = models.PositiveIntegerField(default=0)
    tool_calls = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    error = NulTextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "item__position", "item_id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "item"], name="evaluation_result_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.item_id} in evaluation {self.run_id}: {self.status}"

    @property
    def finished(self) -> bool:
        return self.status != Status.ERROR


class EvaluationCall(models.Model):
    """One model call of an evaluation (or one answered from the record)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="evaluation_calls")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="evaluation_calls")
    run = models.ForeignKey(
        EvaluationRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="calls"
    )
    request_key = models.CharField(max_length=64, db_index=True)
    endpoint = models.CharField(max_length=500)
    model = models.CharField(max_length=200)
    #: The messages as keyed: images as ``sha256:`` references, never their data. Kept as
    #: their JSON text (``JSONTextField``), as sent: a tool's text with a NUL character in it
    #: is stored on PostgreSQL too, and the key computed again from them (a release) matches.
    messages = JSONTextField(default=list, blank=True)
    tools = JSONField(default=list, blank=True)
    params = JSONField(default=dict, blank=True)
    #: The reply's text exactly, a NUL character in it included (``NulTextField``).
    answer = NulTextField(blank=True)
    #: ``[{"id", "name", "arguments"}]`` as the model wrote them.
    tool_calls = JSONField(default=list, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["project", "item"])]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "item", "request_key"], name="evaluation_call_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model} call {self.request_key[:12]} on item {self.item_id}"


class ToolCallRecord(models.Model):
    """One call to a tool provider (retrieval, m&m's model tools ...), per project and item."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tool_records")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="tool_records")
    key = models.CharField(max_length=64)
    name = models.CharField(max_length=200)
    #: ``{"item", "name", "arguments"}``. Request and response are kept as their JSON text
    #: (``JSONTextField``), so they read back as the provider gave them on every database:
    #: a replay shows the model the output exactly as the recorded run did.
    request = JSONTextField(default=dict, blank=True)
    response = JSONTextField(null=True, blank=True)
    #: ``{file name: sha256}``, stored by content hash.
    files = JSONField(default=dict, blank=True)
    error = NulTextField(blank=True)
    seconds = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "item", "key"], name="tool_record_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.name} on item {self.item_id}"
