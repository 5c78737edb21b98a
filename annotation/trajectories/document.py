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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
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


# --------------------------------------------------------------------------- reading


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


def step_draft(cp: Mapping[str, Any]) -> StepDraft:
    tools = _list(cp.get("tools"))
    visual = _obj(cp.get("visual_check"))
    search = _obj(cp.get("search_check"))
    answer = _obj(cp.get("answer_check"))
    image = _obj(cp.get("reference_image"))
    recipe = image.get("recipe")
    return StepDraft(
        id=_text(cp.get("id")),
        axis=_text(cp.get("axis")) or "V",
        intent=_text(cp.get("description")),
        tool=_text(tools[0]) if tools else "",
        args=args_text(checkpoint_args(cp)),
        check_op="code_check" in cp,
        question=_text(visual.get("question")),
        expected=_text(visual.get("expected_answer")),
        keywords=_lines(search.get("keywords")),
        urls=_lines(search.get("urls")),
        search_expected=_text(search.get("expected")),
        ans_match=_text(answer.get("match_type")) if answer else "",
        ans_target=_text(answer.get("target")),
        ans_tol=_text(answer.get("tolerance")),
        source=_text(_obj(recipe).get("source_sha256")),
        recipe=json.dumps(recipe, sort_keys=True) if isinstance(recipe, dict) else "",
        box_px=json.dumps(image.get("box_px")) if image.get("box_px") is not None else "",
    )


