"""Cancelling a judge run (issue 10): the runner stops at its next progress report and sends
no more calls, the job is recorded as cancelled, and resuming the run later makes only the
calls it had not finished; a run cancelled before it started never calls the model."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.utils import timezone

from benchmark.jobs import services as job_services
from benchmark.models import Job, JobStatus, Project
from review.judges import services as judge_services
from review.judges.models import JudgeCall
from tests.factories import UserFactory
from tests.review import test_judge_runs as base

pytestmark = pytest.mark.django_db

# The fake judge server and the LLM-I project of the judge-run tests.
server = base.server
llmi = base.llmi


def all_parse(system: str, user: str) -> str:
    return "Text: 4\nImage: 2"


def cancel_at(monkeypatch: pytest.MonkeyPatch, progress: int, user: Any) -> None:
    """Someone presses Cancel just before the runner reports ``progress`` calls done (the
    runner reports after every stored call here, not once a second)."""
    monkeypatch.setattr(judge_services, "FLUSH_ROWS", 1)
    # One call in flight at a time: each report counts exactly one more finished call.
    monkeypatch.setattr(judge_services, "WINDOW_PER_WORKER", 1)
    report = job_services.JobProgress.__call__

    def reporting(self: job_services.JobProgress, **kw: Any) -> None:
        if kw.get("progress") == progress:
            Job.objects.filter(pk=self.job_id).update(
                cancel_requested_at=timezone.now(), cancel_requested_by=user
            )
        report(self, **kw)

    monkeypatch.setattr(job_services.JobProgress, "__call__", reporting)


def test_a_cancelled_run_stops_and_resumes_without_repeating_calls(
    llmi: Project, server: base.ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.script = all_parse
    who = UserFactory(username="canceller")
    run, job = judge_services.judge_run_create(project=llmi, user=None, judge="llmi-llm", workers=1)
    cancel_at(monkeypatch, 2, who)
    job = judge_services.judge_run_execute(job=job)
    monkeypatch.undo()
    assert job.status == JobStatus.FAILED and job.cancelled, job.error
    assert job.error == "Cancelled by canceller."
    assert (job.progress, job.total) == (1, 4)  # the report of the second call raised
    stored = set(JudgeCall.objects.filter(run=run).values_list("key", flat=True))
    assert len(stored) == 2  # saved before the report that raised
    sent_before = server.count

    resumed = judge_services.judge_run_execute(
        job=judge_services.judge_run_resume(run=run, user=None, workers=1)
    )
    assert resumed.status == JobStatus.SUCCEEDED, resumed.error
    calls = resumed.result["summary"]["calls"]
    assert (calls["reused"], calls["made"], calls["cached"]) == (2, 2, 0)
    assert sent_before == 2  # no third call was sent: the report before it raised
    assert server.count == 4  # and the resumed run made only the two calls never stored
    assert JudgeCall.objects.filter(run=run).count() == 4
    assert resumed.result["summary"]["models"]["alpha"]["r_llm"] == 0.5


def test_a_run_cancelled_before_it_starts_never_calls_the_model(
    llmi: Project, server: base.ScriptedServer
) -> None:
    server.script = all_parse
    admin = UserFactory(username="boss")
    run, job = judge_services.judge_run_create(project=llmi, user=None, judge="llmi-llm")
    job.created_by = admin
    job.save(update_fields=["created_by"])
    job_services.job_cancel(job=job, user=admin)
    job = judge_services.judge_run_execute(job=job)
    assert job.cancelled and job.error == "Cancelled by boss before it started."
    assert server.count == 0 and not JudgeCall.objects.filter(run=run).exists()
    resumed = judge_services.judge_run_execute(
        job=judge_services.judge_run_resume(run=run, user=None)
    )
    assert resumed.status == JobStatus.SUCCEEDED and server.count == 4


def test_the_runner_stops_sending_when_progress_raises(
    llmi: Project, server: base.ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten calls queued on one worker; the answer to the second is held until the runner has
    been told to stop (after the first is saved): the eight others are never sent."""
    for n in range(3, 13):
        base.ItemFactory(project=llmi, external_id=f"q{n}", query=f"Explain {n}")
    judge_services.answers_import(
        project=llmi,
        files=base.files(
            {"gamma": [{"trace_id": f"q{n}", "answer": f"G {n}"} for n in range(3, 13)]}
        ),
    )
    run, job = judge_services.judge_run_create(
        project=llmi, user=None, judge="llmi-llm", models=["gamma"], workers=1
    )
    gate = threading.Event()
    answered = []

    def script(system: str, user: str) -> str:
        if answered:
            gate.wait(10)
        answered.append(user)
        return "Text: 4\nImage: 2"

    server.script = script
    monkeypatch.setattr(judge_services, "FLUSH_ROWS", 1)  # a report after every stored call
    report = job_services.JobProgress.__call__

    def reporting(self: job_services.JobProgress, **kw: Any) -> None:
        if kw.get("progress") != 1:
            report(self, **kw)
            return
        Job.objects.filter(pk=self.job_id).update(cancel_requested_at=timezone.now())
        try:
            report(self, **kw)
        finally:
            gate.set()  # let the call in flight finish (the pool waits for it)

    monkeypatch.setattr(job_services.JobProgress, "__call__", reporting)
    job = judge_services.judge_run_execute(job=job)
    assert job.cancelled and job.error == "Cancelled by someone."
    assert JudgeCall.objects.filter(run=run).count() == 1
    # The first call, the one in flight, and at most one more the worker took meanwhile.
    assert server.count <= 3
