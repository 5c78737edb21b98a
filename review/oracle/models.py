"""Step-wise oracle testing (Agentic-MME §2.4): runs and their per-item results.

An ``OracleRun`` walks one model (endpoint + model name) through the reference trajectories of
a project's items (all items with one, or those chosen); its status is its job's. An
``OracleResult`` is one item's test in a run: the answer the model gave, whether the item's
matcher accepts it, the conversation as sent (images as ``sha256`` references, never their
data), the raw output, latency and tokens, or why the item could not be tested. An item whose
newest result for a model failed is flagged for review (``review.oracle.selectors``).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from benchmark.fields import JSONField
from benchmark.models import Item, Job, Project

__all__ = ["OracleOutcome", "OracleResult", "OracleRun"]


class OracleOutcome(models.TextChoices):
    SOLVED = "solved", "Solved"
    FAILED = "failed", "Failed"
    ERROR = "error", "Not tested"


class OracleRun(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="oracle_runs")
    base_url = models.CharField(max_length=500)
    model = models.CharField(max_length=200)
    #: ``{"items": [external ids]}``; no ids: every item with a reference trajectory.
    selection = JSONField(default=dict, blank=True)
    #: The conversation builder's ``PROMPT_VERSION`` the run's calls use.
    prompt_version = models.CharField(max_length=20)
    job = models.ForeignKey(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="oracle_runs"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"oracle test with {self.model} (run #{self.pk})"


class OracleResult(models.Model):
    run = models.ForeignKey(OracleRun, on_delete=models.CASCADE, related_name="results")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="oracle_results")
    outcome = models.CharField(max_length=10, choices=OracleOutcome.choices)
    #: The answer the matcher saw (the text inside <answer>, else the whole output).
    answer = models.TextField(blank=True)
    #: The model's raw output.
    output = models.TextField(blank=True)
    #: Why the item was not tested (no reference, a missing image file, the endpoint failed).
    error = models.TextField(blank=True)
    #: True when the endpoint gave no answer (a resumed run asks again).
    transport_error = models.BooleanField(default=False)
    #: ``[{"role", "content"}]`` with images as ``{"type": "image", "sha256", "index"}``.
    messages = JSONField(default=list, blank=True)
    #: What a reviewer should know about the conversation (images derived, not stored).
    notes = JSONField(default=list, blank=True)
    #: The fingerprint of the item's task document the conversation was built from.
    reference_fingerprint = models.CharField(max_length=64, blank=True)
    request_key = models.CharField(max_length=64, blank=True, db_index=True)
    cached = models.BooleanField(default=False)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["run", "item__position", "item_id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "item"], name="oracle_result_unique_item"),
            models.CheckConstraint(
                condition=Q(outcome__in=["solved", "failed", "error"]),
                name="oracle_result_outcome_valid",
            ),
            models.CheckConstraint(
                condition=Q(outcome="error") | Q(error=""),
                name="oracle_result_error_only_when_not_tested",
            ),
        ]
        indexes = [models.Index(fields=["item", "-id"], name="oracle_result_item_newest")]

    def __str__(self) -> str:
        return f"{self.item_id} in oracle run {self.run_id}: {self.outcome}"

    @property
    def tested(self) -> bool:
        return self.outcome != OracleOutcome.ERROR
