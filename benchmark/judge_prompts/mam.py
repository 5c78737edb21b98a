"""ATP-Bench MAM: the multi-agent MLLM judge (ATP-Bench §4.3, §5.2, App. B.1).

Three agents run in order on each answer; each is named in its system message.

1. **Precision Inspector** scores every tool call of the answer on six sub-checks, 0 (fails),
   1 (partly) or 2 (fully): necessity (1a), position (1b semantic position), structure
   (1c structural integrity), tool_choice (2a), parameters (2b parameter accuracy), format
   (2c format correctness). Output ``{"calls": [{"index": i, "necessity": s, "position": s,
   "structure": s, "tool_choice": s, "parameters": s, "format": s, "comment": "..."}]}``, one
   entry per call, indices 1..n in order. An answer with no tool call gets an empty report
   without a model call.
2. **Recall Inspector** lists missed opportunities for an image:
   ``{"missed": [{"after": "quoted text", "tool": "...", "why": "..."}]}``.
3. **Chief Judge** reads both reports and returns ``{"score": 0..100, "tier": "...",
   "why": "..."}``. The tier is one of the five of §4.3 and the score must lie in its range
   (the paper's ranges share their ends, so 80 may be Excellent or Good but Flawed):

   ======================  ========
   Excellent               80-100
   Good but Flawed         60-80
   Mediocre                40-60
   Poor                    20-40
   Fatal                   0-20
   ======================  ========

Figures per model, over the answers whose three reports are all valid (``n``; answers with a
failed report are ``excluded`` from every figure, so all figures describe the same answers):

* **FS** (final score): the mean Chief Judge score, 0-100.
* **MI** (missed images): the mean number of entries in the Recall Inspector's ``missed`` list
  per answer.
* **Sub-check shares** (Table 10's columns 1a-2c): for each sub-check, the share of all tool
  calls (pooled over the answers) scored 2 on it, in percent.
* **SR** (success rate): the share of tool calls scored 2 on all six sub-checks, in percent.
  §5.2 calls a call successful when it is "necessary, semantically appropriate, well-placed,
  and uses the correct tool with the correct parameters in the proper format"; we read that as
  full marks on every sub-check. Shares are None when there are no calls.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from benchmark.tags import parse

from .base import (
    Call,
    JudgeOutputError,
    Judgment,
    Template,
    build_call,
    load_json_object,
    mean,
    require_int,
    require_keys,
    require_str,
)

SUB_CHECKS = ("necessity", "position", "structure", "tool_choice", "parameters", "format")
SUB_CHECK_CODES = dict(zip(SUB_CHECKS, ("1a", "1b", "1c", "2a", "2b", "2c"), strict=True))
TIERS: dict[str, tuple[int, int]] = {
    "Excellent": (80, 100),
    "Good but Flawed": (60, 80),
    "Mediocre": (40, 60),
    "Poor": (20, 40),
    "Fatal": (0, 20),
}
"""ATP-Bench §4.3: the Chief Judge's five tiers and their score ranges (ends included)."""

_SCALE = "Scores: 0 = fails, 1 = partly satisfied, 2 = fully satisfied."

PRECISION_TEMPLATE = Template(
    id="atp.mam.precision",
    description="ATP-Bench MAM Precision Inspector: six 0-2 sub-checks per tool call",
    system=(
        "You are the Precision Inspector. You check every tool call in an answer that "
        "interleaves text with <tool>{{...}}</tool> calls (tools: Reference, Diffusion, Search, "
        "Code, Edit). First check the prerequisites, then the rest:\n"
        "necessity: the image adds clear value over text (information, faster understanding, "
        "structure) rather than decoration.\n"
        "tool_choice: the tool can do this within its capabilities.\n"
        "position: the image sits next to the text it illustrates, not late or detached.\n"
        "structure: the call does not split a sentence or break a paragraph's flow.\n"
        "parameters: image indices and prompts or queries are correct and specific.\n"
        "format: the call follows the JSON schema and the <tool> tag syntax.\n"
        f"{_SCALE}\n"
        'Reply with only a JSON object: {{"calls": [{{"index": 1, "necessity": 2, '
        '"position": 2, "structure": 2, "tool_choice": 2, "parameters": 2, "format": 2, '
        '"comment": "..."}}]}} with one entry per tool call, in order, index counting from 1.'
    ),
    user=(
        "Query:\n{query}\n\nAnswer:\n{answer}\n\n"
        "The answer's {call_count} tool call(s), numbered:\n{calls}"
    ),
)

