"""The model under test as a ``benchmark.evaluation.base.Chat``: a conversation (OpenAI
messages, images as ``sha256:`` references with their bytes beside, optional tools) sent
through the one ``benchmark.llm.client.ChatClient`` (its response cache, the endpoint's
concurrency limit and rate gate, its retries), and each call kept for the result's record.

Touches no database: the cache it reads and fills is the item's buffer (``ItemCalls``), which
the runner loads before the item and stores after it, on its own thread."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from benchmark.evaluation.base import EvaluationError, ModelReply, ReplayMiss, ToolCall
from benchmark.llm.cache import CachedAnswer
from benchmark.llm.client import (
    CacheMiss,
    ChatClient,
    ConversationRequest,
    ModelError,
)


@dataclass
class CallLog:
    """One call as kept: the request as keyed (images by hash) and the answer."""

    request_key: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    params: dict[str, Any]
    answer: CachedAnswer
    cached: bool


@dataclass
class ItemCalls:
    """A response cache for one item's calls: the answers recorded for the item before
    (``known``, loaded by the runner) and the calls made now (``made``, stored by it)."""

    known: dict[str, CachedAnswer] = field(default_factory=dict)
    made: list[CallLog] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: str) -> CachedAnswer | None:
        with self._lock:
            return self.known.get(key)

    def put(self, key: str, answer: CachedAnswer) -> None:
        with self._lock:
            self.known[key] = answer


class ModelChat:
    """``chat(messages, images=..., tools=...)`` on one endpoint for one item. A model error
    is an ``EvaluationError`` naming the model; in replay mode a call never recorded is a
    ``ReplayMiss`` naming the model, the item and the call's number.

    ``slots`` (the runner's): a call holds one while it is made, so the run's items have at
    most that many model calls out at once however many of them are being prepared or
    scored meanwhile."""

    def __init__(
        self,
        client: ChatClient,
        *,
        item: str,
        calls: ItemCalls,
        params: Mapping[str, Any] | None = None,
        slots: threading.Semaphore | None = None,
    ) -> None:
        self.client = client
        self.item = item
        self.calls = calls
        self.params = dict(params or {})
        self.count = 0
        self.slots: contextlib.AbstractContextManager[Any] = (
            slots if slots is not None else contextlib.nullcontext()
        )
        #: The data URL of each image sent so far (every turn resends them all).
        self.urls: dict[str, str] = {}

    def __call__(
        self,
        messages: list[dict[str, Any]],
        *,
        images: Mapping[str, bytes] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> ModelReply:
        self.count += 1
        request = ConversationRequest(
            messages=tuple(messages),
            images=dict(images or {}),
            tools=tuple(tools or ()),
            params=self.params,
            urls=self.urls,
        )
        model = self.client.config.model
        try:
            with self.slots:
                result = self.client.complete(request)
        except CacheMiss as exc:
            raise ReplayMiss(
                f"replay: no recorded answer of {model} for item {self.item} "
                f"(model call {self.count}, key {self.client.key(request)[:12]}); run it once "
                "without --replay to record it"
            ) from exc
        except ModelError as exc:
            raise EvaluationError(f"{model} on item {self.item}: {exc}") from exc
        self.calls.made.append(
            CallLog(
                request_key=result.request_key,
                messages=list(request.key_messages()),
                tools=list(request.tools),
                params=dict(request.params),
                answer=result.to_cache(),
                cached=result.cached,
            )
        )
        return ModelReply(
            text=result.text,
            tool_calls=tuple(
                ToolCall(
                    id=c.get("id", ""), name=c.get("name", ""), arguments=c.get("arguments", "")
                )
                for c in result.tool_calls
            ),
            prompt_tokens=result.prompt_tokens or 0,
            completion_tokens=result.completion_tokens or 0,
            latency_ms=result.latency_ms,
            cached=result.cached,
        )


class ToolChat:
    """A ``Chat`` for tools that are models themselves (m&m's captioning, QA, OCR ...): the
    project's model, no response cache (the tool layer records and replays these calls)."""

    def __init__(self, client: ChatClient, *, params: Mapping[str, Any] | None = None) -> None:
        self.client = client
        self.params = dict(params or {})

    def __call__(
        self,
        messages: list[dict[str, Any]],
        *,
        images: Mapping[str, bytes] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> ModelReply:
        request = ConversationRequest(
            messages=tuple(messages),
            images=dict(images or {}),
            tools=tuple(tools or ()),
            params=self.params,
        )
        try:
            result = self.client.complete(request)
        except ModelError as exc:
            raise EvaluationError(f"tool model {self.client.config.model}: {exc}") from exc
        return ModelReply(
            text=result.text,
            tool_calls=tuple(
                ToolCall(
                    id=c.get("id", ""), name=c.get("name", ""), arguments=c.get("arguments", "")
                )
                for c in result.tool_calls
            ),
            prompt_tokens=result.prompt_tokens or 0,
            completion_tokens=result.completion_tokens or 0,
            latency_ms=result.latency_ms,
        )
