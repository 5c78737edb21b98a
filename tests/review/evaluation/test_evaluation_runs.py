"""Evaluation runs as jobs: every item through the protocol with worker threads, results,
model calls and tool records stored, the cache answering a second run, resume, chunks,
an item's error staying that item's, cancel, and the summary with its intervals."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmark.evaluation.base import Outcome, Status
from benchmark.exceptions import ValidationFailed
from benchmark.jobs.services import JobCancelled
from benchmark.models import Item, Job, JobStatus, Project
from review.evaluation import services
from review.evaluation.models import (
    EvaluationCall,
    EvaluationResult,
    EvaluationRun,
    ToolCallRecord,
)
from tests import evaluation_protocol
from tests.factories import ItemFactory, ProjectFactory
from tests.llm_server import MODEL, FakeModelServer

pytestmark = pytest.mark.django_db


def _run(project: Project, **kwargs: Any) -> EvaluationRun:
    run, jobs = services.evaluation_run_create(project=project, user=None, **kwargs)
    return services.evaluation_run_execute(run=run, jobs=jobs)


def _results(run: EvaluationRun) -> dict[str, tuple[str, Any, dict[str, Any]]]:
    return {
        r.item.external_id: (r.status, r.output, r.scores)
        for r in EvaluationResult.objects.filter(run=run).select_related("item")
    }


def test_a_run_evaluates_every_item_and_records_calls_tools_and_figures(
    eval_project: Project, eval_server: FakeModelServer
) -> None:
    run = _run(eval_project, workers=3)
    assert _results(run) == {
        "apple": ("ok", "a fruit", {"correct": 1.0}),
        "pear": ("ok", "unknown", {"correct": 1.0}),
        "kiwi": ("ok", "a fruit", {"correct": 0.0}),
    }
    job = Job.objects.get(pk=run.job_ids[0])
    assert job.status == JobStatus.SUCCEEDED
    assert job.progress == 3 and "3 tool calls" in job.message
    assert run.model == MODEL and run.finished_at is not None
    assert run.summary["accuracy"] == pytest.approx(200 / 3)
    low, high = run.intervals["accuracy"]
    assert 0 <= low <= 200 / 3 <= high <= 100
    # Two model calls per item (the lookup, the answer), every one with the tool offered.
    assert eval_server.count == 6
    assert all(r.tool_names == ["lookup"] for r in eval_server.requests)
    assert EvaluationCall.objects.filter(run=run).count() == 6
    records = ToolCallRecord.objects.filter(project=eval_project)
    assert sorted(r.request["arguments"]["q"] for r in records) == ["apple", "kiwi", "pear"]
    result = EvaluationResult.objects.get(run=run, item__external_id="apple")
    assert result.model_calls == 2 and result.tool_calls == 1
    assert [step["role"] for step in result.trace] == ["user", "assistant", "tool", "assistant"]
    assert result.files == {"answer.txt": services.files_store({"x": b"a fruit"})["x"]}


def test_the_same_run_again_is_answered_from_the_record(
    eval_project: Project, eval_server: FakeModelServer
) -> None:
    first = _run(eval_project)
    asked = eval_server.count
    provider = evaluation_protocol.LOOKUP_PROVIDER
    looked_up = provider.calls
    second = _run(eval_project)
    assert eval_server.count == asked and provider.calls == looked_up
    assert _results(second) == _results(first)
    assert second.summary == first.summary and second.intervals == first.intervals


def test_a_resumed_run_skips_finished_items(
    eval_project: Project, eval_server: FakeModelServer
) -> None:
    run, jobs = services.evaluation_run_create(project=eval_project, user=None)
    apple = Item.objects.get(project=eval_project, external_id="apple")
    services.result_store(
        run=run,
        item_id=apple.pk,
        outcome=Outcome(item="apple", status=Status.OK, output="kept", scores={"correct": 0.0}),
        latency_ms=1,
    )
    services.evaluation_run_execute(run=run, jobs=jobs)
    assert eval_server.count == 4  # pear and kiwi only
    assert _results(run)["apple"][1] == "kept"


def test_an_items_error_is_that_items_not_the_runs(
    eval_project: Project, eval_server: FakeModelServer
) -> None:
    ItemFactory(
        project=eval_project, external_id="loop", query="loop", status="verified",
        raw=json.dumps({"query": "loop", "answer": "x"}),
    )  # fmt: skip
    run = _run(eval_project, settings={"max_rounds": 2})
    results = _results(run)
    assert results["loop"][0] == Status.ERROR
    assert (
        "no final answer in 2 rounds"
        in EvaluationResult.objects.get(run=run, item__external_id="loop").error
    )
    assert [results[w][0] for w in ("apple", "pear", "kiwi")] == ["ok"] * 3
    assert Job.objects.get(pk=run.job_ids[0]).status == JobStatus.SUCCEEDED
    assert run.summary["errors"] == 1


def test_a_large_run_is_split_into_chunk_jobs_with_one_summary(
    eval_project: Project, eval_server: FakeModelServer
) -> None:
    run, jobs = services.evaluation_run_create(project=eval_project, user=None, chunk_items=2)
    assert [len(j.params["items"]) for j in jobs] == [2, 1]
    services.evaluation_run_execute(run=run, jobs=jobs[:1])
    run.refresh_from_db()
    assert run.finished_at is None and EvaluationResult.objects.filter(run=run).count() == 2
    services.evaluation_run_execute(run=run, jobs=jobs[1:])
    assert run.finished_at is not None and run.summary["items"] == 3


def test_cancel_stops_handing_out_items_and_keeps_what_finished(
    eval_project: Project, eval_server: FakeModelServer
) -> None:
    run, jobs = services.evaluation_run_create(project=eval_project, user=None, workers=1)
    reports = []

    def progress(*, progress: int, total: int | None = None, message: str = "") -> None:
        reports.append(progress)
        if progress >= 1:
            raise JobCancelled(jobs[0].pk)

    services.PROGRESS_SECONDS = 0.0
    try:
        with pytest.raises(JobCancelled):
            services.evaluation_run_job(job=jobs[0], progress=progress)
    finally:
        services.PROGRESS_SECONDS = 0.5
    done = EvaluationResult.objects.filter(run=run).count()
    assert 1 <= done < 3
    run.refresh_from_db()
    assert run.finished_at is None


def test_bad_settings_and_kinds_without_a_protocol_are_refused_with_their_name(
    eval_project: Project, db: None, monkeypatch: Any
) -> None:
    with pytest.raises(ValidationFailed, match="max_rounds: must be between 1 and 100"):
        services.evaluation_run_create(project=eval_project, user=None, settings={"max_rounds": 0})
    with pytest.raises(ValidationFailed, match="mode: 'fast' is not one of atm, gen"):
        services.evaluation_run_create(project=eval_project, user=None, settings={"mode": "fast"})
    with pytest.raises(ValidationFailed, match="no release 'v9'"):
        services.evaluation_run_create(project=eval_project, user=None, items="release:v9")
    evaluation_protocol.install(monkeypatch, "mms", None)
    mms = ProjectFactory(kind="plans", data_format="mms")
    with pytest.raises(ValidationFailed, match="has no evaluation protocol yet"):
        services.evaluation_run_create(project=mms, user=None)


def test_text_outputs_become_the_models_answers_for_judges_and_human_evaluation(
    eval_project: Project, eval_server: FakeModelServer
) -> None:
    from benchmark.models import Origin, Response

    _run(eval_project)
    answers = {
        r.item.external_id: (r.text, r.origin, r.model_name)
        for r in Response.objects.filter(item__project=eval_project, key=f"model:{MODEL}")
    }
    assert answers == {
        "apple": ("a fruit", Origin.MODEL, MODEL),
        "pear": ("unknown", Origin.MODEL, MODEL),
        "kiwi": ("a fruit", Origin.MODEL, MODEL),
    }


def test_two_chunks_completing_the_run_together_both_store_its_answers_without_error(
    eval_project: Project, eval_server: FakeModelServer, monkeypatch: Any
) -> None:
    from benchmark.models import Response

    run = _run(eval_project)
    assert Response.objects.filter(item__project=eval_project).count() == 3
    # The other chunk's process looked before this one's answers were committed: it sees
    # none, and stores all three again.
    monkeypatch.setattr(Response.objects, "filter", lambda **kw: Response.objects.none())
    assert services.answers_store(run=run) == 3
    monkeypatch.undo()
    assert Response.objects.filter(item__project=eval_project).count() == 3


def test_a_plan_kind_gets_its_projects_toolset_and_a_tool_model_in_extra(
    model_server: FakeModelServer,
) -> None:
    from benchmark.models import Toolset
    from review.evaluation.chat import ToolChat
    from tests.factories import ToolFactory
    from tests.llm_server import point_at

    toolset = Toolset.objects.create(name="plan tools")
    ToolFactory(toolset=toolset, name="image captioning", description="Says what is in it.")
    mms = ProjectFactory(kind="plans", data_format="mms", toolset=toolset)
    assert "tool_chat" not in services.settings_extra(mms)
    point_at(mms, model_server)
    extra = services.settings_extra(mms)
    assert extra["tools"]["tools"]["image captioning"]["description"] == "Says what is in it."
    assert isinstance(extra["tool_chat"], ToolChat)
    reply = extra["tool_chat"]([{"role": "user", "content": "caption this"}])
    assert reply.text == model_server.answer
    # Other kinds get nothing extra.
    assert services.settings_extra(ProjectFactory()) == {}