RECALL_TEMPLATE = Template(
    id="atp.mam.recall",
    description="ATP-Bench MAM Recall Inspector: missed opportunities for an image",
    system=(
        "You are the Recall Inspector. Find places where the answer gives text only but "
        "should have called a tool: the text refers to a visual that is not there; a long "
        "description of a procedure, a reference image or a real-world entity lacks Reference "
        "or Search grounding; or creative generation, an image edit or a plot was implicitly "
        "needed but Diffusion, Edit or Code was not used.\n"
        'Reply with only a JSON object: {{"missed": [{{"after": "the exact text after which '
        'the image belongs", "tool": "the tool that should have been called", "why": "..."}}]}}'
        '; use {{"missed": []}} when nothing was missed.'
    ),
    user="Query:\n{query}\n\nAnswer:\n{answer}",
)

CHIEF_TEMPLATE = Template(
    id="atp.mam.chief",
    description="ATP-Bench MAM Chief Judge: 0-100 score in five tiers",
    system=(
        "You are the Chief Judge. Using the Precision Inspector's and the Recall Inspector's "
        "reports, give the answer's overall interleaved quality a score from 0 to 100 and "
        "its tier:\n"
        "Excellent (80-100): every tool passes necessity and boundary checks, precise syntax, "
        "no missed visual opportunity.\n"
        "Good but Flawed (60-80): genuinely helpful; minor precision issues or at most one "
        "minor visual omission.\n"
        "Mediocre (40-60): noticeable problems, such as several parameter errors, forced "
        "structural splits, or one or two missed opportunities.\n"
        "Poor (20-40): significant failures, such as heavy visual redundancy, tool boundary "
        "violations, or two or three explicit visual needs left as plain text.\n"
        "Fatal (0-20): execution breaks down: severe format errors, or the user's core visual "
        "intent is left out entirely.\n"
        'Reply with only a JSON object: {{"score": 0, "tier": "one of the five names", '
        '"why": "..."}}.'
    ),
    user=(
        "Query:\n{query}\n\nAnswer:\n{answer}\n\n"
        "Precision Inspector's report:\n{precision_report}\n\n"
        "Recall Inspector's report:\n{recall_report}"
    ),
)


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class CallCheck:
    index: int
    necessity: int
    position: int
    structure: int
    tool_choice: int
    parameters: int
    format: int
    comment: str

    def score(self, sub_check: str) -> int:
        return int(getattr(self, sub_check))

    @property
    def successful(self) -> bool:
        return all(self.score(name) == 2 for name in SUB_CHECKS)


@dataclass(frozen=True)
class PrecisionReport:
    calls: tuple[CallCheck, ...]


@dataclass(frozen=True)
class Miss:
    after: str
    tool: str
    why: str


@dataclass(frozen=True)
class RecallReport:
    missed: tuple[Miss, ...]


@dataclass(frozen=True)
class ChiefVerdict:
    score: int
    tier: str
    why: str


# --------------------------------------------------------------------------- parsers


def _list_of_objects(value: object, name: str) -> list[dict[str, object]]:
    if not isinstance(value, list):
        raise JudgeOutputError(f"{name} must be an array")
    for i, entry in enumerate(value, start=1):
        if not isinstance(entry, dict):
            raise JudgeOutputError(f"{name}[{i}] must be an object")
    return value


def parse_precision(raw: str, call_count: int) -> PrecisionReport:
    """One entry per tool call of the answer (``call_count``), indices 1..n in order."""
    obj = load_json_object(raw)
    require_keys(obj, ("calls",))
    entries = _list_of_objects(obj["calls"], "calls")
    if len(entries) != call_count:
        raise JudgeOutputError(
            f"calls has {len(entries)} entries but the answer has {call_count} tool call(s)"
        )
    checks = []
    for position, entry in enumerate(entries, start=1):
        where = f"calls[{position}]"
        require_keys(entry, ("index", *SUB_CHECKS, "comment"), where)
        index = require_int(entry["index"], f"{where}.index", -(2**31), 2**31)
        if index != position:
            raise JudgeOutputError(f"{where}.index must be {position}, got {index}")
        scores = {name: require_int(entry[name], f"{where}.{name}", 0, 2) for name in SUB_CHECKS}
        comment = require_str(entry["comment"], f"{where}.comment")
        checks.append(CallCheck(index=index, comment=comment, **scores))
    return PrecisionReport(calls=tuple(checks))


def parse_recall(raw: str) -> RecallReport:
    obj = load_json_object(raw)
    require_keys(obj, ("missed",))
    misses = []
    for i, entry in enumerate(_list_of_objects(obj["missed"], "missed"), start=1):
        where = f"missed[{i}]"
        require_keys(entry, ("after", "tool", "why"), where)
        misses.append(
            Miss(
                after=require_str(entry["after"], f"{where}.after", allow_empty=False),
                tool=require_str(entry["tool"], f"{where}.tool", allow_empty=False),
                why=require_str(entry["why"], f"{where}.why"),
            )
        )
    return RecallReport(missed=tuple(misses))


