"""One call to a judge model, for every judge: send it, parse the output strictly, ask once
more when it did not parse, and bring back the outputs, the judgment, latency and tokens.

This is the one copy of a call's lifecycle. The judge runner (``review.judges.services``)
makes it in worker threads for every judge run (answers and plans alike); run scoring makes it
for the Agentic-MME S and V judges (``review.runs.judging``), handing in a cached reply as the
first output. It touches no database.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchmark import judge_prompts as judges
from benchmark.judge_prompts import Call, Judgment
from benchmark.llm.client import ChatClient, ChatRequest, ChatResult, ModelError

if TYPE_CHECKING:
    from review.judges.models import CallRecord


@dataclass
class Outcome:
    """What one call brought back."""

    outputs: list[str]
    judgment: Judgment[Any]
    transport_error: str = ""
    latency_ms: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    #: How many requests reached the model (outputs handed in are not counted).
    asked: int = 0


def call_failed(call: Call, message: str, outputs: list[str] | None = None) -> Outcome:
    """A call that got no answer (the endpoint failed, or an image could not be sent): a
    later run or a resume makes it again."""
    judgment: Judgment[Any] = Judgment(
        label=call.label,
        value=None,
        attempts=(judges.Attempt(raw="", error=message),),
        key=call.key,
        template_id=call.template_id,
        template_version=call.template_version,
    )
    return Outcome(outputs=outputs or [], judgment=judgment, transport_error=message)


def call_ask(
    *,
    client: ChatClient,
    call: Call,
    parse: Callable[[str], Any],
    request: ChatRequest,
    outputs: Sequence[str] = (),
    may_ask: Callable[[], bool] = lambda: True,
    on_answer: Callable[[ChatResult, Judgment[Any]], None] | None = None,
) -> Outcome:
    """Ask ``call`` until its output parses, at most ``judges.MAX_ATTEMPTS`` outputs in all.

    ``outputs``: outputs already had (a cached reply counts as the first). ``may_ask``: asked
    before each request; False stops asking (the judgment so far is kept). ``on_answer`` sees
    each reply with the judgment it made. A model error ends the call as a transport error,
    keeping the outputs received."""
    received = list(outputs)
    latency = prompt_tokens = completion_tokens = asked = 0
    judgment = judges.judgment_from_outputs(call, received, parse) if received else None
    try:
        while judgment is None or judges.should_retry(judgment):
            if not may_ask():
                break
            result = client.complete(request)
            asked += 1
            received.append(result.text)
            latency += result.latency_ms
            prompt_tokens += result.prompt_tokens or 0
            completion_tokens += result.completion_tokens or 0
            judgment = judges.judgment_from_outputs(call, received, parse)
            if on_answer is not None:
                on_answer(result, judgment)
    except ModelError as exc:
        failed = call_failed(call, str(exc), received)
        failed.asked = asked
        return failed
    if judgment is None:
        judgment = judges.judgment_from_outputs(call, received, parse)
    return Outcome(
        outputs=received,
        judgment=judgment,
        latency_ms=latency,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        asked=asked,
    )


def call_key(call: Call, base_url: str) -> str:
    """The stored key: the judges' key (template version, model, inputs, image hashes) and
    the endpoint."""
    blob = f"{base_url.strip().rstrip('/')}\n{call.key}"
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def parsed_json(value: Any) -> Any:
    """A parsed value as stored (``CallRecord.parsed``): dataclasses as dicts."""
    if value is None:
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def stored_judgment(row: CallRecord, parse: Callable[[str], Any]) -> Judgment[Any]:
    """A stored call (of an answer or a plan) as a judgment: its outputs parsed again with
    ``parse`` (a model error has none), so a report always says what the stored outputs say."""
    if row.transport_error:
        attempts: tuple[judges.Attempt, ...] = (judges.Attempt(raw="", error=row.error),)
        value = None
    else:
        judgment = judges.judgment_from_outputs(None, row.outputs, parse)
        attempts, value = judgment.attempts, judgment.value
    return Judgment(
        label=row.label,
        value=value,
        attempts=attempts,
        key=row.key,
        template_id=row.template_id,
        template_version=row.template_version,
    )
