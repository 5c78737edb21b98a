"""Scoring model answers with tool tags without running any model or tool (pure Python).

Works on interleaved answers in both syntaxes of ``benchmark.tags``: ATP-Bench ``<tool>{json}
</tool>`` and LLM-I ``<imgen>{dict}</imgen>``. Per model it reports the figures below. Rates
are percentages (0-100, as in ATP-Bench's tables); R_rule is on LLM-I's 0-1 scale.

Definitions (each also shown on the scoring page)
-------------------------------------------------

Call
    Every opening tag in the answer is one call, closed or not, readable or not (what
    ``benchmark.tags.parse`` returns as tool calls). A stray closing tag is not a call.

Readable call, and the tool it names
    A call is *readable* when its tag is closed, its payload parses (strict JSON for ATP-Bench;
    a Python dict literal, or LLM-I's code-source regex, for LLM-I; a payload that only a
    lenient repair could read does not count) and the tool key (``tool_name`` / ``source``)
    holds a string. The tool is that string stripped and lower-cased, so ``Reference`` and
    ``reference`` are one tool (the real ATP-Bench casing was never published). A readable call
    naming a tool outside the toolset still names that tool: it counts in adoption and in the
    tool set, where it can only lower precision.

Well-formed call (format correctness, ATP-Bench App. B.1 metric 2c)
    A readable call that follows the tag schema: no ``malformed_payload``, ``unclosed_tag``,
    ``nested_tag``, ``unknown_tool`` (case-insensitive match with the toolset),
    ``missing_param`` (also a missing ``description`` or ``params`` key), ``unknown_param``
    (also an extra top-level key) or ``bad_param_type`` finding from
    ``benchmark.tags.validate``. Index ranges, empty prompts, code syntax and placement are
    parameter accuracy and structure (metrics 2b, 1c), not format, and do not count here.
    *Format correctness* = well-formed calls / calls, over every call of the model's answers
    (micro average over calls, as the Precision Inspector scores each call). No calls: no
    figure.

Calls per answer (ATP-Bench Figure 3)
    The number of calls in each answer (malformed ones included, as a model that cannot write
    a valid call shows a long tail there); reported as a histogram and its mean.

Tool adoption rate (ATP-Bench §5.2)
    For each tool: the share of the model's answered queries in which it makes at least one
    readable call of that tool.

Tool-set precision, recall and F1 (ATP-Bench §5.2, Table 6)
    Per query, the set of tools of the model's readable calls is compared with the set of the
    verified ground truth's readable calls (a tool used twice counts once):
    P = |pred ∩ gt| / |pred|, R = |pred ∩ gt| / |gt|, F1 = 2PR / (P + R) (0 when P + R = 0).
    An answer with no readable call scores P = R = F1 = 0 against a ground truth with calls,
    and a ground truth without calls scores 0 against an answer with calls; when both are
    empty the query scores 1, 1, 1. The model's figures are the means over the queries that
    have a verified ground truth (macro average over queries, which is why Table 6's F1 sits
    below the harmonic mean of its P and R). Queries without an answer from the model are
    not scored; they are counted as ``n_missing``.
    Per tool t (the per-tool table), over the same queries: precision = queries where both
    use t / queries where the model uses t; recall = queries where both use t / queries where
    the ground truth uses t.

R_rule (LLM-I §2.2.2, eq. 1; ``verl/utils/reward_score/llmi_rm.py: image_num_score``)
    Per answer with an image-number constraint: -1 (no images) scores 1 only for N_gen = 0;
    0 (unconstrained) scores 1; 99 / Inf (at least one) scores 1 only for N_gen > 0; a count
    n scores N_gen / n up to n and max(0, 1 - 0.3 (N_gen - n)) above it. The model's R_rule
    is the mean over its answers to constrained prompts. N_gen is the number of ``<image>``
    placeholders LLM-I's pipeline leaves in the answer, counted without running a tool, as if
    every dispatched call succeeded: ``<think>…</think>`` is dropped, tags are found with
    LLM-I's regex ``<imgen>({.*?})</imgen>`` (case-sensitive), a tag yields an image when
    LLM-I's ``is_image_valid`` accepts it (exact keys ``source``/``description``/``params``,
    lower-case source names, exact parameter keys and types) and, for an edit of a generated
    image, when that earlier tag yielded one; literal ``<image>`` text in the answer counts
    too, as LLM-I counts it. Only LLM-I answers have N_gen.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import orjson

from benchmark.formats.base import FormatError
from benchmark.tags import ParsedText, Syntax, Toolset, parse, rule_score, validate
from benchmark.tags.payload import read_literal

__all__ = [
    "ANSWER_KEYS",
    "FORMAT_CODES",
    "ID_KEYS",
    "AnswerFacts",
    "AnswerRecord",
    "ItemIndex",
    "ItemInfo",
    "ResolvedAnswer",
    "answer_facts",
    "llmi_generated_images",
    "llmi_tag_checks",
    "read_answer_file",
    "score_answers",
    "tool_set_scores",
]

#: Findings that make a call not well-formed (format correctness).
FORMAT_CODES = frozenset(
    {
        "malformed_payload",
        "unclosed_tag",
        "nested_tag",
        "unknown_tool",
        "missing_param",
        "unknown_param",
        "bad_param_type",
    }
)


# --------------------------------------------------------------------------- one answer


@dataclass(frozen=True, slots=True)
class CallFacts:
    tool: str | None  # lower-cased tool name of a readable call, else None
    well_formed: bool


@dataclass(frozen=True, slots=True)
class AnswerFacts:
    """What the metrics need from one answer."""

    calls: tuple[CallFacts, ...]
    n_gen: int | None = None  # LLM-I only

    @property
    def n_calls(self) -> int:
        return len(self.calls)

    @property
    def n_well_formed(self) -> int:
        return sum(1 for call in self.calls if call.well_formed)

    @property
    def tools(self) -> frozenset[str]:
        """The answer's tool set: tools of its readable calls, each once."""
        return frozenset(call.tool for call in self.calls if call.tool is not None)


