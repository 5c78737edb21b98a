"""What a protocol is given (an item, settings, a chat callable, a tool layer) and what it returns.

Messages are OpenAI chat messages. An image in a message is the part
``{"type": "image_url", "image_url": {"url": "sha256:<hex>"}}``; its bytes travel beside the
messages in ``images`` (sha256 -> bytes), so a model-call cache keys the request by hash and
the adapter sends data URLs. Tools are OpenAI function specs (``{"type": "function",
"function": {...}}``); a reply's tool calls come back parsed.

The tool layer records every call to a provider (request, response, files, time) per item;
in replay mode it answers only from the record and raises ``ReplayMiss`` naming the call.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


class EvaluationError(Exception):
    """A run cannot go on; the message says why (shown to the user)."""


class ReplayMiss(EvaluationError):
    """Replay mode met a call that was never recorded."""


class ToolUnavailable(EvaluationError):
    """No provider is configured for a tool: "not available here"."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def image_part(digest: str) -> dict[str, Any]:
    """The message part standing for an image (its bytes go in ``images``)."""
    return {"type": "image_url", "image_url": {"url": f"sha256:{digest}"}}


# --------------------------------------------------------------------------- model calls


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    #: The arguments as the model wrote them (a JSON string; may be malformed).
    arguments: str

    def parsed(self) -> dict[str, Any]:
        """The arguments as a dict; raises ValueError naming the tool when they are not."""
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError as exc:
            raise ValueError(f"{self.name}: arguments are not JSON ({exc.msg})") from exc
        if not isinstance(value, dict):
            raise ValueError(f"{self.name}: arguments must be a JSON object")
        return value


