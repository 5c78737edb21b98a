"""The reference-trajectory editor's model of an Agentic-MME task file. Pure: no Django.

The editor works on the task *document*, the dict an Agentic-MME ``json/<task>.json`` holds
(``task_id``, ``meta``, ``input``, ``golden_answer``, ``process_evaluation``). What the annotator
types is a :class:`Draft` of strings, exactly as posted, so a form with mistakes re-renders as
typed. :func:`apply_draft` lays a draft over the stored document the way the format's export
overlays parsed fields over raw JSON: a key is only rewritten when the draft's value differs
from what reading the stored document gives, so saving an unchanged draft returns an equal
document (unknown keys, key order and number types survive).

Steps are the task file's checkpoints, in order. Each step has its intent (``description``),
its tool (``tools[0]``) with arguments (``code_check`` without ``verifier``: ``image_index``,
``bbox_2d`` on the 0-1000 scale, ``angle``, ``direction``, ...), and its checks:

* **V**: ``visual_check {question, expected_answer}`` and the ground-truth intermediate image,
  stored as ``reference_image {sha256, recipe, box_px}`` next to the crop box ``bbox_2d`` the
  file already carries; or only the required operation (``code_check`` with its verifier).
* **S**: ``search_check {keywords, expected, urls}`` (``urls`` are stored, never fetched).
* any step may carry an ``answer_check {match_type, target, tolerance}``.

``reference_image``, ``search_check.urls`` and ``golden_answer.tolerance`` are annotation
fields the released scorer ignores (like the file's ``code_check`` extras).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from benchmark.formats.agentic_mme import join_prompt, split_prompt
from benchmark.imaging import ops
from benchmark.imaging.recipe import Recipe, RecipeError

AXES = ("V", "S")
MATCH_TYPES = ("exact", "contains", "numeric")
LEVELS = (1, 2, 3)
SEARCH_TOOLS = ("google_search", "google_lens_search", "fetch_webpage", "download_image")
GEOMETRIC_OPS = tuple(name for name, spec in ops.OPS.items() if spec.geometric)
PHOTOMETRIC_OPS = ("enhance", "autocontrast", "sharpen", "denoise", "blur")
"""Ops that only clean up an image (a Level 1 crop 'optionally followed by enhancement')."""
ADVANCED_OPS = ("edge_detect", "threshold", "equalize", "invert", "grayscale")
"""Global CV analysis: one of the ways a task qualifies as Level 3 (§2.2)."""

_ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")
_HOST_RE = re.compile(r"^[A-Za-z0-9.-]+$|^\[[0-9A-Fa-f:.]+\]$")


# --------------------------------------------------------------------------- drafts


@dataclass
class StepDraft:
    """One step as the form holds it: strings (and two booleans), as typed."""

    id: str = ""
    axis: str = "V"
    intent: str = ""
    tool: str = ""
    args: str = ""
    check_op: bool = False
    question: str = ""
    expected: str = ""
    keywords: str = ""
    urls: str = ""
    search_expected: str = ""
    ans_match: str = ""
    ans_target: str = ""
    ans_tol: str = ""
    source: str = ""
    recipe: str = ""
    box_px: str = ""
    clear_image: bool = False


@dataclass
class OrderingDraft:
    id: str = ""
    sequence: str = ""
    max_gap: str = ""


@dataclass
class Draft:
    question: str = ""
    format_instruction: str = ""
    expected: str = ""
    match_type: str = ""
    tolerance: str = ""
    variants: str = ""
    level: str = ""
    domain: str = ""
    reference_tool_calls: str = ""
    penalty_per_extra_call: str = ""
    max_tool_calls: str = ""
    steps: list[StepDraft] = field(default_factory=list)
    orderings: list[OrderingDraft] = field(default_factory=list)


STEP_FIELDS = tuple(f.name for f in fields(StepDraft))
ORDERING_FIELDS = tuple(f.name for f in fields(OrderingDraft))
ITEM_FIELDS = tuple(f.name for f in fields(Draft) if f.name not in ("steps", "orderings"))
BOOL_STEP_FIELDS = ("check_op", "clear_image")


@dataclass(frozen=True)
class FieldError:
    """A problem the annotator can fix: ``where`` names the step (or "task", "ordering O1",
    "efficiency"), ``field`` the form field; ``step`` is the 0-based step index or None."""

    where: str
    field: str
    message: str
    step: int | None = None
    ordering: int | None = None

    def __str__(self) -> str:
        return f"{self.where} · {self.field}: {self.message}"


# --------------------------------------------------------------------------- values


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


as_object, as_items = _obj, _list


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return repr(value)
    return str(value) if isinstance(value, str | int | float) else json.dumps(value)


def _lines(values: Any) -> str:
    if isinstance(values, str):
        return values
    if not isinstance(values, list):
        return ""
    return "\n".join(str(v) for v in values)


def checkpoint_args(cp: Mapping[str, Any]) -> dict[str, Any]:
    """A checkpoint's tool arguments: its ``code_check`` without the verifier."""
    return {k: v for k, v in _obj(cp.get("code_check")).items() if k != "verifier"}