def _readable_tool(parsed: ParsedText, index: int) -> str | None:
    tool = parsed.tools[index]
    if not tool.closed or tool.payload is None:
        return None
    name = tool.payload.get(tool.name_key)
    if not isinstance(name, str):
        return None
    return name.strip().lower()


def answer_facts(
    text: str,
    syntax: Syntax,
    toolset: Toolset | None = None,
    *,
    input_images: int = 0,
) -> AnswerFacts:
    """Calls (tool and well-formedness) of one answer; N_gen for LLM-I. ``toolset`` is the
    project's tag toolset (``None``: the built-in one). Never raises on the answer text."""
    parsed = parse(text, syntax)
    findings = validate(parsed, toolset, placement=False)
    bad = {f.tag for f in findings if f.tag is not None and f.code in FORMAT_CODES}
    calls = []
    for tool in parsed.tools:
        name = _readable_tool(parsed, tool.index)
        calls.append(CallFacts(name, name is not None and tool.index not in bad))
    n_gen = llmi_generated_images(text, input_images) if syntax == "llmi" else None
    return AnswerFacts(tuple(calls), n_gen)


def tool_set_scores(pred: frozenset[str], gold: frozenset[str]) -> tuple[float, float, float]:
    """Per-query tool-set precision, recall and F1 on 0-1 (see the module docstring)."""
    if not pred and not gold:
        return 1.0, 1.0, 1.0
    if not pred or not gold:
        return 0.0, 0.0, 0.0
    hit = len(pred & gold)
    precision = hit / len(pred)
    recall = hit / len(gold)
    f1 = 2 * precision * recall / (precision + recall) if hit else 0.0
    return precision, recall, f1


# --------------------------------------------------------------------------- LLM-I's N_gen