def parse_chief(raw: str) -> ChiefVerdict:
    obj = load_json_object(raw)
    require_keys(obj, ("score", "tier", "why"))
    score = require_int(obj["score"], "score", 0, 100)
    tier = require_str(obj["tier"], "tier").strip()
    if tier not in TIERS:
        raise JudgeOutputError(f"unknown tier {tier[:40]!r}; expected one of {', '.join(TIERS)}")
    low, high = TIERS[tier]
    if not low <= score <= high:
        raise JudgeOutputError(f"score {score} is outside tier {tier!r} ({low}-{high})")
    return ChiefVerdict(score=score, tier=tier, why=require_str(obj["why"], "why"))


# --------------------------------------------------------------------------- calls


def tool_calls_of(answer: str) -> list[str]:
    """The raw ``<tool>...</tool>`` tags of an ATP-Bench answer, in order."""
    return [call.raw for call in parse(answer, "atp").tools]


def precision_call(
    *,
    query: str,
    answer: str,
    model: str,
    images: Sequence[str] = (),
    template: Template = PRECISION_TEMPLATE,
) -> Call:
    """``images``: the query's input images (data URLs or references)."""
    calls = tool_calls_of(answer)
    listing = "\n".join(f"{i}. {raw}" for i, raw in enumerate(calls, start=1))
    values = {"query": query, "answer": answer, "call_count": len(calls), "calls": listing}
    return build_call(template, model, "precision", values, images)


def recall_call(
    *,
    query: str,
    answer: str,
    model: str,
    images: Sequence[str] = (),
    template: Template = RECALL_TEMPLATE,
) -> Call:
    return build_call(template, model, "recall", {"query": query, "answer": answer}, images)


def first_stage_calls(
    *,
    query: str,
    answer: str,
    model: str,
    images: Sequence[str] = (),
    precision_template: Template = PRECISION_TEMPLATE,
    recall_template: Template = RECALL_TEMPLATE,
) -> list[Call]:
    """The Precision (left out when the answer has no tool call) and Recall calls; the Chief
    call needs their parsed reports (:func:`chief_call`)."""
    calls = [
        recall_call(
            query=query, answer=answer, model=model, images=images, template=recall_template
        )
    ]
    if tool_calls_of(answer):
        calls.insert(
            0,
            precision_call(
                query=query,
                answer=answer,
                model=model,
                images=images,
                template=precision_template,
            ),
        )
    return calls


def _report_json(value: PrecisionReport | RecallReport) -> str:
    if isinstance(value, PrecisionReport):
        data: object = {"calls": [vars(c) for c in value.calls]}
    else:
        data = {"missed": [vars(m) for m in value.missed]}
    return json.dumps(data, ensure_ascii=False, indent=1)


def chief_call(
    *,
    query: str,
    answer: str,
    precision: PrecisionReport,
    recall: RecallReport,
    model: str,
    images: Sequence[str] = (),
    template: Template = CHIEF_TEMPLATE,
) -> Call:
    values = {
        "query": query,
        "answer": answer,
        "precision_report": _report_json(precision),
        "recall_report": _report_json(recall),
    }
    return build_call(template, model, "chief", values, images)


# --------------------------------------------------------------------------- reports


@dataclass(frozen=True)
class AnswerReport:
    """One answer's three judgments. ``precision`` is None for an answer without tool calls."""

    precision: Judgment[PrecisionReport] | None
    recall: Judgment[RecallReport]
    chief: Judgment[ChiefVerdict] | None

    @property
    def precision_value(self) -> PrecisionReport | None:
        if self.precision is None:
            return PrecisionReport(calls=())
        return self.precision.value

    @property
    def valid(self) -> bool:
        return (
            self.precision_value is not None
            and self.recall.ok
            and self.chief is not None
            and self.chief.ok
        )


@dataclass(frozen=True)
class MamFigures:
    fs: float | None
    mi: float | None
    sr: float | None
    sub_checks: dict[str, float | None]
    calls: int
    n: int
    excluded: int


def _percent(part: int, whole: int) -> float | None:
    return 100 * part / whole if whole else None


def mam_figures(answers: Sequence[AnswerReport]) -> MamFigures:
    """FS, MI, SR and the six sub-check shares over the valid answers (see module docs)."""
    kept = [a for a in answers if a.valid]
    checks = [c for a in kept for c in (a.precision_value or PrecisionReport(())).calls]
    return MamFigures(
        fs=mean([a.chief.value.score for a in kept if a.chief and a.chief.value]),
        mi=mean([len(a.recall.value.missed) for a in kept if a.recall.value]),
        sr=_percent(sum(c.successful for c in checks), len(checks)),
        sub_checks={
            name: _percent(sum(c.score(name) == 2 for c in checks), len(checks))
            for name in SUB_CHECKS
        },
        calls=len(checks),
        n=len(kept),
        excluded=len(answers) - len(kept),
    )