def args_text(args: Mapping[str, Any]) -> str:
    return json.dumps(dict(args), ensure_ascii=False) if args else ""


class _Errors:
    def __init__(self) -> None:
        self.items: list[FieldError] = []

    def add(
        self,
        where: str,
        name: str,
        message: str,
        *,
        step: int | None = None,
        ordering: int | None = None,
    ) -> None:
        self.items.append(FieldError(where, name, message, step, ordering))


def _number(text: str) -> float | None:
    try:
        value = float(text.strip().replace(",", "")) if text.strip() else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _integer(text: str) -> int | None:
    text = text.strip()
    if not re.fullmatch(r"[+-]?\d{1,12}", text):
        return None
    return int(text)


def _split_lines(text: str, *, commas: bool = False) -> list[str]:
    parts = re.split(r"[\n\r]+" + (r"|," if commas else ""), text or "")
    return [p.strip() for p in parts if p.strip()]


split_lines = _split_lines


def _keep_number(new: float, old: Any) -> Any:
    """``new`` in the stored number's type when equal (an int stays an int); whole numbers
    otherwise as ints."""
    if isinstance(old, int | float) and not isinstance(old, bool) and float(old) == new:
        return old
    return int(new) if new.is_integer() else new


def url_problem(url: str) -> str | None:
    """Why ``url`` is not an http(s) URL the editor stores, or None."""
    if any(c.isspace() for c in url):
        return f"{url!r} contains spaces"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"{url!r} is not a valid URL ({exc})"
    if parts.scheme.lower() not in ("http", "https"):
        return f"{url!r} must start with http:// or https://"
    host = parts.hostname or ""
    if not host or not _HOST_RE.match(host) or (host.count(".") == 0 and host != "localhost"):
        return f"{url!r} has no valid host name"
    if port == 0:
        return f"{url!r} has an invalid port"
    if len(url) > 2000:
        return "a URL longer than 2000 characters"
    return None


# --------------------------------------------------------------------------- the table
#
# Every plain form field is one row: the draft attribute (the form field), its path in the
# document, the name messages give it, and how its text is read, checked and stored back. Reading
# a document into a draft and laying a draft over a document both walk these rows, so adding a
# checkpoint field is one row in STEP_ROWS (and its attribute on StepDraft). What is not a plain
# field (the prompt, a step's id and axis, its operation check and its ground-truth image, an
# ordering's id) has its own handler below.


class _Invalid(ValueError):
    """The typed text is not a value the field takes; the message says why."""


@dataclass(frozen=True)
class Choices:
    """What a changed value must come from: the project's tools and domains, and the step ids an
    ordering constraint may name."""

    tools: frozenset[str] = frozenset()
    domains: frozenset[str] = frozenset()
    step_ids: frozenset[str] = frozenset()


class Kind:
    """How a stored value reads as the form's text, and how posted text is stored back. Text is
    compared stripped with what reading the stored value gives; unchanged text keeps the stored
    value as it is (its type and spelling)."""

    def read(self, stored: Any) -> str:
        return _text(stored)

    def same(self, raw: str, stored: Any) -> bool:
        return raw.strip() == self.read(stored)

    def parse(self, text: str, stored: Any) -> Any:
        return text


class AsTyped(Kind):
    """Free text compared as typed (an imported value with spaces around it stays as it is)."""

    def same(self, raw: str, stored: Any) -> bool:
        return raw == self.read(stored)


class Lines(Kind):
    """One entry a line; compared as the list of entries."""

    def read(self, stored: Any) -> str:
        return _lines(stored)

    def same(self, raw: str, stored: Any) -> bool:
        return self.parse(raw, stored) == _split_lines(self.read(stored))

    def parse(self, text: str, stored: Any) -> Any:
        return _split_lines(text)


class StepIds(Kind):
    """Step ids separated by commas, arrows or lines; compared with the stored list."""

    def read(self, stored: Any) -> str:
        return ", ".join(str(s) for s in _list(stored))

    def same(self, raw: str, stored: Any) -> bool:
        return bool(self.parse(raw, stored) == stored)

    def parse(self, text: str, stored: Any) -> Any:
        return _split_lines(text.replace("→", ","), commas=True)


class FirstOf(Kind):
    """A one-element list (a checkpoint's ``tools``), empty when the text is."""

    def read(self, stored: Any) -> str:
        items = _list(stored)
        return _text(items[0]) if items else ""

    def parse(self, text: str, stored: Any) -> Any:
        return [text] if text else []


class Whole(Kind):
    def __init__(self, least: int) -> None:
        self.least = least

    def parse(self, text: str, stored: Any) -> Any:
        value = _integer(text)
        if value is None or value < self.least:
            raise _Invalid(f"{text!r} is not a whole number ≥ {self.least}")
        return value