_LLMI_TAG = re.compile(r"<imgen>({.*?})</imgen>", re.DOTALL)
_LLMI_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_LLMI_CODE = re.compile(
    r"^\s*{'source': 'code', 'description': '([^']*)', 'params': {'code': '(.*)'}}\s*$",
    re.DOTALL,
)
_LLMI_PARAMS = {
    "diffusion": {"prompt"},
    "search": {"query"},
    "code": {"code"},
    "edit": {"img_index", "prompt"},
}


def _llmi_read_tag(payload: str) -> Any:
    """LLM-I's ``parse_image_tag``: the exact code-source regex first, then literal_eval."""
    if "'source': 'code'" in payload:
        m = _LLMI_CODE.search(payload)
        if m is not None:
            return {"source": "code", "description": m.group(1), "params": {"code": m.group(2)}}
    value, error = read_literal(payload)
    return value if error is None and isinstance(value, dict) else None


def _llmi_valid(data: Any, bound: int) -> bool:
    """LLM-I's ``is_image_valid`` on a read payload; ``bound`` is its index limit."""
    if not data or not isinstance(data, dict):
        return False
    if set(data) != {"source", "description", "params"}:
        return False
    params = data["params"]
    if not isinstance(data["description"], str) or not isinstance(params, dict):
        return False
    source = data["source"]
    if not isinstance(source, str) or source not in _LLMI_PARAMS:
        return False
    if set(params) != _LLMI_PARAMS[source]:
        return False
    if source == "edit":
        index = params["img_index"]
        # isinstance(True, int) holds in LLM-I's check too
        return isinstance(index, int) and 0 <= index < bound and isinstance(params["prompt"], str)
    return isinstance(params[next(iter(_LLMI_PARAMS[source]))], str)


def _llmi_edit_target(data: Any) -> int | None:
    """The edit's ``int(img_index)`` as LLM-I's scheduler reads it, or None if it cannot."""
    try:
        return int(data["params"].get("img_index", -1))
    except Exception:
        return None


def llmi_generated_images(text: str, input_images: int = 0) -> int:
    """N_gen: the ``<image>`` placeholders LLM-I's pipeline would leave, no tool being run
    (see the module docstring)."""
    content = _LLMI_THINK.sub("", text) if "<think>" in text else text
    tags = _LLMI_TAG.findall(content)
    literal = content.count("<image>")
    if not tags:
        return literal
    # a placeholder inside a tag's payload disappears with the tag
    literal -= sum(payload.count("<image>") for payload in tags)
    return literal + sum(_llmi_tag_images(tags, input_images))


def llmi_tag_checks(text: str, input_images: int = 0) -> list[bool]:
    """For each tag LLM-I's pipeline finds in the answer (its regex, after dropping
    ``<think>``), whether it yields an image, no tool being run: the tool-call check of
    LLM-I §2.3 as far as it can be made without executing (the same test N_gen counts)."""
    content = _LLMI_THINK.sub("", text) if "<think>" in text else text
    return _llmi_tag_images(_LLMI_TAG.findall(content), input_images)


def _llmi_tag_images(tags: list[str], input_images: int) -> list[bool]:
    total = len(tags)
    made: list[bool] = []
    for i, payload in enumerate(tags):
        data = _llmi_read_tag(payload)
        ok = isinstance(data, dict) and "source" in data
        if ok and data["source"] == "edit":
            target = _llmi_edit_target(data)
            if target is None or not 0 <= target < input_images + total:
                ok = False
            elif target >= input_images:
                earlier = target - input_images
                ok = earlier < i and made[earlier]
        # in the pipeline the limit is the live image pool (inputs + one slot per tag) plus
        # the number of tags; the scheduler's check above is the stricter one
        made.append(ok and _llmi_valid(data, input_images + 2 * total))
    return made


# --------------------------------------------------------------------------- answer files

ID_KEYS = ("trace_id", "id", "item_id", "external_id")
ANSWER_KEYS = ("answer", "response", "output", "prediction", "model_answer", "generation")
MODEL_KEYS = ("model", "model_name")
LIST_KEYS = ("answers", "results", "responses")


