"""A tool's output reads back from the record exactly as the provider gave it, on SQLite and
on PostgreSQL alike: the keys in their order (``jsonb`` would sort them, shorter first),
``NaN`` and NUL characters kept. A protocol that prints an output as it comes (here the test
protocol's ``json.dumps(result.output)``) sends the model the same text when the run is
replayed or taken up again from the record, so the model calls are found in the record.

Run these on PostgreSQL too (``DATABASE_URL=postgres://...``): there they failed before tool
records were kept as text (the replay missed every model call after a tool call)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import pytest

from benchmark.evaluation.base import EvalItem, EvalSettings, Outcome, Status, ToolLayer
from benchmark.models import Item, Project
from review.evaluation import services
from review.evaluation.chat import ItemCalls
from review.evaluation.models import EvaluationCall, EvaluationResult, EvaluationRun, ToolCallRecord
from review.evaluation.records import ItemTools, items_records_load, items_records_store
from tests import evaluation_protocol
from tests.llm_server import FakeModelServer

pytestmark = pytest.mark.django_db

#: Keys in an order no database sorts them in: longest first, then not alphabetical.
UNSORTED = ["meaning", "zz", "q", "a"]


class Unsorted(evaluation_protocol.Lookup):
    """``lookup`` answering an object whose keys are in ``UNSORTED`` order."""

    def call(self, name: str, arguments: Any) -> Any:
        result = super().call(name, arguments)
        q = result.output["q"]
        output = {"meaning": result.output["meaning"], "zz": [{"y": 1, "x": 2}], "q": q, "a": 0}
        return type(result)(output=output)


@pytest.fixture
def unsorted(eval_project: Project, settings: Any, monkeypatch: Any) -> Unsorted:
    provider = Unsorted({"apple": "a fruit", "kiwi": "a fruit"})
    monkeypatch.setattr(evaluation_protocol, "LOOKUP_PROVIDER", provider)
    return provider


def _run(project: Project, **kwargs: Any) -> EvaluationRun:
    run, jobs = services.evaluation_run_create(project=project, user=None, **kwargs)
    return services.evaluation_run_execute(run=run, jobs=jobs)


def _tool_texts(run: EvaluationRun) -> dict[str, list[str]]:
    """What the model read of each tool call, per item (from the stored traces)."""
    return {
        r.item.external_id: [m["content"] for m in r.trace if m.get("role") == "tool"]
        for r in EvaluationResult.objects.filter(run=run).select_related("item")
    }


def test_a_tool_output_reads_back_with_its_keys_in_order(
    eval_project: Project, eval_server: FakeModelServer, unsorted: Unsorted
) -> None:
    _run(eval_project)
    record = ToolCallRecord.objects.get(item__external_id="apple")
    assert list(record.response) == UNSORTED
    assert list(record.response["zz"][0]) == ["y", "x"]
    assert list(record.request) == ["item", "name", "arguments"]
    apple = Item.objects.get(project=eval_project, external_id="apple")
    _, tools = items_records_load(project_id=eval_project.pk, item_ids=[apple.pk])[apple.pk]
    (loaded,) = tools.known.values()
    assert json.dumps(loaded.output) == json.dumps(
        {"meaning": "a fruit", "zz": [{"y": 1, "x": 2}], "q": "apple", "a": 0}
    )


def test_a_replay_sends_the_model_what_the_recorded_run_sent(
    eval_project: Project, eval_server: FakeModelServer, unsorted: Unsorted
) -> None:
    recorded = _run(eval_project)
    asked, looked_up = eval_server.count, unsorted.calls
    assert (asked, looked_up) == (6, 3)
    replayed = _run(eval_project, replay=True)
    # Every model call and tool call answered from the record: nothing asked again.
    assert (eval_server.count, unsorted.calls) == (asked, looked_up)
    statuses = dict(
        EvaluationResult.objects.filter(run=replayed).values_list("item__external_id", "status")
    )
    errors = list(EvaluationResult.objects.filter(run=replayed).values_list("error", flat=True))
    assert statuses == {"apple": Status.OK, "pear": Status.OK, "kiwi": Status.OK}, errors
    assert _tool_texts(replayed) == _tool_texts(recorded)
    assert replayed.summary == recorded.summary
    assert EvaluationCall.objects.filter(project=eval_project).count() == 6


def test_a_rerun_is_served_from_the_record_not_the_model(
    eval_project: Project, eval_server: FakeModelServer, unsorted: Unsorted
) -> None:
    """Not a replay: a second run of the same model finds each call in the record (a changed
    tool text would be a new request, asked of the model and paid for again)."""
    _run(eval_project)
    asked = eval_server.count
    _run(eval_project)
    assert eval_server.count == asked


def test_nan_and_nul_in_a_tool_output_are_kept(
    eval_project: Project, eval_server: FakeModelServer, monkeypatch: Any
) -> None:
    """A fetched page may hold a NUL character, a provider may give NaN: PostgreSQL's jsonb
    refuses both (the chunk's results could not be stored); the text column keeps them."""
    weird = evaluation_protocol.Lookup({"apple": "a\x00fruit", "kiwi": math.nan})
    monkeypatch.setattr(evaluation_protocol, "LOOKUP_PROVIDER", weird)
    apple = Item.objects.get(project=eval_project, external_id="apple")
    kiwi = Item.objects.get(project=eval_project, external_id="kiwi")
    run, _ = services.evaluation_run_create(project=eval_project, user=None)
    made = {}
    for item in (apple, kiwi):
        tools = ItemTools()
        ToolLayer([weird], records=tools).call(item.external_id, "lookup", {"q": item.query})
        made[item.pk] = tools
    items_records_store(
        run=run, endpoint="", items=[(pk, ItemCalls(), tools) for pk, tools in made.items()]
    )
    loaded = items_records_load(project_id=eval_project.pk, item_ids=[apple.pk, kiwi.pk])
    (apple_record,) = loaded[apple.pk][1].known.values()
    (kiwi_record,) = loaded[kiwi.pk][1].known.values()
    assert apple_record.output == {"q": "apple", "meaning": "a\x00fruit"}
    assert math.isnan(kiwi_record.output["meaning"])


class RawText(evaluation_protocol.ExactMatch):
    """The test protocol, but the model reads a tool's output as the provider wrote it (as
    Agentic-MME shows a fetched page's text), not as JSON."""

    def run_item(
        self,
        item: EvalItem,
        *,
        settings: EvalSettings,
        chat: Any,
        tools: ToolLayer,
        truth: Mapping[str, Any] | None = None,
    ) -> Outcome:
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": [{"type": "text", "text": str(item.record["query"])}]}
        ]
        outcome = Outcome(item=item.id, status=Status.OK, trace=[messages[0]])
        reply = chat(messages, tools=[evaluation_protocol.LOOKUP])
        outcome.count(reply)
        messages.append(reply.assistant_message())
        for call in reply.tool_calls:
            outcome.tool_calls += 1
            text = tools.call(item.id, call.name, call.parsed()).output["meaning"]
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
        reply = chat(messages, tools=[evaluation_protocol.LOOKUP])
        outcome.count(reply)
        outcome.trace = messages
        outcome.output = reply.text
        return outcome