class Number(Kind):
    """A number within ``low``..``high``, kept in the stored number's type when equal."""

    def __init__(self, low: float, high: float | None, wording: str) -> None:
        self.low, self.high, self.wording = low, high, wording

    def parse(self, text: str, stored: Any) -> Any:
        number = _number(text)
        if number is None or number < self.low or (self.high is not None and number > self.high):
            raise _Invalid(f"{text!r} is not a number {self.wording}")
        return _keep_number(number, stored)


class Level(Kind):
    def parse(self, text: str, stored: Any) -> Any:
        level = _integer(text)
        if level not in LEVELS:
            raise _Invalid("choose level 1, 2 or 3")
        return level


TEXT, AS_TYPED, LINES, SEQUENCE, FIRST = Kind(), AsTyped(), Lines(), StepIds(), FirstOf()
AT_LEAST_0 = Number(0, None, "≥ 0")

Rule = Callable[[str, Any, Choices], list[str]]
"""A check that runs on every save: (posted text, the draft object it belongs to, choices) →
messages."""
Allowed = Callable[[str, Choices], str | None]
"""A check that runs when the value changes (imported values are kept as they are)."""


@dataclass(frozen=True)
class Row:
    field: str
    path: tuple[str, ...]
    label: str
    kind: Kind = TEXT
    required: str = ""
    """The message when the field is left empty (empty required fields are never stored)."""
    optional: bool = False
    """Emptying the field removes the key."""
    allowed: Allowed | None = None
    rule: Rule | None = None
    rewrite_blank: bool = False
    """Store the text even unchanged when the stored value reads empty (or is missing)."""


def _one_of(choices: Iterable[str]) -> Allowed:
    options = tuple(choices)
    return lambda text, _: None if text in options else f"choose one of {', '.join(options)}"


def _in_toolset(tool: str, choices: Choices) -> str | None:
    if tool and tool not in choices.tools:
        return f"{tool!r} is not in the project's toolset"
    return None


def _in_taxonomy(domain: str, choices: Choices) -> str | None:
    if choices.domains and domain and domain not in choices.domains:
        return f"{domain!r} is not a domain of the project's taxonomy"
    return None


def _final_answer_numeric(raw: str, draft: Any, _: Choices) -> list[str]:
    if draft.match_type.strip() == "numeric" and _number(raw) is None:
        return [f"{raw!r} is not a number (match: numeric)"]
    return []


def _target_numeric(raw: str, step: Any, _: Choices) -> list[str]:
    target = raw.strip()
    if step.ans_match.strip() == "numeric" and _number(target) is None:
        return [f"{target!r} is not a number"]
    return []


def _needs(other: str, missing: str) -> Rule:
    """A visual check is a question and its expected answer: one without the other is missing."""

    def rule(raw: str, step: Any, _: Choices) -> list[str]:
        if not raw.strip() and getattr(step, other).strip():
            return [f"a visual check needs its {missing}"]
        return []

    return rule


def _urls(raw: str, step: Any, _: Choices) -> list[str]:
    return [problem for url in _split_lines(raw) if (problem := url_problem(url))]


def _sequence(raw: str, ordering: Any, choices: Choices) -> list[str]:
    sequence = SEQUENCE.parse(raw, None)
    messages = [] if len(sequence) >= 2 else ["name at least two step ids, e.g. C1, C2"]
    unknown = [s for s in sequence if s not in choices.step_ids]
    if unknown:
        messages.append(f"no step has the id {', '.join(unknown)}")
    return messages


GOLDEN, META = "golden_answer", "meta"
TASK_ROWS = (
    Row("match_type", (GOLDEN, "match_type"), "match type", allowed=_one_of(MATCH_TYPES)),
    Row(
        "expected",
        (GOLDEN, "value"),
        "final answer",
        AS_TYPED,
        required="write the expected final answer",
        rule=_final_answer_numeric,
    ),
    Row("tolerance", (GOLDEN, "tolerance"), "tolerance", AT_LEAST_0, optional=True),
    Row("variants", (GOLDEN, "accepted_variants"), "accepted variants", LINES),
    Row("level", (META, "level"), "level", Level()),
    Row("domain", (META, "domain"), "domain", allowed=_in_taxonomy),
)
"""The task's fields, from the document's top (the prompt has its own handler)."""

EFFICIENCY = ("process_evaluation", "efficiency")
EFFICIENCY_ROWS = (
    Row("reference_tool_calls", ("reference_tool_calls",), "reference tool calls", Whole(0),
        optional=True),
    Row("penalty_per_extra_call", ("penalty_per_extra_call",), "penalty per extra call",
        Number(0, 1, "from 0 to 1"), optional=True),
    Row("max_tool_calls", ("max_tool_calls",), "max tool calls", Whole(0), optional=True),
)  # fmt: skip
"""The task's efficiency budget, from ``process_evaluation.efficiency``."""

