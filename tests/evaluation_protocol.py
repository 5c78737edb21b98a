"""A small evaluation protocol for tests (``benchmark.evaluation.base.EvalProtocol``): the
item's query (and its images) to the model with one tool, ``lookup``, answered through the
tool layer; the model's last text is the output, scored by exact match against the record's
``answer``. ``install(monkeypatch, data_format)`` makes it the protocol of a benchmark kind
for one test (the kind object is replaced in the registry by a copy naming this protocol)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from benchmark.evaluation.base import (
    Column,
    EvalItem,
    EvalSettings,
    EvaluationError,
    Outcome,
    Status,
    ToolLayer,
    ToolResult,
    image_part,
    sha256,
)

PATH = "tests.evaluation_protocol.PROTOCOL"

LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look a word up.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}


class ExactMatch:
    settings = ("max_rounds", "max_tool_calls")
    solved = "correct"
    columns = (
        Column("accuracy", "Accuracy"),
        Column("tool_calls", "Tool calls per item", percent=False),
    )

    def run_item(
        self,
        item: EvalItem,
        *,
        settings: EvalSettings,
        chat: Any,
        tools: ToolLayer,
        truth: Mapping[str, Any] | None = None,
    ) -> Outcome:
        images = {sha256(data): data for data in item.images.values()}
        content: list[dict[str, Any]] = [{"type": "text", "text": str(item.record.get("query"))}]
        content += [image_part(digest) for digest in images]
        messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
        outcome = Outcome(item=item.id, status=Status.OK, trace=[messages[0]])
        for _ in range(settings.max_rounds):
            reply = chat(messages, images=images, tools=[LOOKUP])
            outcome.count(reply)
            messages.append(reply.assistant_message())
            outcome.trace.append(messages[-1])
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                outcome.tool_calls += 1
                if outcome.tool_calls > settings.max_tool_calls:
                    raise EvaluationError("more tool calls than the budget allows")
                result = tools.call(item.id, call.name, call.parsed())
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result.output)}
                )
                outcome.trace.append(messages[-1])
        else:
            raise EvaluationError(f"no final answer in {settings.max_rounds} rounds")
        outcome.output = reply.text
        outcome.files = {"answer.txt": reply.text.encode()}
        expected = (truth or {}).get("answer")
        if expected is not None:
            outcome.scores = {"correct": float(reply.text.strip() == str(expected))}
        return outcome

    def summarize(self, outcomes: list[Outcome]) -> dict[str, Any]:
        scored = [o.scores["correct"] for o in outcomes if "correct" in o.scores]
        return {
            "accuracy": 100 * sum(scored) / len(scored) if scored else None,
            "tool_calls": sum(o.tool_calls for o in outcomes) / len(outcomes) if outcomes else 0,
            "items": len(outcomes),
            "errors": sum(o.status == Status.ERROR for o in outcomes),
        }

    def write_outputs(self, outcomes: list[Outcome], out_dir: str, *, model: str) -> list[str]:
        path = Path(out_dir) / "answers.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w") as handle:
            for o in outcomes:
                handle.write(json.dumps({"id": o.item, "model": model, "answer": o.output}) + "\n")
        return [str(path)]


PROTOCOL = ExactMatch()


class Lookup:
    """A tool provider answering ``lookup`` from a dict, counting its calls."""

    def __init__(self, answers: Mapping[str, Any]) -> None:
        self.answers = dict(answers)
        self.calls = 0

    def tools(self) -> Iterable[str]:
        return ["lookup"]

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        self.calls += 1
        q = str(arguments.get("q"))
        return ToolResult(output={"q": q, "meaning": self.answers.get(q, "unknown")})


#: The provider the project factory below gives (tests set its answers).
LOOKUP_PROVIDER = Lookup({"apple": "a fruit"})


def lookup_provider(project: Any) -> Lookup:
    return LOOKUP_PROVIDER


def install(monkeypatch: Any, data_format: str = "atp", path: str | None = PATH) -> None:
    """Make ``path`` the evaluation protocol of the kind ``data_format`` for this test (None:
    the kind has none)."""
    from benchmark import kinds

    if not any(kind.name == data_format for kind in kinds.KINDS):
        raise LookupError(data_format)
    monkeypatch.setattr(
        kinds,
        "KINDS",
        [
            dataclasses.replace(kind, evaluation=path) if kind.name == data_format else kind
            for kind in kinds.KINDS
        ],
    )
