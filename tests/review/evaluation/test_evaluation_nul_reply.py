"""A model reply with a NUL character (``\\x00``) in its text or in a tool call's arguments is
stored the same on PostgreSQL (whose text and ``jsonb`` columns refuse NUL) as on SQLite, and
reads back exactly: the model call's record (answered from it in a replay), the item's output
and run file, and the answer kept as the model's. Run on both databases."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmark.evaluation.base import Status
from benchmark.models import Origin, Project, Response
from review.evaluation import services
from review.evaluation.models import EvaluationCall, EvaluationResult, EvaluationRun
from review.evaluation.records import files_read
from tests.llm_server import MODEL, FakeModelServer

pytestmark = pytest.mark.django_db

REPLY = "a fruit\x00 (or \\u0000 a berry)"
QUERY = "ap\x00ple"


def nul_model(body: dict[str, Any]) -> Any:
    """Look the word up with a NUL in the argument, then answer with a NUL in the text."""
    if body["messages"][-1]["role"] == "tool":
        return REPLY
    return {"content": None, "tool_calls": [{"name": "lookup", "arguments": {"q": QUERY}}]}


def _evaluate(project: Project, server: FakeModelServer, *, replay: bool = False) -> EvaluationRun:
    run, jobs = services.evaluation_run_create(
        project=project, user=None, model=MODEL, base_url=server.url, items="all", replay=replay
    )
    return services.evaluation_run_execute(run=run, jobs=jobs)


def test_a_reply_with_a_nul_is_kept_exactly(
    eval_project: Project, eval_server: FakeModelServer
) -> None:
    eval_server.respond = nul_model
    run = _evaluate(eval_project, eval_server)
    results = list(EvaluationResult.objects.filter(run=run).select_related("item"))
    assert [r.error for r in results if r.status != Status.OK] == []
    assert {r.output for r in results} == {REPLY}
    apple = next(r for r in results if r.item.external_id == "apple")
    assert files_read(apple.files)["answer.txt"] == REPLY.encode()
    calls = EvaluationCall.objects.filter(item=apple.item).order_by("id")
    assert [c.answer for c in calls] == ["", REPLY]
    assert json.loads(calls[0].tool_calls[0]["arguments"]) == {"q": QUERY}
    answer = Response.objects.get(item=apple.item, origin=Origin.MODEL, model_name=MODEL)
    assert answer.text == REPLY
    # A replay answers every call from the record: the same reply, no model asked.
    asked = eval_server.count
    again = _evaluate(eval_project, eval_server, replay=True)
    assert eval_server.count == asked
    replayed = EvaluationResult.objects.filter(run=again)
    assert {(r.status, r.output) for r in replayed} == {(Status.OK, REPLY)}


def test_the_judges_judge_an_answer_with_a_nul(
    eval_project: Project, eval_server: FakeModelServer
) -> None:
    """The answer judges' calls of an answer with a NUL (its text is in their prompts) and a
    judge's reply with one are stored, and the judge run reads them back exactly."""
    from review.evaluation import judges
    from review.judges import services as judge_services
    from review.judges.models import JudgeCall
    from tests.judge_server import ScriptedServer

    eval_server.respond = nul_model
    run = _evaluate(eval_project, eval_server)
    judge_server = ScriptedServer()
    judge_server.script = staticmethod(  # type: ignore[assignment]
        lambda system, user, model: (
            json.dumps({"missed": [], "why": "odd\x00"})
            if system.startswith("You are the Recall")
            else "I think it is fine.\x00"
        )
    )
    judge_server.start()
    try:
        jobs = judges.evaluation_judge_start(
            run=run, user=None, base_url=judge_server.url, model="judge-m", enqueue=False
        )
        for job in jobs:
            done = judge_services.judge_run_execute(job=job)
            assert done.status == "succeeded", done.error
    finally:
        judge_server.stop()
    calls = list(JudgeCall.objects.filter(run__project=eval_project))
    assert calls and any(REPLY in text for c in calls for text in _texts(c.messages))
    assert any("fine.\x00" in text for c in calls for text in c.outputs)


def _texts(value: Any) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [text for part in value for text in _texts(part)]
    return []