@dataclass(slots=True)
class AnswerRecord:
    """One model answer as read from a file, before it is matched to an item."""

    file: str
    where: str  # "line 3" (JSONL) or "record 2 (line 14)" (JSON array)
    model: str
    text: str
    item_id: str | None = None
    input_file: str | None = None
    row_number: int | None = None  # 1-based, LLM-I's sample_index
    prompt: str | None = None
    #: Scores the record already carries (LLM-I's released result format): its ``scores``
    #: and ``justifications`` objects, as read; None when it has none.
    released: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        """How the answer names its item, for messages."""
        if self.item_id is not None:
            return self.item_id
        if self.row_number is not None:
            stem = PurePosixPath((self.input_file or "").replace("\\", "/")).stem
            return f"{stem}#{self.row_number}" if stem else f"row {self.row_number}"
        prompt = " ".join((self.prompt or "").split())
        return f"prompt '{prompt[:40]}{'…' if len(prompt) > 40 else ''}'"


def _model_from_name(name: str) -> str:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.stem == "evaluation_results" and path.parent.name == "json_results":
        return path.parent.parent.name or path.stem
    return path.stem or name


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, max(0, pos)) + 1


def _array_lines(text: str) -> list[int]:
    """1-based line of each element of a JSON array (slow path, for messages only)."""
    decoder = json.JSONDecoder()
    lines: list[int] = []
    pos = text.find("[") + 1
    if pos == 0:
        return lines
    ws = re.compile(r"[\s,]*")
    while True:
        m = ws.match(text, pos)
        pos = m.end() if m else pos
        if pos >= len(text) or text[pos] == "]":
            return lines
        lines.append(_line_of(text, pos))
        try:
            _, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            return lines


def _decode(name: str, data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"not UTF-8 text (bad byte at offset {exc.start}); save the file as UTF-8",
            file=name,
        ) from None
    return text.removeprefix("\ufeff")


def _rows(name: str, text: str) -> tuple[list[Any], list[str] | None]:
    """The records of a JSON array, of a JSON object holding a list of records (``answers``,
    ``results`` or ``responses``, with an optional ``model`` for all), of a single JSON
    object, or of JSONL. Returns ``(values, where)`` with ``where`` naming each JSONL line,
    or ``None`` for JSON files (see ``_where``)."""
    stripped = text.strip()
    if not stripped:
        raise FormatError("the file is empty", file=name)
    if stripped[0] in "[{":
        try:
            whole = orjson.loads(stripped)
        except orjson.JSONDecodeError as exc:
            if stripped[0] == "[":
                at = _line_of(text, exc.pos + len(text) - len(text.lstrip()))
                raise FormatError(f"line {at}: not valid JSON ({exc.msg})", file=name) from None
        else:
            if isinstance(whole, list):
                return whole, None
            if not isinstance(whole, dict):
                raise FormatError("must be a JSON array of answer objects", file=name)
            for key in LIST_KEYS:
                if isinstance(whole.get(key), list):
                    model = next((whole[k] for k in MODEL_KEYS if k in whole), None)
                    if model is None:
                        return whole[key], None
                    return [
                        {"model": model, **v} if isinstance(v, dict) else v for v in whole[key]
                    ], None
            return [whole], None
    values: list[Any] = []
    where: list[str] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            values.append(orjson.loads(line))
        except orjson.JSONDecodeError as exc:
            raise FormatError(
                f"line {n}: not valid JSON ({exc.msg}); expected one answer object per line "
                "(JSONL) or a JSON array",
                file=name,
            ) from None
        where.append(f"line {n}")
    return values, where


def _str_field(record: dict[str, Any], key: str, name: str, where: str) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise FormatError(f"{where}: must be a string", file=name, field=key)
    return str(value)


