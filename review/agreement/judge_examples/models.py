"""Corrections that became worked examples of a judge (issue 26).

An ``ExampleSet`` is one "Add as worked examples": which judge, on which people's task, from
which judge run's verdicts (``source_run``, the version "before"), the template versions it
created (``templates``: ``{template id: version}`` the new version's runs use), and later the
held-back run of the new version (``held_back_run``) with its held-back units. Each
``WorkedExampleCase`` is one unit written into the prompt: the people's answer, the judge's,
the reason and the input summary as written. Example units are held back forever: no
held-back comparison of this judge in this project ever counts them.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.judgment_tasks.models import JudgmentTask
from benchmark.fields import JSONField
from benchmark.models import Project
from review.judges.models import JudgeRun, JudgeTemplateVersion

__all__ = ["ExampleSet", "ReportCorrection", "WorkedExampleCase"]


class ExampleSet(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="example_sets")
    judge = models.CharField(max_length=20)
    #: A people's task and the judge run it was rated by; or, for a judge that answers checks
    #: while runs are scored (the Agentic-MME S and V judges), the upload (``run_set``) whose
    #: reviewers' answers made the correction cases.
    task = models.ForeignKey(
        JudgmentTask, null=True, blank=True, on_delete=models.CASCADE, related_name="example_sets"
    )
    source_run = models.ForeignKey(
        JudgeRun, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    run_set = models.ForeignKey(
        "review.RunSet",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="example_sets",
    )
    #: ``{template id: version}`` of every template of the judge in the new version.
    templates = JSONField(default=dict, blank=True)
    template_versions = models.ManyToManyField(JudgeTemplateVersion, related_name="example_sets")
    held_back_run = models.ForeignKey(
        JudgeRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    #: The units the held-back run judges: people judged them, none is an example.
    held_back = JSONField(default=list, blank=True)
    #: A run-set source: the job that re-asked the judge on the held-back checks, and the
    #: values it compared (``{"before": {unit: 1/0/None}, "after": {...}}``).
    held_back_job = models.ForeignKey(
        "benchmark.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    held_back_values = JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"worked examples #{self.pk} of {self.judge} in project {self.project_id}"

    @property
    def people_task(self) -> JudgmentTask:
        """The people's task of a set made from one (ValueError for an upload's set)."""
        if self.task is None:
            raise ValueError(f"set #{self.pk} is made from an upload's checks, not a task")
        return self.task

    @property
    def judge_run(self) -> JudgeRun:
        """The judge run a set made from a task compared (ValueError for an upload's set)."""
        if self.source_run is None:
            raise ValueError(f"set #{self.pk} is made from an upload's checks, not a judge run")
        return self.source_run


class WorkedExampleCase(models.Model):
    example_set = models.ForeignKey(ExampleSet, on_delete=models.CASCADE, related_name="cases")
    unit = models.CharField(max_length=100)
    people = JSONField(null=True, blank=True)
    judge_value = JSONField(null=True, blank=True)
    summary = models.TextField(blank=True)
    #: People's answer as the judge is asked to write it (a corrected report: the agent's
    #: whole output, so text of any length).
    answer = models.TextField()
    reason = models.TextField(blank=True)
    #: What made it a correction: "override" (a reviewer's decision) or "majority".
    source = models.CharField(max_length=20)

    class Meta:
        ordering = ["example_set_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["example_set", "unit"], name="worked_example_unique")
        ]

    def __str__(self) -> str:
        return f"example {self.unit} of set {self.example_set_id}"


class ReportCorrection(models.Model):
    """What an agent should have said in one report people rated in a "Rate the judge" task
    (``unit``: ``response:<answer id>:<agent label>``): the reviewer's text in the agent's own
    output format (validated by the judge's parser) and the verdict it gives. Every edit is a
    new row (``version`` 1, 2, ...); the newest counts. Nothing is overwritten."""

    task = models.ForeignKey(
        JudgmentTask, on_delete=models.CASCADE, related_name="report_corrections"
    )
    unit = models.CharField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    text = models.TextField()
    verdict = models.CharField(max_length=300)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task_id", "unit", "version"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "unit", "version"], name="report_correction_version_unique"
            )
        ]

    def __str__(self) -> str:
        return f"correction v{self.version} of {self.unit} in task {self.task_id}"
