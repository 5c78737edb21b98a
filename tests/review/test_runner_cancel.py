"""Cancelling the other model-calling runners (issue 10): the m&m's plan validity judge and the
Agentic-MME oracle test stop at their next progress report, send nothing they had queued but
not started (the pool is shut down with ``cancel_futures``), are recorded as cancelled, and a
resumed run makes only what they had not finished.

To make "queued but not started" certain, each test holds the endpoint's answer to the call in
flight until the runner shuts its pool down (``GatedPool``): whatever is still queued then is
either cancelled (the runner does it right) or sent (it does not)."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from benchmark.jobs import services as job_services
from benchmark.models import Item, Job, JobStatus, Project
from review.judges import services as judge_services
from review.judges.models import PlanJudgeCall
from review.oracle import services as oracle
from review.oracle.models import OracleOutcome
from tests.factories import (
    AgreementJobFactory,
    AnswerScoringJobFactory,
    ImportJobFactory,
    ItemFactory,
    JobFactory,
    JudgeRunFactory,
    JudgingJobFactory,
    JudgmentTaskFactory,
    ModelCallJobFactory,
    OracleRunFactory,
    RescoringJobFactory,
    RunScoringJobFactory,
    RunSetFactory,
    UserFactory,
)
from tests.llm_server import FakeModelServer, point_at
from tests.review import test_judge_sources as plans
from tests.review import test_oracle as oracle_tests

pytestmark = pytest.mark.django_db

# The m&m's project with five plans, and the oracle's world of three items.
project = plans.project
items = plans.items
server = plans.server
oracle_server = oracle_tests.server
world = oracle_tests.world


def gated_pool(monkeypatch: pytest.MonkeyPatch, module: Any, gate: threading.Event) -> None:
    """``module``'s thread pool opens ``gate`` once it is shut down: first as the runner asked
    (with or without cancelling the queue), then waiting for the threads as ``with`` does."""

    class GatedPool(ThreadPoolExecutor):
        def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
            super().shutdown(wait=False, cancel_futures=cancel_futures)
            gate.set()
            if wait:
                super().shutdown(wait=True)

    monkeypatch.setattr(module, "ThreadPoolExecutor", GatedPool)


def hold_after(server: FakeModelServer, n: int, gate: threading.Event) -> None:
    """The endpoint answers the first ``n`` requests at once and holds the others until
    ``gate`` opens."""
    reply = server._reply
    answered: list[str] = []

    def holding(path: str, body: dict[str, Any]) -> Any:
        if len(answered) >= n:
            gate.wait(10)
        answered.append(path)
        return reply(path, body)

    server._reply = holding  # type: ignore[method-assign]


def cancel_on_report(monkeypatch: pytest.MonkeyPatch, nth: int, user: Any) -> None:
    """Someone presses Cancel just before the runner's ``nth`` progress report."""
    report = job_services.JobProgress.__call__
    seen: list[int] = []

    def reporting(self: job_services.JobProgress, **kw: Any) -> None:
        seen.append(kw.get("progress", 0))
        if len(seen) == nth:
            Job.objects.filter(pk=self.job_id).update(
                cancel_requested_at=timezone.now(), cancel_requested_by=user
            )
        report(self, **kw)

    monkeypatch.setattr(job_services.JobProgress, "__call__", reporting)