def read_answer_file(name: str, data: bytes) -> list[AnswerRecord]:
    """Answers from one file: JSONL or a JSON array of objects, each with the answer text
    (``answer``, ``response``, ``output``, ``prediction``, ``model_answer`` or
    ``generation``), what it answers (``trace_id``/``id``/``item_id``/``external_id``, or
    LLM-I's ``input_file`` + ``sample_index``, or ``prompt``) and optionally ``model``
    (default: the file name without extension; LLM-I's ``<model>/json_results/
    evaluation_results.json`` gives ``<model>``). A JSON object ``{"model", "answers": [...]}``
    also works. Raises FormatError naming the file, the line or record, and the field."""
    text = _decode(name, data)
    values, where = _rows(name, text)
    if not values:
        raise FormatError("the file holds no answers", file=name)
    default_model = _model_from_name(name)
    out: list[AnswerRecord] = []
    for i, value in enumerate(values):
        try:
            place = where[i] if where is not None else f"record {i + 1}"
            out.append(_record(value, name, place, default_model))
        except FormatError as exc:
            if where is None:  # a JSON file: say on which line the record starts
                lines = _array_lines(text)
                if i < len(lines):
                    exc.message = exc.message.replace(
                        f"record {i + 1}:", f"record {i + 1} (line {lines[i]}):", 1
                    )
            raise
    # LLM-I numbers rows from 1; a file that uses 0 is taken to count from 0.
    if any(r.row_number == 0 for r in out):
        for r in out:
            if r.row_number is not None:
                r.row_number += 1
    return out


def _record(value: Any, name: str, where: str, default_model: str) -> AnswerRecord:
    if not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__
        raise FormatError(f"{where}: must be an answer object, not {kind}", file=name)
    key = next((k for k in ANSWER_KEYS if k in value), None)
    if key is None:
        raise FormatError(
            f"{where}: no answer text; expected one of {', '.join(ANSWER_KEYS)}",
            file=name,
            field="answer",
        )
    answer = value[key]
    if answer is None:
        answer = ""  # the model gave no answer: scored as an answer without calls
    if not isinstance(answer, str):
        raise FormatError(
            f"{where}: must be a string, not {type(answer).__name__}", file=name, field=key
        )
    model = default_model
    mkey = next((k for k in MODEL_KEYS if k in value), None)
    if mkey is not None:
        raw_model = value[mkey]
        if not isinstance(raw_model, str) or not raw_model.strip():
            raise FormatError(f"{where}: must be a non-empty string", file=name, field=mkey)
        model = raw_model.strip()
    record = AnswerRecord(name, where, model, answer)
    id_key = next((k for k in ID_KEYS if value.get(k) is not None), None)
    if id_key is not None:
        record.item_id = _str_field(value, id_key, name, where)
    record.input_file = _str_field(value, "input_file", name, where)
    prompt = value.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise FormatError(f"{where}: must be a string", file=name, field="prompt")
    record.prompt = prompt
    if isinstance(value.get("scores"), dict):
        record.released = {
            key: value[key]
            for key in ("scores", "justifications")
            if isinstance(value.get(key), dict)
        }
    number = value.get("sample_index")
    if number is not None:
        if isinstance(number, str) and number.strip().isdigit():
            number = int(number.strip())
        if isinstance(number, bool) or not isinstance(number, int) or number < 0:
            raise FormatError(
                f"{where}: must be a row number (an integer >= 0)", file=name, field="sample_index"
            )
        record.row_number = number
    if record.item_id is None and record.row_number is None and record.prompt is None:
        raise FormatError(
            f"{where}: says nothing about which item it answers; add one of "
            f"{', '.join(ID_KEYS)}, or input_file + sample_index, or prompt",
            file=name,
            field="trace_id",
        )
    return record


# --------------------------------------------------------------------------- matching items


@dataclass(frozen=True, slots=True)
class ResolvedAnswer:
    model: str
    item_id: str
    text: str