@dataclass(frozen=True)
class ModelReply:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    cached: bool = False

    def assistant_message(self) -> dict[str, Any]:
        """The reply as the assistant message to append to the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        return message


class Chat(Protocol):
    """One model call: ``chat(messages, images=..., tools=...)`` -> the reply. Raises
    ``EvaluationError`` (or a subclass) when the call cannot be answered."""

    def __call__(
        self,
        messages: list[dict[str, Any]],
        *,
        images: Mapping[str, bytes] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> ModelReply: ...


# --------------------------------------------------------------------------- tools


@dataclass(frozen=True)
class ToolResult:
    """What a tool answered: text (or JSON) for the model, and files it produced by name."""

    output: Any
    files: Mapping[str, bytes] = field(default_factory=dict)
    error: str = ""


class Provider(Protocol):
    """Something that runs named tools (a retrieval API, m&m's model tools, ...).

    A provider whose ``takes_files`` attribute is true is called with ``files=`` as well: the
    bytes of the files its arguments name by ``sha256:<hex>`` (images, audio), keyed by hex.
    The files are not part of the record key; the arguments name them by hash."""

    def tools(self) -> Iterable[str]: ...

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult: ...


def call_key(item: str, name: str, arguments: Mapping[str, Any]) -> str:
    """The record key of one call: the item, the tool and its arguments, canonically."""
    text = json.dumps([item, name, arguments], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class ToolRecord:
    item: str
    name: str
    arguments: dict[str, Any]
    output: Any
    files: dict[str, bytes]
    error: str
    seconds: float


class RecordStore(Protocol):
    def get(self, key: str) -> ToolRecord | None: ...

    def put(self, key: str, record: ToolRecord) -> None: ...


class MemoryRecords:
    """Records kept in a dict (tests, the command line without a database)."""

    def __init__(self) -> None:
        self.records: dict[str, ToolRecord] = {}

    def get(self, key: str) -> ToolRecord | None:
        return self.records.get(key)

    def put(self, key: str, record: ToolRecord) -> None:
        self.records[key] = record


class ToolLayer:
    """Every external tool call of a run goes through here: recorded per item, or in replay
    mode answered only from the record. Tools no provider offers answer ``ToolUnavailable``."""

    def __init__(
        self,
        providers: Iterable[Provider] = (),
        *,
        records: RecordStore | None = None,
        replay: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._by_tool: dict[str, Provider] = {}
        for provider in providers:
            for name in provider.tools():
                self._by_tool.setdefault(name, provider)
        self.records = records if records is not None else MemoryRecords()
        self.replay = replay
        self._clock = clock

    def offers(self, name: str) -> bool:
        """Whether a call to ``name`` can be answered (by a provider, or from the record)."""
        return self.replay or name in self._by_tool

    def call(
        self,
        item: str,
        name: str,
        arguments: Mapping[str, Any],
        *,
        files: Mapping[str, bytes] | None = None,
    ) -> ToolResult:
        """Answer one call (from the record, or by its provider, recording it). ``files``:
        the bytes of files the arguments name as ``sha256:<hex>``, for providers that
        take them."""
        key = call_key(item, name, arguments)
        record = self.records.get(key)
        if record is not None:
            return ToolResult(output=record.output, files=dict(record.files), error=record.error)
        if self.replay:
            raise ReplayMiss(
                f"replay: no record of {name}({json.dumps(dict(arguments), sort_keys=True)}) "
                f"for item {item}"
            )
        provider = self._by_tool.get(name)
        if provider is None:
            raise ToolUnavailable(f"{name} is not available here (no provider is configured)")
        started = self._clock()
        if getattr(provider, "takes_files", False):
            result = provider.call(name, arguments, files=dict(files or {}))  # type: ignore[call-arg]
        else:
            result = provider.call(name, arguments)
        self.records.put(
            key,
            ToolRecord(
                item=item,
                name=name,
                arguments=dict(arguments),
                output=result.output,
                files=dict(result.files),
                error=result.error,
                seconds=round(self._clock() - started, 3),
            ),
        )
        return result


# --------------------------------------------------------------------------- items and outcomes


@dataclass(frozen=True)
class EvalItem:
    """One item as the model under test sees it: its id, its record in the benchmark's own
    format (the item's raw JSON), and its images by the name the record uses."""

    id: str
    record: Mapping[str, Any]
    images: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class EvalSettings:
    """The protocol's settings (each protocol reads those that apply to it)."""

    mode: str = "atm"  # Agentic-MME: atm | gen
    plan_format: str = "json"  # m&m's: json | code
    strategy: str = "multi-step"  # m&m's: multi-step | step-by-step
    feedback: tuple[str, ...] = ()  # m&m's: parse, verify, execute
    shots: int = 0  # ATP-Bench: N-shot examples
    max_rounds: int = 15
    max_tool_calls: int = 15
    #: Verified items given as examples (N-shot), in the order to show them.
    examples: tuple[EvalItem, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


class Status:
    OK = "ok"  # the model produced an output (right or wrong)
    ERROR = "error"  # the run failed (model error, replay miss, budget)
    NOT_EXECUTABLE = "not_executable"  # m&m's: some tool cannot run here


@dataclass
class Outcome:
    """What one item's run produced: the output in the benchmark's own form (an answer text,
    a run dict with its files, a plan), its scores, and what it cost."""

    item: str
    status: str
    output: Any = None
    scores: dict[str, Any] = field(default_factory=dict)
    #: Files of the output by relative path (Agentic-MME's tool_images/, ...).
    files: dict[str, bytes] = field(default_factory=dict)
    error: str = ""
    model_calls: int = 0
    tool_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: The conversation, step by step (messages with images as hashes), for the run page.
    trace: list[dict[str, Any]] = field(default_factory=list)

    def count(self, reply: ModelReply) -> None:
        self.model_calls += 1
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens


@dataclass(frozen=True)
class Column:
    """A leaderboard column: the summary key, its heading, and whether it is a share (%),
    given in percent (0-100) as in the papers' tables. Its figure is the mean of the items'
    ``Outcome.scores[key]`` over the answered items that have one, unless ``pooled`` names
    ``(numerator, denominator)`` score keys: then it is 100 * the sum of the items'
    numerators / the sum of their denominators (a rate over tool calls, not over items), and
    an interval resamples items and pools again."""

    key: str
    label: str
    percent: bool = True
    pooled: tuple[str, str] | None = None


@dataclass(frozen=True)
class Ratio:
    """A figure that is a ratio of sums over items: ``scale * sum(numerators) /
    sum(denominators)`` (None when the denominators sum to 0), with one numerator and one
    denominator per outcome, in the outcomes' order. A mean over the items that have a score
    is ``(score, 1)`` for those items and ``(0, 0)`` for the others; a pooled column is its
    two score keys. So a bootstrap interval resamples the pairs together and sums them
    (vectorised), which gives the figure ``summarize`` gives on the same resample without
    running it (see :class:`RatioFigures`)."""

    numerators: tuple[float, ...]
    denominators: tuple[float, ...]
    scale: float = 1.0


class RatioFigures(Protocol):
    """What a protocol may offer besides :class:`EvalProtocol` (optional): its figures that
    are ratios of per-item sums, by summary key. A figure it does not name has its interval
    from ``summarize`` on each resample, as before."""

    def ratios(self, outcomes: list[Outcome]) -> dict[str, Ratio]: ...


class EvalProtocol(Protocol):
    """What a benchmark kind's protocol object offers."""

    #: The settings that apply (names of ``EvalSettings`` fields), for forms and the command.
    settings: tuple[str, ...]
    #: The leaderboard's columns, in the layout of the paper's main table.
    columns: tuple[Column, ...]
    #: The per-item score key (of ``Outcome.scores``) that says whether the model solved the
    #: item: solved when that score is at its maximum (see :func:`solved`); "" when the
    #: protocol has no such notion.
    solved: str

    def run_item(
        self,
        item: EvalItem,
        *,
        settings: EvalSettings,
        chat: Chat,
        tools: ToolLayer,
        truth: Mapping[str, Any] | None = None,
    ) -> Outcome:
        """Run the model on one item and score what it produced against ``truth`` (the
        verified ground truth in the kind's record form; None: unscored)."""
        ...

    def summarize(self, outcomes: list[Outcome]) -> dict[str, Any]:
        """The per-model figures over items (the columns' keys, plus counts)."""
        ...

    def write_outputs(self, outcomes: list[Outcome], out_dir: str, *, model: str) -> list[str]:
        """Write the outputs in the benchmark's own result format; the paths written."""
        ...


# --------------------------------------------------------------------------- solved items

#: How far below its maximum a score may be and still count as at it (float rounding).
SOLVED_TOLERANCE = 1e-6


def solved_maximum(protocol: EvalProtocol) -> float:
    """The maximum of the protocol's ``solved`` score: 100.0 when the leaderboard column of
    that key is a share given in percent (0-100), else 1.0 (a 0-1 score, or a key no column
    names)."""
    for column in protocol.columns:
        if column.key == protocol.solved:
            return 100.0 if column.percent else 1.0
    return 1.0


def solved(scores: Mapping[str, Any] | None, protocol: EvalProtocol) -> bool | None:
    """Whether one item's scores say the model solved it: its ``protocol.solved`` score is at
    its maximum (:func:`solved_maximum`: 100 on a percent scale, 1 on a 0-1 scale, within
    :data:`SOLVED_TOLERANCE`); a true/false score is itself the answer. None when the item
    is unscored: no such key, the score missing, None or not a finite number (an item
    without ground truth, a run that failed)."""
    key = getattr(protocol, "solved", "")
    if not key or not isinstance(scores, Mapping):
        return None
    value = scores.get(key)
    if isinstance(value, bool):
        return value
    if not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return value >= solved_maximum(protocol) - SOLVED_TOLERANCE