STEP_ROWS = (
    Row("intent", ("description",), "intent", AS_TYPED,
        required="say in words what this step does"),
    Row("tool", ("tools",), "tool", FIRST, allowed=_in_toolset),
    Row("question", ("visual_check", "question"), "question",
        rule=_needs("expected", "question")),
    Row("expected", ("visual_check", "expected_answer"), "expected answer",
        rule=_needs("question", "expected answer")),
    Row("keywords", ("search_check", "keywords"), "keywords", LINES,
        required="a search step needs at least one keyword"),
    Row("search_expected", ("search_check", "expected"), "expected answer",
        required="say what the search is expected to find"),
    Row("urls", ("search_check", "urls"), "reference URLs", LINES, optional=True, rule=_urls),
    Row("ans_match", ("answer_check", "match_type"), "answer match",
        allowed=_one_of(MATCH_TYPES), rewrite_blank=True),
    Row("ans_target", ("answer_check", "target"), "answer target",
        required="write the answer this step checks", rule=_target_numeric, rewrite_blank=True),
    Row("ans_tol", ("answer_check", "tolerance"), "answer tolerance", AT_LEAST_0, optional=True),
)  # fmt: skip
"""A step's fields, from its checkpoint. A two-key path is a field of one of the step's checks
(see CHECKS)."""


@dataclass(frozen=True)
class Check:
    """One kind of check a step carries, stored under ``key`` in its checkpoint: its fields are
    the STEP_ROWS under that key. ``axis`` limits it to V or S steps. An ``optional`` check is
    there while any of its fields is filled in and goes when all are emptied; a required one is
    always there on its axis."""

    key: str
    axis: str | None
    optional: bool

    @property
    def rows(self) -> tuple[Row, ...]:
        return tuple(row for row in STEP_ROWS if row.path[0] == self.key)


CHECKS = (
    Check("visual_check", axis="V", optional=True),
    Check("search_check", axis="S", optional=False),
    Check("answer_check", axis=None, optional=True),
)
CHECKPOINT_ROWS = tuple(row for row in STEP_ROWS if len(row.path) == 1)

ORDERING_ROWS = (
    Row("sequence", ("sequence",), "sequence", SEQUENCE, rule=_sequence),
    Row("max_gap", ("max_gap",), "max gap", Whole(1), optional=True),
)
"""An ordering constraint's fields (its id has its own handler)."""