class ItemIndex:
    """The project's items by external id, by LLM-I row (``<file stem>#<n>``) and by query
    text, to tell which item an answer belongs to."""

    def __init__(self, items: Iterable[tuple[str, str, str]]) -> None:
        """``items``: ``(external_id, source_file, query)`` per item."""
        self.ids: set[str] = set()
        self.by_query: dict[str, list[str]] = {}
        self.files: dict[str, dict[str, str]] = {}  # stem -> {query: id or "" if ambiguous}
        for external_id, source_file, query in items:
            self.ids.add(external_id)
            self.by_query.setdefault(query, []).append(external_id)
            stem = PurePosixPath(source_file.replace("\\", "/")).stem
            if stem:
                rows = self.files.setdefault(stem, {})
                rows[query] = "" if query in rows else external_id

    def resolve(self, record: AnswerRecord) -> str | None:
        """The item's external id, or None when the project has no such item."""
        if record.item_id is not None:
            return record.item_id if record.item_id in self.ids else None
        prompt = record.prompt
        if record.input_file:
            stem = PurePosixPath(record.input_file.replace("\\", "/")).stem
            candidate = f"{stem}#{record.row_number}" if record.row_number is not None else None
            rows = self.files.get(stem, {})
            if candidate in self.ids and (prompt is None or rows.get(prompt) == candidate):
                return candidate
            if prompt is not None and rows.get(prompt):
                return rows[prompt]
            return candidate if candidate in self.ids else None
        if prompt is not None:
            hits = self.by_query.get(prompt, [])
            if len(hits) == 1:
                return hits[0]
        if record.row_number is not None and len(self.files) == 1:
            candidate = f"{next(iter(self.files))}#{record.row_number}"
            return candidate if candidate in self.ids else None
        return None


# --------------------------------------------------------------------------- scoring


@dataclass(frozen=True, slots=True)
class ItemInfo:
    """What scoring needs to know about an item."""

    gold: str | None = None  # verified ground-truth answer text, if any
    image_num: Any = None  # LLM-I image-number constraint, if any
    input_images: int = 0  # LLM-I input images (edit indices start after them)


def _pct(num: float, den: float) -> float | None:
    return 100.0 * num / den if den else None


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


@dataclass
class _Acc:
    """Running totals for one model (or for all of them)."""

    n_answers: int = 0
    n_calls: int = 0
    n_well_formed: int = 0
    calls_hist: Counter[int] = field(default_factory=Counter)
    adopted: Counter[str] = field(default_factory=Counter)
    tool_calls: Counter[str] = field(default_factory=Counter)
    tool_well_formed: Counter[str] = field(default_factory=Counter)
    precision: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    f1: list[float] = field(default_factory=list)
    pred_has: Counter[str] = field(default_factory=Counter)
    gold_has: Counter[str] = field(default_factory=Counter)
    both_have: Counter[str] = field(default_factory=Counter)
    r_rule: list[float] = field(default_factory=list)
    n_gen: list[int] = field(default_factory=list)

    def add(self, facts: AnswerFacts, gold: frozenset[str] | None, rule: Any) -> None:
        self.n_answers += 1
        self.n_calls += facts.n_calls
        self.n_well_formed += facts.n_well_formed
        self.calls_hist[facts.n_calls] += 1
        for call in facts.calls:
            if call.tool is not None:
                self.tool_calls[call.tool] += 1
                self.tool_well_formed[call.tool] += call.well_formed
        tools = facts.tools
        self.adopted.update(tools)
        if gold is not None:
            p, r, f = tool_set_scores(tools, gold)
            self.precision.append(p)
            self.recall.append(r)
            self.f1.append(f)
            self.pred_has.update(tools)
            self.gold_has.update(gold)
            self.both_have.update(tools & gold)
        if rule is not None and facts.n_gen is not None:
            self.n_gen.append(facts.n_gen)
            self.r_rule.append(rule_score(facts.n_gen, rule))

    def result(self, tools: Sequence[str], n_gold_items: int) -> dict[str, Any]:
        names = list(tools) + sorted(set(self.tool_calls) - set(tools))
        per_tool = {}
        for t in names:
            p = _pct(self.both_have[t], self.pred_has[t])
            r = _pct(self.both_have[t], self.gold_has[t])
            per_tool[t] = {
                "adoption": _pct(self.adopted[t], self.n_answers),
                "n_answers_using": self.adopted[t],
                "n_calls": self.tool_calls[t],
                "format_correctness": _pct(self.tool_well_formed[t], self.tool_calls[t]),
                "precision": p,
                "recall": r,
                "f1": (2 * p * r / (p + r) if p + r else 0.0)
                if p is not None and r is not None
                else None,
                "n_gt_queries": self.gold_has[t],
                "n_model_queries": self.pred_has[t],
            }
        top = max(self.calls_hist, default=0)
        n_scored = len(self.f1)
        return {
            "n_answers": self.n_answers,
            "n_calls": self.n_calls,
            "n_well_formed": self.n_well_formed,
            "format_correctness": _pct(self.n_well_formed, self.n_calls),
            "calls_per_answer": {
                "mean": self.n_calls / self.n_answers if self.n_answers else None,
                "histogram": {str(n): self.calls_hist[n] for n in range(top + 1)}
                if self.n_answers
                else {},
            },
            "adoption": {t: per_tool[t]["adoption"] for t in names},
            "tool_set": {
                "n_queries": n_scored,
                "n_missing": max(0, n_gold_items - n_scored),
                "precision": _pct(math.fsum(self.precision), n_scored),
                "recall": _pct(math.fsum(self.recall), n_scored),
                "f1": _pct(math.fsum(self.f1), n_scored),
            },
            "r_rule": {
                "n_answers": len(self.r_rule),
                "mean": _mean(self.r_rule),
                "n_full": sum(1 for s in self.r_rule if s >= 1.0),
                "mean_n_gen": _mean(self.n_gen),
            },
            "per_tool": per_tool,
        }


