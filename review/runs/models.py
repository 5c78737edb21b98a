"""What reviewers decide: every adjudication is kept, newest last."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from benchmark.fields import JSONField
from benchmark.models import Item

# --------------------------------------------------------------------------- agent runs


class RunSet(models.Model):
    """One upload of agent run folders for a trajectory (Agentic-MME) project, scored as a Job.
    The rows of its runs are written all at once when the whole upload checks out."""

    project = models.ForeignKey(
        "benchmark.Project", on_delete=models.CASCADE, related_name="run_sets"
    )
    name = models.CharField(max_length=200, help_text="Model or upload name.")
    filename = models.CharField(max_length=255, blank=True)
    job = models.OneToOneField(
        "benchmark.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="run_set"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "-created_at", "-id"]

    def __str__(self) -> str:
        return self.name


class AgentRun(models.Model):
    """One model run of one item: the logged events (``tool_use_list.json``), the answer
    (``model_answer.txt``), ``run_meta.json`` if any, the images it produced (by sha256), and
    its score (``RunScore.to_dict()``, with people's visual verdicts applied)."""

    run_set = models.ForeignKey(RunSet, on_delete=models.CASCADE, related_name="runs")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="agent_runs")
    folder = models.CharField(max_length=500, help_text="The run folder, relative to the upload.")
    model_name = models.CharField(max_length=200, blank=True)
    events = JSONField(default=list, blank=True)
    events_raw = models.TextField(blank=True, help_text="The exact tool_use_list.json text.")
    final_answer = models.TextField(blank=True)
    meta = JSONField(default=dict, blank=True)
    # [{"sha256", "name", "position"}] in the order the scorer sees them.
    images = JSONField(default=list, blank=True)
    score = JSONField(default=dict, blank=True)
    level = models.PositiveSmallIntegerField(null=True, blank=True)
    acc = models.BooleanField(default=False)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["run_set", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run_set", "folder"], name="agentrun_unique_folder"),
        ]
        indexes = [models.Index(fields=["run_set", "model_name", "position"])]

    def __str__(self) -> str:
        return self.folder


class VisualVerdict(models.Model):
    """A person's answer to a visual checkpoint of a run: does any produced image show the
    required detail? Every answer is kept; the newest one counts."""

    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="visual_verdicts")
    checkpoint_id = models.CharField(max_length=100)
    passed = models.BooleanField()
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "checkpoint_id", "id"]
        indexes = [models.Index(fields=["run", "checkpoint_id", "-id"])]


class SearchVerdict(models.Model):
    """A person's answer to a search checkpoint of a run: did the agent's search retrieve the
    expected finding (PASS / FAIL), judged on what the S judge sees. Every answer is kept;
    each reviewer's newest one counts. It stands beside the S judge's verdict (calibration)
    and does not change the run's S: a search check's match also decides which later calls
    the next checkpoints may use, so the judge's verdict stays the score's."""

    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="search_verdicts")
    checkpoint_id = models.CharField(max_length=100)
    passed = models.BooleanField()
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "checkpoint_id", "id"]
        indexes = [models.Index(fields=["run", "checkpoint_id", "-id"])]


class FailureLabel(models.Model):
    """A reviewer's label of a failed run with one of the seven App. E failure modes. Every
    label is kept; each reviewer's newest one counts."""

    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="failure_labels")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    mode = models.CharField(max_length=40)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "reviewer", "id"]
        indexes = [models.Index(fields=["run", "reviewer", "-id"])]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(
                    mode__in=[
                        "missing_search_tools",
                        "bad_search_query",
                        "unfaithful_visual_tool_use",
                        "missing_visual_tool_use",
                        "overthinking_collapse",
                        "tool_misexecution",
                        "postvisual_perception_deficit",
                    ]
                ),
                name="failurelabel_known_mode",
            ),
        ]