def _get(node: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _put(node: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def _pop(node: dict[str, Any], path: tuple[str, ...]) -> None:
    parent = _get(node, path[:-1])
    if isinstance(parent, dict):
        parent.pop(path[-1], None)


def _read(node: Mapping[str, Any], rows: Iterable[Row]) -> dict[str, Any]:
    return {row.field: row.kind.read(_get(node, row.path)) for row in rows}


# --------------------------------------------------------------------------- reading


def step_draft(cp: Mapping[str, Any]) -> StepDraft:
    image = _obj(cp.get("reference_image"))
    recipe = image.get("recipe")
    return StepDraft(
        id=_text(cp.get("id")),
        axis=_text(cp.get("axis")) or "V",
        **_read(cp, STEP_ROWS),
        args=args_text(checkpoint_args(cp)),
        check_op="code_check" in cp,
        source=_text(_obj(recipe).get("source_sha256")),
        recipe=json.dumps(recipe, sort_keys=True) if isinstance(recipe, dict) else "",
        box_px=json.dumps(image.get("box_px")) if image.get("box_px") is not None else "",
    )


def draft_from_document(doc: Mapping[str, Any]) -> Draft:
    question, instruction = split_prompt(_text(_get(doc, ("input", "prompt"))))
    process = _obj(doc.get("process_evaluation"))
    return Draft(
        question=question,
        format_instruction=instruction,
        **_read(doc, TASK_ROWS),
        **_read(_obj(_get(doc, EFFICIENCY)), EFFICIENCY_ROWS),
        steps=[step_draft(cp) for cp in _list(process.get("checkpoints")) if isinstance(cp, dict)],
        orderings=[
            OrderingDraft(id=_text(o.get("id")), **_read(o, ORDERING_ROWS))
            for o in _list(process.get("ordering_constraints"))
            if isinstance(o, dict)
        ],
    )


# --------------------------------------------------------------------------- editing the draft


def next_step_id(draft: Draft) -> str:
    used = {s.id for s in draft.steps}
    n = len(draft.steps) + 1
    while f"C{n}" in used:
        n += 1
    return f"C{n}"


def next_ordering_id(draft: Draft) -> str:
    used = {o.id for o in draft.orderings}
    n = len(draft.orderings) + 1
    while f"O{n}" in used:
        n += 1
    return f"O{n}"


def draft_edit(draft: Draft, op: str) -> Draft:
    """An unsaved edit of the working draft: ``add:V``, ``add:S``, ``remove:<i>``,
    ``up:<i>``, ``down:<i>``, ``add-ordering``, ``remove-ordering:<i>``. Unknown or
    out-of-range operations leave the draft as it is."""
    steps, orderings = list(draft.steps), list(draft.orderings)
    name, _, arg = op.partition(":")
    index = int(arg) if arg.isdigit() else -1
    if name == "add" and arg in AXES:
        tool = "google_search" if arg == "S" else ""
        steps.append(StepDraft(id=next_step_id(draft), axis=arg, tool=tool, check_op=arg == "V"))
    elif name == "remove" and 0 <= index < len(steps):
        del steps[index]
    elif name == "up" and 0 < index < len(steps):
        steps[index - 1], steps[index] = steps[index], steps[index - 1]
    elif name == "down" and 0 <= index < len(steps) - 1:
        steps[index + 1], steps[index] = steps[index], steps[index + 1]
    elif name == "add-ordering":
        orderings.append(OrderingDraft(id=next_ordering_id(draft)))
    elif name == "remove-ordering" and 0 <= index < len(orderings):
        del orderings[index]
    return replace(draft, steps=steps, orderings=orderings)


# --------------------------------------------------------------------------- applying


def _recipe_of(text: str) -> dict[str, Any] | None:
    """A posted recipe, normalized; None when empty or without steps."""
    if not text or not text.strip():
        return None
    data = json.loads(text)
    if data in (None, {}, ""):
        return None
    recipe = Recipe.from_dict(data)
    return recipe.to_dict() if recipe.steps else None


def normalized_recipe(data: Any) -> dict[str, Any] | None:
    try:
        return Recipe.from_dict(data).to_dict() if isinstance(data, dict) else None
    except RecipeError:
        return None


def crop_bbox(recipe: Mapping[str, Any]) -> list[int | float] | None:
    """The 0-1000 box of the recipe's last crop, whole numbers kept whole."""
    box = None
    for step in recipe.get("steps") or []:
        if step.get("op") == "crop" and step.get("params", {}).get("bbox_2d") is not None:
            box = step["params"]["bbox_2d"]
    if box is None:
        return None
    return [int(v) if float(v).is_integer() else round(float(v), 3) for v in box]


@dataclass
class ImageChange:
    """A step whose ground-truth image must be (re-)derived from ``recipe`` on save."""

    step: int
    step_id: str
    recipe: dict[str, Any]
    box_px: list[int] | None


@dataclass
class Applied:
    document: dict[str, Any]
    errors: list[FieldError]
    image_changes: list[ImageChange]


Report = Callable[[str, str], None]
"""Records a message about one field (its label, the message) at the place being applied."""


def _overlay(
    node: dict[str, Any],
    rows: Iterable[Row],
    draft: Any,
    choices: Choices,
    report: Report,
    *,
    depth: int = 0,
    force: bool = False,
) -> None:
    """Lay the rows' fields of ``draft`` over ``node`` (the rows' paths start ``depth`` keys
    above it); ``force`` stores every field, as for a new checkpoint."""
    for row in rows:
        _overlay_row(node, row, draft, choices, report, row.path[depth:], force)


def _overlay_row(
    node: dict[str, Any],
    row: Row,
    draft: Any,
    choices: Choices,
    report: Report,
    path: tuple[str, ...],
    force: bool,
) -> None:
    raw: str = getattr(draft, row.field)
    text = raw.strip()
    if row.required and not text:
        report(row.label, row.required)
        return
    for message in row.rule(raw, draft, choices) if row.rule else ():
        report(row.label, message)
    stored = _get(node, path)
    changed = force or not row.kind.same(raw, stored)
    if not changed and not (row.rewrite_blank and not row.kind.read(stored)):
        return
    if row.optional and not text:
        _pop(node, path)
        return
    try:
        value = row.kind.parse(text, stored)
    except _Invalid as exc:
        report(row.label, str(exc))
        return
    problem = row.allowed(text, choices) if changed and row.allowed else None
    if problem:
        report(row.label, problem)
    _put(node, path, value)


def apply_draft(
    doc: Mapping[str, Any],
    draft: Draft,
    *,
    tools: Iterable[str] = (),
    domains: Iterable[str] = (),
    prefill: Mapping[str, Mapping[str, Any]] | None = None,
) -> Applied:
    """Lay ``draft`` over ``doc`` (not changed). ``tools`` and ``domains`` are the choices a
    *changed* value must come from (unchanged imported values are kept as they are);
    ``prefill`` maps a step id to the recipe the editor was shown for it without a stored
    image (a posted recipe equal to it is not a change)."""
    errors = _Errors()
    out: dict[str, Any] = copy.deepcopy(dict(doc))
    choices = Choices(
        tools=frozenset(tools) | frozenset(ops.OPS),
        domains=frozenset(domains),
        step_ids=frozenset(s.id for s in draft.steps),
    )
    missing = _apply_task(out, doc, draft, choices, errors)
    process = out.get("process_evaluation")
    if not isinstance(process, dict):
        process = out["process_evaluation"] = {}
    image_changes = _apply_steps(process, draft.steps, choices, errors, prefill or {})
    _apply_orderings(process, draft.orderings, choices, errors)
    _apply_efficiency(process, draft, choices, errors)
    for key in missing:
        if out.get(key) == {}:
            del out[key]
    return Applied(out, errors.items, image_changes)


TASK_OBJECTS = ("meta", "input", "golden_answer")


def _apply_task(
    out: dict[str, Any], doc: Mapping[str, Any], draft: Draft, choices: Choices, errors: _Errors
) -> list[str]:
    """The question and the task's fields; the objects the document lacked (removed again when
    they stay empty)."""
    missing = [key for key in TASK_OBJECTS if key not in out]
    for key in TASK_OBJECTS:
        if not isinstance(out.get(key), dict):
            out[key] = {}
    report = partial(errors.add, "task")
    if not draft.question.strip():
        report("question", "write the final question")
    old = split_prompt(_text(_get(doc, ("input", "prompt"))))
    if join_prompt(draft.question, draft.format_instruction) != join_prompt(*old):
        prompt = join_prompt(draft.question.strip(), draft.format_instruction.strip())
        out["input"]["prompt"] = prompt
    _overlay(out, TASK_ROWS, draft, choices, report)
    return missing


def _apply_steps(
    process: dict[str, Any],
    steps: list[StepDraft],
    choices: Choices,
    errors: _Errors,
    prefill: Mapping[str, Mapping[str, Any]],
) -> list[ImageChange]:
    old_cps = [cp for cp in _list(process.get("checkpoints")) if isinstance(cp, dict)]
    by_id = {str(cp.get("id")): cp for cp in old_cps if cp.get("id") is not None}
    seen: dict[str, int] = {}
    new_cps: list[dict[str, Any]] = []
    image_changes: list[ImageChange] = []
    for i, step in enumerate(steps):
        where = f"step {i + 1}" + (f" ({step.id})" if step.id else "")
        report: Report = partial(errors.add, where, step=i)
        if not _ID_RE.match(step.id or ""):
            report("id", "an id of letters, digits, _ . - (e.g. C3)")
        elif step.id in seen:
            report("id", f"{step.id} is also step {seen[step.id] + 1}'s id")
        seen.setdefault(step.id, i)
        cp, change = _apply_step(by_id.get(step.id, {}), step, i, report, choices, prefill)
        new_cps.append(cp)
        if change is not None:
            image_changes.append(change)
    if new_cps != old_cps:
        process["checkpoints"] = new_cps
    return image_changes


def _apply_step(
    base: Mapping[str, Any],
    step: StepDraft,
    i: int,
    report: Report,
    choices: Choices,
    prefill: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[str, Any], ImageChange | None]:
    """One checkpoint: ``base`` is the stored one with the step's id ({} for a new step)."""
    cp: dict[str, Any] = copy.deepcopy(dict(base)) if base else {"id": step.id}
    axis = _apply_axis(cp, base, step, report)
    _overlay(cp, CHECKPOINT_ROWS, step, choices, report, force=not base)
    _apply_operation(cp, base, step, report)
    for check in CHECKS:
        if check.axis in (None, axis):
            _apply_check(cp, check, step, choices, report, new=not base)
    return cp, _apply_image(cp, step, i, axis, report, prefill)


DROPPED_WITH_AXIS = {"S": ("visual_check", "reference_image"), "V": ("search_check",)}
"""What a step that changes to this axis no longer carries."""


def _apply_axis(
    cp: dict[str, Any], base: Mapping[str, Any], step: StepDraft, report: Report
) -> str:
    axis = step.axis.strip().upper()
    if axis not in AXES:
        report("checkpoint", "choose V (visual) or S (search)")
    if not base or axis != (_text(base.get("axis")) or "V"):
        cp["axis"] = axis
        for key in DROPPED_WITH_AXIS.get(axis, ()) if base else ():
            cp.pop(key, None)
    return axis


def _apply_check(
    cp: dict[str, Any], check: Check, step: StepDraft, choices: Choices, report: Report, *,
    new: bool,
) -> None:  # fmt: skip
    stored = _obj(cp.get(check.key))
    if check.optional:
        if all(row.kind.same(getattr(step, row.field), _get(stored, row.path[1:]))
               for row in check.rows):  # fmt: skip
            return
        if not any(getattr(step, row.field).strip() for row in check.rows):
            cp.pop(check.key, None)
            return
    node = dict(stored)
    _overlay(node, check.rows, step, choices, report, depth=1, force=new and not check.optional)
    if node != stored or check.key not in cp:
        cp[check.key] = node


KEEP_ARGUMENTS = "tick 'check the operation' to keep its arguments"


def _apply_operation(
    cp: dict[str, Any], base: Mapping[str, Any], step: StepDraft, report: Report
) -> None:
    """The tool's arguments and the operation check (``code_check``: the arguments and, for an
    image operation, its verifier)."""
    tool = step.tool.strip()
    old_tool = FIRST.read(base.get("tools"))
    args = _posted_args(step, base, report)
    args_changed = args != checkpoint_args(base)
    if args_changed or tool != old_tool:
        _check_args(tool, args, report)
    if step.check_op:
        retooled = bool(base) and tool != old_tool
        cp["code_check"] = _code_check(cp, tool, args, retooled, args_changed)
    elif "code_check" in cp:
        if args and args_changed:
            report("arguments", KEEP_ARGUMENTS)
        cp.pop("code_check")
    elif args:
        report("arguments", KEEP_ARGUMENTS)


def _posted_args(step: StepDraft, base: Mapping[str, Any], report: Report) -> dict[str, Any]:
    try:
        args = json.loads(step.args) if step.args.strip() else {}
    except ValueError:
        args = None
    if not isinstance(args, dict):
        report("arguments", 'write a JSON object, e.g. {"angle": 90}')
        return checkpoint_args(base)
    return args


def _code_check(
    cp: Mapping[str, Any], tool: str, args: dict[str, Any], retooled: bool, args_changed: bool
) -> dict[str, Any]:
    code = cp.get("code_check") if isinstance(cp.get("code_check"), dict) else None
    if code is None or retooled:
        code = {"verifier": f"verify_{tool}_ast"} if tool in ops.OPS else {}
    if args_changed or retooled or "code_check" not in cp:
        code = {**({"verifier": code["verifier"]} if "verifier" in code else {}), **args}
    return code


def _check_args(tool: str, args: dict[str, Any], report: Report) -> None:
    index = args.get("image_index")
    if "image_index" in args and (
        isinstance(index, bool) or not isinstance(index, int) or index < 0
    ):
        report("arguments", "image_index must be a whole number, 0 or more")
    spec = ops.OPS.get(tool)
    if spec is None:
        return
    params = {k: v for k, v in args.items() if k != "image_index"}
    known = {p.name for p in spec.params}
    unknown = sorted(k for k in params if k not in known)
    if unknown:
        expected = ", ".join(["image_index", *sorted(known)])
        report("arguments", f"{tool} has no argument {', '.join(unknown)} (expected: {expected})")
        return
    try:
        ops.validate_params(tool, params)
    except ops.OpError as exc:
        # With no arguments at all, the check is the verifier alone (the crop box may come
        # from the image editor, an enhance may be any enhance).
        if exc.param is not None or params:
            report("arguments", str(exc))


def _apply_image(
    cp: dict[str, Any],
    step: StepDraft,
    i: int,
    axis: str,
    report: Report,
    prefill: Mapping[str, Mapping[str, Any]],
) -> ImageChange | None:
    """The ground-truth intermediate image: cleared, or a posted recipe that differs from the
    one stored (or shown) becomes an image to derive on save."""
    if step.clear_image and "reference_image" in cp:
        cp.pop("reference_image")
        return None
    if axis != "V" or not step.recipe.strip():
        return None
    try:
        posted = _recipe_of(step.recipe)
    except (ValueError, RecipeError) as exc:
        report("image", f"the image edit cannot be read: {exc}")
        return None
    stored = normalized_recipe(_obj(cp.get("reference_image")).get("recipe"))
    if posted is None or posted == (stored or normalized_recipe(prefill.get(step.id))):
        return None
    box = crop_bbox(posted)
    if box is not None and step.check_op and step.tool.strip() == "crop":
        cp["code_check"] = {**_obj(cp.get("code_check")), "bbox_2d": box}
    return ImageChange(i, step.id, posted, _box(step.box_px))


def _apply_orderings(
    process: dict[str, Any], orderings: list[OrderingDraft], choices: Choices, errors: _Errors
) -> None:
    old = [o for o in _list(process.get("ordering_constraints")) if isinstance(o, dict)]
    by_id = {str(o.get("id")): o for o in old}
    new = []
    for j, od in enumerate(orderings):
        where = f"ordering {j + 1}" + (f" ({od.id})" if od.id else "")
        report: Report = partial(errors.add, where, ordering=j)
        base = by_id.get(od.id, {})
        o = copy.deepcopy(base) if base else {"id": od.id}
        if not _ID_RE.match(od.id or ""):
            report("id", "an id of letters, digits, _ . - (e.g. O1)")
        o["id"] = base.get("id", od.id) if str(base.get("id")) == od.id else od.id
        _overlay(o, ORDERING_ROWS, od, choices, report)
        new.append(o)
    if new != old:
        process["ordering_constraints"] = new


def _apply_efficiency(
    process: dict[str, Any], draft: Draft, choices: Choices, errors: _Errors
) -> None:
    stored = process.get("efficiency")
    eff: dict[str, Any] = copy.deepcopy(stored) if isinstance(stored, dict) else {}
    report = partial(errors.add, "efficiency")
    _overlay(eff, EFFICIENCY_ROWS, draft, choices, report)
    ref, most = eff.get("reference_tool_calls"), eff.get("max_tool_calls")
    if isinstance(ref, int) and isinstance(most, int) and most < ref:
        report("max tool calls", f"{most} is below the reference tool calls ({ref})")
    if "reference_tool_calls" not in eff:
        report("reference tool calls", "required: the human trajectory's calls")
    if eff != (stored if isinstance(stored, dict) else {}):
        process["efficiency"] = eff


def _box(text: str) -> list[int] | None:
    try:
        value = json.loads(text) if text and text.strip() else None
    except ValueError:
        return None
    if isinstance(value, dict):
        value = [value.get(k) for k in ("left", "top", "right", "bottom")]
    if (
        isinstance(value, list)
        and len(value) == 4
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        return [round(v) for v in value]
    return None


def set_reference_image(
    doc: dict[str, Any], step_index: int, *, sha256: str, recipe: dict[str, Any], box_px: Any
) -> None:
    """Record the derived image of the ``step_index``-th checkpoint in ``doc``."""
    cp = doc["process_evaluation"]["checkpoints"][step_index]
    cp["reference_image"] = {"sha256": sha256, "recipe": recipe, "box_px": box_px}


# --------------------------------------------------------------------------- reading back


def fingerprint(doc: Mapping[str, Any]) -> str:
    """What a save is checked against: the SHA-256 of the document's canonical JSON."""
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def step_tools(checkpoints: Sequence[Mapping[str, Any]]) -> list[str]:
    """The tool of every checkpoint that uses one, in order."""
    out: list[str] = []
    for cp in checkpoints:
        tools = _list(cp.get("tools"))
        out.extend(str(t) for t in tools[:1] if t)
    return out


def level_warnings(doc: Mapping[str, Any]) -> list[str]:
    """Where the steps do not fit the level (Agentic-MME §2.2): Level 1 is one visual
    operation (a crop, optionally cleaned up by an enhancement) and no search; Level 2 a short,
    mostly linear chain of a few operations, possibly with a search; Level 3 an intertwined,
    multi-round use of visual and search tools, or advanced CV analysis."""
    level = _obj(doc.get("meta")).get("level")
    process = _obj(doc.get("process_evaluation"))
    tools = step_tools([cp for cp in _list(process.get("checkpoints")) if isinstance(cp, dict)])
    if level is None:
        warnings = ["No level set."]
    else:
        rule = LEVEL_RULES.get(level) if isinstance(level, int | float) else None
        warnings = rule(tools) if rule is not None else []
    ref = _obj(process.get("efficiency")).get("reference_tool_calls")
    if isinstance(ref, int) and not isinstance(ref, bool) and tools and ref != len(tools):
        warnings.append(
            f"Reference tool calls is {ref}, but {len(tools)} step(s) use a tool; overthinking "
            "is measured against this number."
        )
    return warnings


def _searches(tools: Sequence[str]) -> list[str]:
    return [t for t in tools if t in SEARCH_TOOLS]


def _visual(tools: Sequence[str]) -> list[str]:
    return [t for t in tools if t not in SEARCH_TOOLS]


def _level_1(tools: Sequence[str]) -> list[str]:
    searches, visual = _searches(tools), _visual(tools)
    main_visual = [t for t in visual if t not in PHOTOMETRIC_OPS]
    warnings: list[str] = []
    if searches:
        warnings.append(
            f"Level 1 uses no search, but {len(searches)} step(s) search "
            f"({', '.join(searches)}); consider Level 2."
        )
    if not visual:
        warnings.append("Level 1 is one visual operation, but no step uses an image tool.")
    elif len(main_visual) > 1:
        warnings.append(
            f"Level 1 is one visual operation, but the steps use {len(main_visual)} "
            f"({', '.join(main_visual)}); consider Level 2."
        )
    return warnings


def _level_2(tools: Sequence[str]) -> list[str]:
    warnings: list[str] = []
    if len(tools) <= 1 and not _searches(tools):
        warnings.append("Level 2 needs more than one action; one visual operation is Level 1.")
    if len(tools) > 4:
        warnings.append(
            f"Level 2 is a short chain (usually within three rounds), but the steps make "
            f"{len(tools)} tool calls; consider Level 3."
        )
    if _interleaved(tools):
        warnings.append(
            "Visual steps come both before and after a search (a hypothesis-verification "
            "loop), which is Level 3's pattern."
        )
    return warnings


def _level_3(tools: Sequence[str]) -> list[str]:
    warnings: list[str] = []
    if len(tools) < 3:
        warnings.append(
            f"Level 3 needs intertwined, multi-round work, but the steps make only "
            f"{len(tools)} tool call(s)."
        )
    advanced = any(t in ADVANCED_OPS for t in _visual(tools))
    if not _searches(tools) and not advanced and len(tools) >= 1:
        warnings.append(
            "Level 3 couples visual operations with search, or needs advanced CV analysis "
            "(edge detection, thresholding, ...); these steps do neither."
        )
    return warnings


LEVEL_RULES: dict[Any, Callable[[Sequence[str]], list[str]]] = {
    1: _level_1,
    2: _level_2,
    3: _level_3,
}
"""What each level's steps should look like; a level outside these gets no warning."""


def _interleaved(tools: Sequence[str]) -> bool:
    kinds = "".join("s" if t in SEARCH_TOOLS else "v" for t in tools)
    return "vs" in kinds and "v" in kinds[kinds.index("vs") + 2 :]
