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