RAW = RawText()


def test_a_tool_text_with_a_nul_character_is_stored_and_replayed(
    eval_project: Project, eval_server: FakeModelServer, monkeypatch: Any
) -> None:
    """A page's text with a NUL character in it, shown to the model as it is: on PostgreSQL
    jsonb refused the model call's messages and the result's trace, so the chunk's results
    could never be stored (taken again, resumed: the same failure each time)."""
    evaluation_protocol.install(monkeypatch, "atp", f"{__name__}.RAW")
    monkeypatch.setattr(
        evaluation_protocol,
        "LOOKUP_PROVIDER",
        evaluation_protocol.Lookup({"apple": "a\x00fruit", "kiwi": "a fruit"}),
    )

    def answer(body: dict[str, Any]) -> Any:
        last = body["messages"][-1]
        if last["role"] == "tool":  # the model reads past the NUL
            return last["content"].replace("\x00", " ")
        query = body["messages"][0]["content"][0]["text"]
        return {"content": None, "tool_calls": [{"name": "lookup", "arguments": {"q": query}}]}

    eval_server.respond = answer
    recorded = _run(eval_project)
    results = dict(
        EvaluationResult.objects.filter(run=recorded).values_list("item__external_id", "output")
    )
    assert results == {"apple": "a fruit", "pear": "unknown", "kiwi": "a fruit"}
    assert _tool_texts(recorded)["apple"] == ["a\x00fruit"]
    call = EvaluationCall.objects.filter(item__external_id="apple").order_by("id").last()
    assert call is not None and call.messages[-1]["content"] == "a\x00fruit"
    asked = eval_server.count
    replayed = _run(eval_project, replay=True)
    assert eval_server.count == asked
    assert _tool_texts(replayed) == _tool_texts(recorded)
