"""A judge run over a project's model answers and every call it made.

A ``JudgeRun`` names the judge, the endpoint and model, the templates (id → version) and
which answers it judges; its status is its job's. A ``JudgeCall`` is one request to the judge
model for one answer: the messages (images as ``sha256:`` references, never their data), the
raw output of each attempt (a failed parse is retried once), the parsed value, latency and
tokens. ``key`` is the judges' ``Call.key`` (template version, model, inputs) hashed with the
endpoint; a finished call of any run of the project with the same key answers from the cache,
and a resumed run skips the calls it already finished. The m&m's plan validity judge judges
Plans, not Responses: its calls are ``PlanJudgeCall`` rows, the same record keyed by plan.

Which judges there are is the registry's (``review.judges.specs``): ``JudgeRun.judge`` takes its
choices from a callable, so adding a judge needs no migration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models

from benchmark.fields import JSONField, JSONTextField, NulTextField
from benchmark.models import Job, Plan, Project, Response
from benchmark.versions import VersionRow

if TYPE_CHECKING:
    from review.judges.specs import JudgeSpec

__all__ = [
    "JudgeCall",
    "JudgeRun",
    "JudgeTemplateVersion",
    "JudgeWeights",
    "PlanJudgeCall",
]


def judge_choices() -> list[tuple[str, str]]:
    """The registered judges (``review.judges.specs``), read when asked: migrations record this
    function, not the list."""
    from review.judges.specs import judge_choices as registered

    return registered()


class JudgeRun(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="judge_runs")
    judge = models.CharField(max_length=20, choices=judge_choices)
    base_url = models.CharField(max_length=500)
    model = models.CharField(max_length=200)
    #: ``{template id: version}`` of every template the run's calls use.
    templates = JSONField(default=dict, blank=True)
    #: Which answers: ``{"models": [...]}`` (empty: every model answer of the project).
    selection = JSONField(default=dict, blank=True)
    #: LLM-I reward weights used (``{"rule", "llm", "mllm", "source"}``), recorded when the
    #: run is created; empty for the other judges (and runs from before weights were kept:
    #: their reports use the default, equal weights).
    weights = JSONField(default=dict, blank=True)
    job = models.ForeignKey(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="judge_runs"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.judge} with {self.model} (run #{self.pk})"

    @property
    def spec(self) -> JudgeSpec:
        """The run's judge (``review.judges.specs``)."""
        from review.judges.specs import judge_spec

        return judge_spec(self.judge)


class CallRecord(models.Model):
    """What is kept of one call to a judge model, whatever it judged (an answer or a plan):
    the messages (images as ``sha256:`` references), the raw output of each attempt, the
    parsed value, latency and tokens."""

    #: Which part of the report: a criterion ("r3"), an agent ("precision", "chief"...), or
    #: "plan" (a plan validity call).
    label = models.CharField(max_length=50)
    key = models.CharField(max_length=64, db_index=True)
    template_id = models.CharField(max_length=100)
    template_version = models.CharField(max_length=20)
    #: Kept as their JSON text (``JSONTextField``), as are the outputs and the parsed value:
    #: an answer or a reply with a NUL character in it is stored on PostgreSQL too (``jsonb``
    #: refuses ``\u0000``), and reads back exactly.
    messages = JSONTextField(default=list, blank=True)
    #: The raw output of each attempt, in order.
    outputs = JSONTextField(default=list, blank=True)
    parsed = JSONTextField(null=True, blank=True)
    ok = models.BooleanField(default=False)
    #: Why the call has no value: the last parse error, or the model error.
    error = NulTextField(blank=True)
    #: True when the endpoint gave no answer (then a later run calls again).
    transport_error = models.BooleanField(default=False)
    cached = models.BooleanField(default=False)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True


class JudgeCall(CallRecord):
    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="calls")
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="judge_calls")

    class Meta:
        ordering = ["response_id", "id"]
        constraints = [
            # Per answer: two answers with the same text to the same item make the same call.
            models.UniqueConstraint(
                fields=["run", "response", "key"], name="judge_call_unique_key"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.label} of response {self.response_id} ({'ok' if self.ok else 'failed'})"


class PlanJudgeCall(CallRecord):
    """One call of an m&m's plan validity run (judge ``mms-plan``) for one plan: the same
    record as a ``JudgeCall``, for a Plan instead of a Response (``review.judges.specs.mms_plan``).
    """

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="plan_calls")
    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="judge_calls")

    class Meta:
        ordering = ["plan_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "plan", "key"], name="plan_judge_call_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.label} of plan {self.plan_id} ({'ok' if self.ok else 'failed'})"


class JudgeTemplateVersion(VersionRow):
    """One version of a project's text for one judge template (``benchmark.judge_prompts.TEMPLATES``
    id). Every edit adds a version, nothing is overwritten; the highest ``number`` is the
    project's current text, and a project with no version uses the built-in template.

    ``is_default`` marks a "reset to default": the project follows the built-in template
    again (also when a later release changes it); ``system``/``user`` keep the built-in text
    of that moment, so the history and old runs can still show it. ``version`` is the text's
    content hash (``Template.version``), the one a run records; ``base_number`` is the
    version the editor was opened on (0: the built-in), for the history's "edited from"."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="judge_template_versions"
    )
    template_id = models.CharField(max_length=100)
    system = models.TextField(blank=True)
    user = models.TextField()
    version = models.CharField(max_length=20)
    is_default = models.BooleanField(default=False)
    base_number = models.PositiveIntegerField(
        default=0, help_text="The version the editor was opened on (0: the built-in text)."
    )
    note = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["project_id", "template_id", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "template_id", "number"], name="judge_template_version_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(number__gte=1), name="judge_template_version_number_gte_1"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.template_id} v{self.number} of project {self.project_id}"


class JudgeWeights(models.Model):
    """One version of a project's LLM-I reward weights, normalised to sum to 1; the highest
    ``number`` is current, and a project with none uses equal weights (1/3 each). ``preset``
    names where the values came from ("equal", "paper") when a preset was chosen."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="judge_weights")
    number = models.PositiveIntegerField()
    rule = models.FloatField()
    llm = models.FloatField()
    mllm = models.FloatField()
    preset = models.CharField(max_length=20, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["project", "number"], name="judge_weights_unique"),
            models.CheckConstraint(
                condition=models.Q(rule__gte=0, llm__gte=0, mllm__gte=0),
                name="judge_weights_non_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"weights v{self.number} of project {self.project_id}"
