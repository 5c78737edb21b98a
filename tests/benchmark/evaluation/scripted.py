"""A scripted chat callable for the protocol tests: answers each call from a list or a
function of the messages, and keeps what it was sent."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from benchmark.evaluation.base import EvaluationError, ModelReply


@dataclass
class ScriptedChat:
    reply: Callable[[list[dict[str, Any]]], str]
    calls: list[dict[str, Any]] = field(default_factory=list)

    def __call__(
        self,
        messages: list[dict[str, Any]],
        *,
        images: Mapping[str, bytes] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> ModelReply:
        self.calls.append({"messages": messages, "images": dict(images or {}), "tools": tools})
        return ModelReply(text=self.reply(messages), prompt_tokens=10, completion_tokens=5)


def failing_chat(
    messages: list[dict[str, Any]],
    *,
    images: Mapping[str, bytes] | None = None,
    tools: list[dict[str, Any]] | None = None,
) -> ModelReply:
    raise EvaluationError("model endpoint answered 503 three times")


def parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A message's content as parts (a plain string is one text part)."""
    content = message["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content)


def text_of(message: dict[str, Any]) -> str:
    return "".join(p["text"] for p in parts(message) if p["type"] == "text")


def image_hashes(message: dict[str, Any]) -> list[str]:
    return [
        p["image_url"]["url"].removeprefix("sha256:")
        for p in parts(message)
        if p["type"] == "image_url"
    ]