def test_a_cancelled_plan_judge_run_sends_nothing_queued_and_resumes(
    project: Project,
    items: list[Item],
    server: plans.PlanServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    who = UserFactory(username="plan-canceller")
    run, job = judge_services.judge_run_create(
        project=project, user=None, judge="mms-plan", workers=1
    )
    gate = threading.Event()
    # The plan judge runs through the one judge runner: one call in flight at a time, and a
    # report after every stored call.
    gated_pool(monkeypatch, judge_services, gate)
    monkeypatch.setattr(judge_services, "FLUSH_ROWS", 1)
    monkeypatch.setattr(judge_services, "WINDOW_PER_WORKER", 1)
    hold_after(server, 1, gate)
    # Report 1: the first plan is stored; the four others are not handed out yet.
    cancel_on_report(monkeypatch, 1, who)
    job = judge_services.judge_run_execute(job=job)
    monkeypatch.undo()
    assert job.status == JobStatus.FAILED and job.cancelled, job.error
    assert job.error == "Cancelled by plan-canceller."
    assert PlanJudgeCall.objects.filter(run=run).count() == 1
    assert server.count <= 2  # the three queued plans were never sent

    sent = server.count
    resumed = judge_services.judge_run_execute(
        job=judge_services.judge_run_resume(run=run, user=None, workers=1)
    )
    assert resumed.status == JobStatus.SUCCEEDED, resumed.error
    calls = resumed.result["summary"]["calls"]
    assert (calls["reused"], calls["made"]) == (1, 4)
    assert server.count - sent == 5  # four plans, i4's asked twice (it never parses)
    assert resumed.result["summary"]["valid"] == pytest.approx(50.0)


def test_a_cancelled_oracle_run_sends_nothing_queued_and_resumes(
    world: oracle_tests.World,
    oracle_server: oracle_tests.ScriptedServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    point_at(world.project, oracle_server, max_retries=0, concurrency=1)
    who = UserFactory(username="oracle-canceller")
    run, job = oracle.oracle_run_create(project=world.project, user=None)
    gate = threading.Event()
    gated_pool(monkeypatch, oracle, gate)
    hold_after(oracle_server, 0, gate)
    # One worker, batches of two. Report 1: before the pool; report 2: the first batch is
    # submitted (its first item with the endpoint, held; the second queued).
    cancel_on_report(monkeypatch, 2, who)
    job = oracle.oracle_run_execute(job=job)
    monkeypatch.undo()
    assert job.status == JobStatus.FAILED and job.cancelled, job.error
    assert job.error == "Cancelled by oracle-canceller."
    assert not run.results.exists()  # the held answer came after the runner stopped
    assert oracle_server.count <= 1  # the queued item was never sent

    sent = oracle_server.count
    resumed = oracle.oracle_run_execute(job=oracle.oracle_run_resume(run=run, user=None))
    assert resumed.status == JobStatus.SUCCEEDED, resumed.error
    assert oracle_server.count - sent == 3
    assert run.results.filter(outcome=OracleOutcome.SOLVED).count() == 2


# --------------------------------------------------------------------------- result fragments


def _kinds(project: Project, user: Any) -> dict[str, Job]:
    """A job of every kind that has its own result fragment, in ``project``."""
    common = {"project": project, "created_by": user}
    return {
        "import": ImportJobFactory(**common),
        "model_call": ModelCallJobFactory(
            item=ItemFactory(project=project), created_by=user, total=1
        ),
        "score_answers": AnswerScoringJobFactory(**common),
        "score_runs": RunScoringJobFactory(**common),
        "rescore_runs": RescoringJobFactory(
            run_set=RunSetFactory(project=project), created_by=user
        ),
        "agreement": AgreementJobFactory(
            task=JudgmentTaskFactory(project=project), created_by=user
        ),
        "judge": JudgingJobFactory(run=JudgeRunFactory(project=project), created_by=user),
        "oracle": JobFactory(
            kind="oracle",
            params={"run_id": OracleRunFactory(project=project).pk},
            total=4,
            **common,
        ),
    }


def visible(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_every_result_fragment_says_cancelled_not_failed(
    users: dict[str, Any], clients: dict[str, Client]
) -> None:
    project = users["admin"].memberships.first().project
    for kind, job in _kinds(project, users["admin"]).items():
        Job.objects.filter(pk=job.pk).update(
            status=JobStatus.FAILED,
            progress=min(job.total, 1),
            error="Cancelled by admin-user.",
            result={"cancelled": True, "cancelled_by": "admin-user"},
        )
        path = reverse("benchmark:job_detail", kwargs={"pk": job.pk})
        card = clients["admin"].get(path, HTTP_HX_REQUEST="true").content.decode()
        assert "data-job-cancelled" in card and "data-cancelled" in card, kind
        text = visible(card)
        assert " was cancelled" in text and "Cancelled by admin-user." in text, (kind, text)
        for wrong in ("failed", "did not finish", "not scored", "not computed", "Fix the"):
            assert wrong not in text, (kind, wrong, text)
        assert "data-worker-lost" not in card, kind


def test_lists_of_jobs_show_cancelled(users: dict[str, Any], clients: dict[str, Client]) -> None:
    project = users["admin"].memberships.first().project
    run = JudgeRunFactory(project=project, created_by=users["reviewer"])
    run.job = JudgingJobFactory(
        run=run, status=JobStatus.FAILED, result={"cancelled": True}, error="Cancelled by x."
    )
    run.save(update_fields=["job"])
    page = clients["reviewer"].get(reverse("review:judge_runs", args=[project.pk]))
    row = re.search(rf'<tr data-run="{run.pk}">.*?</tr>', page.content.decode(), re.S)
    assert row and ">Cancelled<" in row.group(0) and "Failed" not in row.group(0)
