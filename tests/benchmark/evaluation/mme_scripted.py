"""Shared pieces of the Agentic-MME harness tests: the demo tasks as items, and a scripted
chat callable that answers with tool calls and then an answer (no model, no network)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.evaluation.base import EvalItem, ModelReply, ToolCall

DEMO = Path(__file__).resolve().parents[3] / "review" / "demo" / "agentic-mme"
_ids = itertools.count(1)


def task(name: str) -> dict[str, Any]:
    return json.loads((DEMO / "json" / f"{name}.json").read_text(encoding="utf-8"))


def item(name: str, record: Mapping[str, Any] | None = None) -> EvalItem:
    record = dict(record if record is not None else task(name))
    image = record["input"]["image"]
    return EvalItem(id=name, record=record, images={image: (DEMO / image).read_bytes()})


def call(name: str, arguments: Any = None, *, raw: str | None = None) -> ToolCall:
    text = raw if raw is not None else json.dumps(arguments or {})
    return ToolCall(id=f"call_{next(_ids)}", name=name, arguments=text)


def tools(*calls: ToolCall, text: str = "") -> ModelReply:
    return ModelReply(text, tuple(calls), prompt_tokens=10, completion_tokens=5)


def answer(text: str) -> ModelReply:
    return ModelReply(text, prompt_tokens=10, completion_tokens=5)


@dataclass
class Request:
    messages: list[dict[str, Any]]
    images: dict[str, bytes]
    tools: list[str] | None


@dataclass
class ScriptedChat:
    """Answers each model call with the next scripted reply (a reply, or a function of the
    messages so far); past the script, the last one again. Records every request."""

    script: list[ModelReply | Callable[[list[dict[str, Any]]], ModelReply]]
    requests: list[Request] = field(default_factory=list)

    def __call__(
        self,
        messages: list[dict[str, Any]],
        *,
        images: Mapping[str, bytes] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> ModelReply:
        names = [spec["function"]["name"] for spec in tools] if tools is not None else None
        self.requests.append(Request(json.loads(json.dumps(messages)), dict(images or {}), names))
        step = self.script[min(len(self.requests), len(self.script)) - 1]
        return step(messages) if callable(step) else step