def draft_from_document(doc: Mapping[str, Any]) -> Draft:
    meta = _obj(doc.get("meta"))
    prompt = _text(_obj(doc.get("input")).get("prompt"))
    question, instruction = split_prompt(prompt)
    golden = _obj(doc.get("golden_answer"))
    process = _obj(doc.get("process_evaluation"))
    efficiency = _obj(process.get("efficiency"))
    checkpoints = _list(process.get("checkpoints"))
    orderings = process.get("ordering_constraints")
    return Draft(
        question=question,
        format_instruction=instruction,
        expected=_text(golden.get("value")),
        match_type=_text(golden.get("match_type")),
        tolerance=_text(golden.get("tolerance")),
        variants=_lines(golden.get("accepted_variants")),
        level=_text(meta.get("level")),
        domain=_text(meta.get("domain")),
        reference_tool_calls=_text(efficiency.get("reference_tool_calls")),
        penalty_per_extra_call=_text(efficiency.get("penalty_per_extra_call")),
        max_tool_calls=_text(efficiency.get("max_tool_calls")),
        steps=[step_draft(cp) for cp in checkpoints if isinstance(cp, dict)],
        orderings=[
            OrderingDraft(
                id=_text(o.get("id")),
                sequence=", ".join(str(s) for s in o.get("sequence") or []),
                max_gap=_text(o.get("max_gap")),
            )
            for o in (orderings if isinstance(orderings, list) else [])
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


def _set(node: dict[str, Any], key: str, new: Any, old: Any) -> None:
    """Overlay one key: write only when the value differs from what is stored."""
    if new != old:
        node[key] = new


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


def _check_args(tool: str, args: dict[str, Any], errors: _Errors, where: str, i: int) -> None:
    index = args.get("image_index")
    if "image_index" in args and (
        isinstance(index, bool) or not isinstance(index, int) or index < 0
    ):
        errors.add(where, "arguments", "image_index must be a whole number, 0 or more", step=i)
    spec = ops.OPS.get(tool)
    if spec is None:
        return
    params = {k: v for k, v in args.items() if k != "image_index"}
    known = {p.name for p in spec.params}
    unknown = sorted(k for k in params if k not in known)
    if unknown:
        expected = ", ".join(["image_index", *sorted(known)])
        errors.add(
            where,
            "arguments",
            f"{tool} has no argument {', '.join(unknown)} (expected: {expected})",
            step=i,
        )
        return
    try:
        ops.validate_params(tool, params)
    except ops.OpError as exc:
        # With no arguments at all, the check is the verifier alone (the crop box may come
        # from the image editor, an enhance may be any enhance).
        if exc.param is not None or params:
            errors.add(where, "arguments", str(exc), step=i)


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


def apply_draft(  # noqa: C901, PLR0915
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
    old = draft_from_document(doc)
    allowed_tools = set(tools) | set(ops.OPS)
    allowed_domains = set(domains)

    # ---- the task
    missing = [key for key in ("meta", "input", "golden_answer") if key not in out]
    for key in ("meta", "input", "golden_answer"):
        if not isinstance(out.get(key), dict):
            out[key] = {}
    meta, task_input, golden = out["meta"], out["input"], out["golden_answer"]
    if not draft.question.strip():
        errors.add("task", "question", "write the final question")
    if join_prompt(draft.question, draft.format_instruction) != join_prompt(
        old.question, old.format_instruction
    ):
        task_input["prompt"] = join_prompt(draft.question.strip(), draft.format_instruction.strip())

    match_type = draft.match_type.strip()
    if match_type != old.match_type:
        if match_type not in MATCH_TYPES:
            errors.add("task", "match type", f"choose one of {', '.join(MATCH_TYPES)}")
        golden["match_type"] = match_type
    if not draft.expected.strip():
        errors.add("task", "final answer", "write the expected final answer")
    elif draft.expected != old.expected:
        golden["value"] = draft.expected.strip()
    if match_type == "numeric" and draft.expected.strip() and _number(draft.expected) is None:
        errors.add("task", "final answer", f"{draft.expected!r} is not a number (match: numeric)")
    if draft.tolerance.strip() != old.tolerance:
        if not draft.tolerance.strip():
            golden.pop("tolerance", None)
        else:
            tol = _number(draft.tolerance)
            if tol is None or tol < 0:
                errors.add("task", "tolerance", f"{draft.tolerance!r} is not a number ≥ 0")
            else:
                golden["tolerance"] = _keep_number(tol, golden.get("tolerance"))
    variants = _split_lines(draft.variants)
    if variants != _split_lines(old.variants) and (variants or "accepted_variants" in golden):
        golden["accepted_variants"] = variants

    level = _integer(draft.level)
    if draft.level.strip() != old.level:
        if level not in LEVELS:
            errors.add("task", "level", "choose level 1, 2 or 3")
        else:
            meta["level"] = level
    domain = draft.domain.strip()
    if domain != old.domain:
        if allowed_domains and domain and domain not in allowed_domains:
            errors.add("task", "domain", f"{domain!r} is not a domain of the project's taxonomy")
        meta["domain"] = domain

    # ---- steps
    process = out.get("process_evaluation")
    if not isinstance(process, dict):
        process = out["process_evaluation"] = {}
    old_cps = [cp for cp in (process.get("checkpoints") or []) if isinstance(cp, dict)]
    by_id = {str(cp.get("id")): cp for cp in old_cps if cp.get("id") is not None}
    seen: dict[str, int] = {}
    new_cps: list[dict[str, Any]] = []
    image_changes: list[ImageChange] = []
    for i, step in enumerate(draft.steps):
        label = f"step {i + 1}" + (f" ({step.id})" if step.id else "")
        if not _ID_RE.match(step.id or ""):
            errors.add(label, "id", "an id of letters, digits, _ . - (e.g. C3)", step=i)
        elif step.id in seen:
            errors.add(label, "id", f"{step.id} is also step {seen[step.id] + 1}'s id", step=i)
        seen.setdefault(step.id, i)
        base = by_id.get(step.id, {})
        cp, change = _apply_step(base, step, i, label, errors, allowed_tools, prefill or {})
        new_cps.append(cp)
        if change is not None:
            image_changes.append(change)
    if new_cps != old_cps:
        process["checkpoints"] = new_cps

    # ---- ordering constraints
    ids = {s.id for s in draft.steps}
    old_orders = [o for o in (process.get("ordering_constraints") or []) if isinstance(o, dict)]
    orders_by_id = {str(o.get("id")): o for o in old_orders}
    new_orders: list[dict[str, Any]] = []
    for j, od in enumerate(draft.orderings):
        where = f"ordering {j + 1}" + (f" ({od.id})" if od.id else "")
        base = orders_by_id.get(od.id, {})
        o = copy.deepcopy(base) if base else {"id": od.id}
        if not _ID_RE.match(od.id or ""):
            errors.add(where, "id", "an id of letters, digits, _ . - (e.g. O1)", ordering=j)
        o["id"] = base.get("id", od.id) if str(base.get("id")) == od.id else od.id
        sequence = _split_lines(od.sequence.replace("→", ","), commas=True)
        if len(sequence) < 2:
            errors.add(where, "sequence", "name at least two step ids, e.g. C1, C2", ordering=j)
        unknown = [s for s in sequence if s not in ids]
        if unknown:
            errors.add(where, "sequence", f"no step has the id {', '.join(unknown)}", ordering=j)
        _set(o, "sequence", sequence, base.get("sequence"))
        gap_text = od.max_gap.strip()
        if gap_text != _text(base.get("max_gap")):
            gap = _integer(gap_text)
            if not gap_text:
                o.pop("max_gap", None)
            elif gap is None or gap < 1:
                errors.add(where, "max gap", f"{gap_text!r} is not a whole number ≥ 1", ordering=j)
            else:
                o["max_gap"] = gap
        new_orders.append(o)
    if new_orders != old_orders:
        process["ordering_constraints"] = new_orders

    # ---- efficiency
    efficiency = process.get("efficiency")
    eff: dict[str, Any] = copy.deepcopy(efficiency) if isinstance(efficiency, dict) else {}
    for name, kind in (
        ("reference_tool_calls", "int"),
        ("penalty_per_extra_call", "float"),
        ("max_tool_calls", "int"),
    ):
        text = getattr(draft, name).strip()
        label = name.replace("_", " ")
        if text == _text(eff.get(name)):
            continue
        if not text:
            eff.pop(name, None)
            continue
        if kind == "int":
            value = _integer(text)
            if value is None or value < 0:
                errors.add("efficiency", label, f"{text!r} is not a whole number ≥ 0")
                continue
            eff[name] = value
        else:
            number = _number(text)
            if number is None or not 0 <= number <= 1:
                errors.add("efficiency", label, f"{text!r} is not a number from 0 to 1")
                continue
            eff[name] = _keep_number(number, eff.get(name))
    ref, most = eff.get("reference_tool_calls"), eff.get("max_tool_calls")
    if isinstance(ref, int) and isinstance(most, int) and most < ref:
        errors.add(
            "efficiency",
            "max tool calls",
            f"{most} is below the reference tool calls ({ref})",
        )
    if "reference_tool_calls" not in eff:
        errors.add("efficiency", "reference tool calls", "required: the human trajectory's calls")
    if eff != (efficiency if isinstance(efficiency, dict) else {}):
        process["efficiency"] = eff
    for key in missing:
        if out.get(key) == {}:
            del out[key]
    return Applied(out, errors.items, image_changes)


def _apply_step(  # noqa: C901, PLR0915
    base: Mapping[str, Any],
    step: StepDraft,
    i: int,
    label: str,
    errors: _Errors,
    allowed_tools: set[str],
    prefill: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[str, Any], ImageChange | None]:
    old = step_draft(base) if base else StepDraft()
    cp: dict[str, Any] = copy.deepcopy(dict(base)) if base else {}
    if not base:
        cp["id"] = step.id
    axis = step.axis.strip().upper()
    if axis not in AXES:
        errors.add(label, "checkpoint", "choose V (visual) or S (search)", step=i)
    if not base or axis != old.axis:
        cp["axis"] = axis
        if base and axis == "S":
            cp.pop("visual_check", None)
            cp.pop("reference_image", None)
        elif base and axis == "V":
            cp.pop("search_check", None)
    if not step.intent.strip():
        errors.add(label, "intent", "say in words what this step does", step=i)
    if not base or step.intent != old.intent:
        cp["description"] = step.intent.strip()

    tool = step.tool.strip()
    if not base or tool != old.tool:
        if tool and tool not in allowed_tools:
            errors.add(label, "tool", f"{tool!r} is not in the project's toolset", step=i)
        cp["tools"] = [tool] if tool else []

    # arguments and the operation check (code_check)
    try:
        args = json.loads(step.args) if step.args.strip() else {}
        if not isinstance(args, dict):
            raise ValueError("not an object")
    except ValueError:
        errors.add(label, "arguments", 'write a JSON object, e.g. {"angle": 90}', step=i)
        args = checkpoint_args(base)
    args_changed = args != checkpoint_args(base)
    if args_changed or tool != old.tool:
        _check_args(tool, args, errors, label, i)
    if step.check_op:
        code = cp.get("code_check") if isinstance(cp.get("code_check"), dict) else None
        tool_changed = bool(base) and tool != old.tool
        if code is None or tool_changed:
            verifier = f"verify_{tool}_ast" if tool in ops.OPS else ""
            code = {"verifier": verifier} if verifier else {}
        if args_changed or tool_changed or "code_check" not in cp:
            verifier_part = {"verifier": code["verifier"]} if "verifier" in code else {}
            code = {**verifier_part, **args}
        cp["code_check"] = code
    elif "code_check" in cp:
        if args and args_changed:
            errors.add(
                label, "arguments", "tick 'check the operation' to keep its arguments", step=i
            )
        cp.pop("code_check")
    elif args:
        errors.add(label, "arguments", "tick 'check the operation' to keep its arguments", step=i)

    # V: visual check
    if axis == "V":
        question, expected = step.question.strip(), step.expected.strip()
        if (question, expected) != (old.question, old.expected):
            if bool(question) != bool(expected):
                missing = "expected answer" if question else "question"
                errors.add(label, missing, f"a visual check needs its {missing}", step=i)
            if question or expected:
                visual = dict(cp.get("visual_check") or {})
                visual["question"] = question
                visual["expected_answer"] = expected
                cp["visual_check"] = visual
            else:
                cp.pop("visual_check", None)

    # S: search check
    if axis == "S":
        keywords = _split_lines(step.keywords)
        urls = _split_lines(step.urls)
        found = step.search_expected.strip()
        search = dict(cp.get("search_check") or {})
        if not keywords:
            errors.add(label, "keywords", "a search step needs at least one keyword", step=i)
        if not found:
            errors.add(label, "expected answer", "say what the search is expected to find", step=i)
        for url in urls:
            problem = url_problem(url)
            if problem:
                errors.add(label, "reference URLs", problem, step=i)
        _set(search, "keywords", keywords, _split_lines(old.keywords) if base else None)
        if urls != _split_lines(old.urls):
            if urls:
                search["urls"] = urls
            else:
                search.pop("urls", None)
        _set(search, "expected", found, old.search_expected if base else None)
        if search != (cp.get("search_check") or {}) or "search_check" not in cp:
            cp["search_check"] = search

    # answer check
    answer_fields = (step.ans_match.strip(), step.ans_target.strip(), step.ans_tol.strip())
    if answer_fields != (old.ans_match, old.ans_target, old.ans_tol):
        match, target, tol_text = answer_fields
        if not target and not match and not tol_text:
            cp.pop("answer_check", None)
        else:
            answer = dict(cp.get("answer_check") or {})
            if match not in MATCH_TYPES and match != old.ans_match:
                errors.add(label, "answer match", f"choose one of {', '.join(MATCH_TYPES)}", step=i)
            if not target:
                errors.add(label, "answer target", "write the answer this step checks", step=i)
            if match == "numeric" and target and _number(target) is None:
                errors.add(label, "answer target", f"{target!r} is not a number", step=i)
            _set(answer, "match_type", match, old.ans_match or None)
            _set(answer, "target", target, old.ans_target or None)
            if tol_text != old.ans_tol:
                tol = _number(tol_text)
                if not tol_text:
                    answer.pop("tolerance", None)
                elif tol is None or tol < 0:
                    errors.add(
                        label, "answer tolerance", f"{tol_text!r} is not a number ≥ 0", step=i
                    )
                else:
                    answer["tolerance"] = _keep_number(tol, answer.get("tolerance"))
            cp["answer_check"] = answer

    # the ground-truth intermediate image
    change: ImageChange | None = None
    if step.clear_image and "reference_image" in cp:
        cp.pop("reference_image")
    elif axis == "V" and step.recipe.strip():
        try:
            posted = _recipe_of(step.recipe)
        except (ValueError, RecipeError) as exc:
            errors.add(label, "image", f"the image edit cannot be read: {exc}", step=i)
            posted = None
        stored = normalized_recipe(_obj(cp.get("reference_image")).get("recipe"))
        shown = stored or normalized_recipe(prefill.get(step.id))
        if posted is not None and posted != shown:
            change = ImageChange(i, step.id, posted, _box(step.box_px))
            box = crop_bbox(posted)
            if box is not None and step.check_op and tool == "crop":
                cp["code_check"] = {**_obj(cp.get("code_check")), "bbox_2d": box}
    return cp, change


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


def level_warnings(doc: Mapping[str, Any]) -> list[str]:  # noqa: C901
    """Where the steps do not fit the level (Agentic-MME §2.2): Level 1 is one visual
    operation (a crop, optionally cleaned up by an enhancement) and no search; Level 2 a short,
    mostly linear chain of a few operations, possibly with a search; Level 3 an intertwined,
    multi-round use of visual and search tools, or advanced CV analysis."""
    level = _obj(doc.get("meta")).get("level")
    process = _obj(doc.get("process_evaluation"))
    cps = [cp for cp in (process.get("checkpoints") or []) if isinstance(cp, dict)]
    tools = step_tools(cps)
    searches = [t for t in tools if t in SEARCH_TOOLS]
    visual = [t for t in tools if t not in SEARCH_TOOLS]
    main_visual = [t for t in visual if t not in PHOTOMETRIC_OPS]
    warnings: list[str] = []
    if level == 1:
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
    elif level == 2:
        if len(tools) <= 1 and not searches:
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
    elif level == 3:
        if len(tools) < 3:
            warnings.append(
                f"Level 3 needs intertwined, multi-round work, but the steps make only "
                f"{len(tools)} tool call(s)."
            )
        if not searches and not any(t in ADVANCED_OPS for t in visual) and len(tools) >= 1:
            warnings.append(
                "Level 3 couples visual operations with search, or needs advanced CV analysis "
                "(edge detection, thresholding, ...); these steps do neither."
            )
    elif level is None:
        warnings.append("No level set.")
    efficiency = _obj(process.get("efficiency"))
    ref = efficiency.get("reference_tool_calls")
    if isinstance(ref, int) and not isinstance(ref, bool) and tools and ref != len(tools):
        warnings.append(
            f"Reference tool calls is {ref}, but {len(tools)} step(s) use a tool; overthinking "
            "is measured against this number."
        )
    return warnings


def _interleaved(tools: Sequence[str]) -> bool:
    kinds = "".join("s" if t in SEARCH_TOOLS else "v" for t in tools)
    return "vs" in kinds and "v" in kinds[kinds.index("vs") + 2 :]