def score_answers(
    answers: Iterable[ResolvedAnswer],
    items: Mapping[str, ItemInfo],
    *,
    syntax: Syntax,
    toolset: Toolset | None = None,
    tools: Sequence[str] = (),
    progress: Callable[[int], None] | None = None,
    progress_every: int = 500,
) -> dict[str, Any]:
    """Figures per model and over all models, plus the verified ground truth's own call
    statistics. ``items`` describes every item an answer may name; ``tools`` lists the
    toolset's tool names (lower-case) to show even when nobody uses them. ``progress`` is
    called with the number of answers scored so far, every ``progress_every`` answers.

    Raises ValueError when a model answers the same item twice (which answer counts would be
    a guess)."""
    tool_names = [t.lower() for t in tools]
    gold_sets: dict[str, frozenset[str]] = {}
    truth = _Acc()
    for item_id, info in items.items():
        if info.gold is not None:
            facts = answer_facts(info.gold, syntax, toolset, input_images=info.input_images)
            gold_sets[item_id] = facts.tools
            truth.add(facts, None, None)
    models: dict[str, _Acc] = {}
    overall = _Acc()
    seen: set[tuple[str, str]] = set()
    for n, answer in enumerate(answers, start=1):
        if progress is not None and n % progress_every == 0:
            progress(n)
        info = items[answer.item_id]
        if (answer.model, answer.item_id) in seen:
            raise ValueError(f"model {answer.model!r} answers item {answer.item_id} more than once")
        seen.add((answer.model, answer.item_id))
        facts = answer_facts(answer.text, syntax, toolset, input_images=info.input_images)
        gold = gold_sets.get(answer.item_id)
        rule = info.image_num if syntax == "llmi" else None
        models.setdefault(answer.model, _Acc()).add(facts, gold, rule)
        overall.add(facts, gold, rule)
    n_gold = len(gold_sets)
    return {
        "syntax": syntax,
        "models": {
            name: {"model": name, **acc.result(tool_names, n_gold)}
            for name, acc in sorted(models.items())
        },
        "overall": {
            "model": "all models",
            "n_models": len(models),
            **overall.result(tool_names, n_gold * len(models)),
        },
        "ground_truth": {
            "n_items": n_gold,
            **{
                k: v
                for k, v in truth.result(tool_names, n_gold).items()
                if k not in ("tool_set", "r_rule")
            },
        },
    }
