"""What changed between two versions of an Agentic-MME task document, field by field and step
by step, and the same in a few words ("answer changed; step C3: URL added"). Pure: no Django.

Fields are compared the way the editor shows them (:func:`draft_from_document`), so a change
reads as the annotator made it. Steps are matched by their id: a step is added, removed,
changed, moved (out of the order of the others), or unchanged. Whatever the editor does not
show (extra keys of the file, a verifier name) still counts, under its JSON path.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from annotation.trajectories import document as td

TASK_FIELDS = (
    ("question", "question"),
    ("format_instruction", "format instruction"),
    ("expected", "answer"),
    ("match_type", "match type"),
    ("tolerance", "tolerance"),
    ("variants", "accepted variants"),
    ("level", "level"),
    ("domain", "domain"),
)
EFFICIENCY_FIELDS = (
    ("reference_tool_calls", "reference tool calls"),
    ("penalty_per_extra_call", "penalty per extra call"),
    ("max_tool_calls", "maximum tool calls"),
)
STEP_FIELDS = (
    ("axis", "checkpoint"),
    ("intent", "intent"),
    ("tool", "tool"),
    ("args", "arguments"),
    ("check_op", "operation check"),
    ("question", "visual question"),
    ("expected", "visual answer"),
    ("keywords", "keyword"),
    ("urls", "URL"),
    ("search_expected", "search finding"),
    ("ans_match", "answer match"),
    ("ans_target", "answer target"),
    ("ans_tol", "answer tolerance"),
)
LIST_FIELDS = {"variants", "keywords", "urls"}
"""Fields holding one value per line: their changes are counted ("2 URLs added")."""

_TOP_KNOWN = {
    "meta": {"level", "domain"},
    "input": {"prompt"},
    "golden_answer": {"value", "match_type", "tolerance", "accepted_variants"},
    "process_evaluation": {"checkpoints", "ordering_constraints", "efficiency"},
}
_EFFICIENCY_KNOWN = {name for name, _ in EFFICIENCY_FIELDS}
_STEP_KNOWN = {
    "id",
    "axis",
    "description",
    "tools",
    "code_check",
    "visual_check",
    "search_check",
    "answer_check",
    "reference_image",
}
MISSING = object()


@dataclass(frozen=True)
class FieldChange:
    """One field: its label, the value before and after (as the editor shows them, "" when
    empty) and what happened in words ("added", "changed", "2 URLs added", ...)."""

    label: str
    old: str
    new: str
    words: str

    @property
    def kind(self) -> str:
        if not self.old:
            return "added"
        if not self.new:
            return "removed"
        return "changed"


@dataclass
class StepChange:
    id: str
    status: str
    """``added``, ``removed``, ``changed``, ``moved``, ``unchanged``."""
    old_number: int | None
    new_number: int | None
    axis: str
    intent: str
    tool: str
    moved: bool = False
    fields: list[FieldChange] = field(default_factory=list)

    @property
    def shows_before(self) -> bool:
        """An added step has only its new values to show."""
        return self.status != "added"

    @property
    def words(self) -> str:
        if self.status in ("added", "removed"):
            return f"step {self.id} {self.status}"
        parts = []
        if self.moved:
            parts.append(f"moved from {self.old_number} to {self.new_number}")
        parts.extend(f.words for f in self.fields)
        return f"step {self.id}: " + "; ".join(parts) if parts else ""


@dataclass
class DocumentDiff:
    task: list[FieldChange] = field(default_factory=list)
    steps: list[StepChange] = field(default_factory=list)
    orderings: list[FieldChange] = field(default_factory=list)
    efficiency: list[FieldChange] = field(default_factory=list)
    other: list[FieldChange] = field(default_factory=list)
    """Keys the editor does not show, by JSON path."""

    @property
    def changed(self) -> bool:
        return bool(
            self.task
            or self.orderings
            or self.efficiency
            or self.other
            or any(s.status != "unchanged" for s in self.steps)
        )

    @property
    def changed_steps(self) -> list[StepChange]:
        return [s for s in self.steps if s.status != "unchanged"]

    def summary(self, *, limit: int = 8) -> str:
        """The changes in words, most visible first; "no change" when there is none."""
        parts = [f.words for f in self.task]
        parts += [s.words for s in self.steps if s.status != "unchanged" and s.words]
        parts += [f.words for f in self.orderings]
        parts += [f.words for f in self.efficiency]
        if self.other:
            paths = ", ".join(f.label for f in self.other[:3])
            more = f" and {len(self.other) - 3} more" if len(self.other) > 3 else ""
            parts.append(f"other fields changed ({paths}{more})")
        if not parts:
            return "no change"
        if len(parts) > limit:
            parts = [*parts[:limit], f"{len(parts) - limit} more change(s)"]
        return "; ".join(parts)


# --------------------------------------------------------------------------- fields


def _count_words(label: str, old: Sequence[str], new: Sequence[str]) -> str:
    added = [v for v in new if v not in old]
    removed = [v for v in old if v not in new]

    def n(count: int, verb: str) -> str:
        if label == "accepted variants":
            noun = "accepted variant" + ("s" if count != 1 else "")
        else:
            noun = label + ("s" if count != 1 else "")
        return f"{noun} {verb}" if count == 1 else f"{count} {noun} {verb}"

    parts = []
    if added:
        parts.append(n(len(added), "added"))
    if removed:
        parts.append(n(len(removed), "removed"))
    if not parts:
        plural = "accepted variants" if label == "accepted variants" else label + "s"
        parts.append(f"{plural} reordered")
    return ", ".join(parts)


def _field(name: str, label: str, old: Any, new: Any) -> FieldChange | None:
    if isinstance(old, bool) or isinstance(new, bool):
        if bool(old) == bool(new):
            return None
        words = f"{label} {'turned on' if new else 'turned off'}"
        return FieldChange(label, "yes" if old else "no", "yes" if new else "no", words)
    old_text, new_text = str(old or ""), str(new or "")
    if old_text == new_text:
        return None
    if name in LIST_FIELDS:
        old_lines, new_lines = td.split_lines(old_text), td.split_lines(new_text)
        if old_lines == new_lines:
            return None
        return FieldChange(label, old_text, new_text, _count_words(label, old_lines, new_lines))
    kind = "added" if not old_text else "removed" if not new_text else "changed"
    return FieldChange(label, old_text, new_text, f"{label} {kind}")


def _fields(spec: Sequence[tuple[str, str]], old: Any, new: Any) -> list[FieldChange]:
    out = []
    for name, label in spec:
        change = _field(name, label, getattr(old, name), getattr(new, name))
        if change is not None:
            out.append(change)
    return out


def _show(value: Any) -> str:
    if value is MISSING:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _paths(old: Any, new: Any, prefix: str, out: list[FieldChange]) -> None:
    """Every JSON path where ``old`` and ``new`` differ (dicts recursed, anything else whole)."""
    if old is MISSING and isinstance(new, dict) and new:
        old = {}
    if new is MISSING and isinstance(old, dict) and old:
        new = {}
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [k for k in new if k not in old]:
            path = f"{prefix}.{key}" if prefix else str(key)
            _paths(old.get(key, MISSING), new.get(key, MISSING), path, out)
        return
    if old == new:
        return
    kind = "added" if old is MISSING else "removed" if new is MISSING else "changed"
    out.append(FieldChange(prefix or "(document)", _show(old), _show(new), f"{prefix} {kind}"))


def _without(doc: Mapping[str, Any], known: Mapping[str, set[str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if key in known and isinstance(value, dict):
            rest = {k: v for k, v in value.items() if k not in known[key]}
            if key == "process_evaluation" and isinstance(value.get("efficiency"), dict):
                extra = {k: v for k, v in value["efficiency"].items() if k not in _EFFICIENCY_KNOWN}
                if extra:
                    rest["efficiency"] = extra
            if rest:
                out[key] = rest
        elif key not in known:
            out[key] = value
    return out


# --------------------------------------------------------------------------- steps


def _checkpoints(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    process = td.as_object(doc.get("process_evaluation"))
    return [cp for cp in td.as_items(process.get("checkpoints")) if isinstance(cp, dict)]


def _image_words(old: Any, new: Any) -> FieldChange | None:
    old_img, new_img = td.as_object(old), td.as_object(new)
    if old_img == new_img:
        return None
    old_sha, new_sha = str(old_img.get("sha256") or ""), str(new_img.get("sha256") or "")
    label = "ground-truth image"
    if not old_img:
        return FieldChange(label, "", new_sha[:12], f"{label} added")
    if not new_img:
        return FieldChange(label, old_sha[:12], "", f"{label} removed")
    if old_sha == new_sha:
        old_box, new_box = _show(old_img.get("box_px")), _show(new_img.get("box_px"))
        return FieldChange(label, f"box {old_box}", f"box {new_box}", f"{label} box changed")
    return FieldChange(label, old_sha[:12], new_sha[:12], f"{label} changed")


def _step_contents(cp: Mapping[str, Any], *, removed: bool) -> list[FieldChange]:
    """Every field an added (or removed) step has, as added (or removed)."""
    draft = td.step_draft(cp)
    out = []
    for name, label in STEP_FIELDS:
        value = getattr(draft, name)
        if isinstance(value, bool):
            value = "yes" if value else ""
        if not value:
            continue
        text = str(value)
        kind = "removed" if removed else "added"
        out.append(FieldChange(label, text if removed else "", "" if removed else text, kind))
    image = td.as_object(cp.get("reference_image"))
    if image:
        sha = str(image.get("sha256") or "")[:12]
        label = "ground-truth image"
        out.append(FieldChange(label, sha if removed else "", "" if removed else sha, label))
    return out


def _step_fields(old_cp: Mapping[str, Any], new_cp: Mapping[str, Any]) -> list[FieldChange]:
    old, new = td.step_draft(old_cp), td.step_draft(new_cp)
    out = _fields(STEP_FIELDS, old, new)
    image = _image_words(old_cp.get("reference_image"), new_cp.get("reference_image"))
    if image is not None:
        out.append(image)
    old_verifier = td.as_object(old_cp.get("code_check")).get("verifier")
    new_verifier = td.as_object(new_cp.get("code_check")).get("verifier")
    if old_verifier != new_verifier and "code_check" in old_cp and "code_check" in new_cp:
        change = _field("verifier", "verifier", old_verifier, new_verifier)
        if change is not None:
            out.append(change)
    rest: list[FieldChange] = []
    _paths(
        {k: v for k, v in old_cp.items() if k not in _STEP_KNOWN},
        {k: v for k, v in new_cp.items() if k not in _STEP_KNOWN},
        "",
        rest,
    )
    out.extend(rest)
    if not out and old_cp != new_cp:
        # A difference the editor's fields do not show (a number's type, a key's order).
        _paths(dict(old_cp), dict(new_cp), "", out)
    return out


def _steps(old_doc: Mapping[str, Any], new_doc: Mapping[str, Any]) -> list[StepChange]:
    old_cps, new_cps = _checkpoints(old_doc), _checkpoints(new_doc)
    old_ids = [str(cp.get("id")) for cp in old_cps]
    new_ids = [str(cp.get("id")) for cp in new_cps]
    old_by_id = {i: (n, cp) for n, (i, cp) in enumerate(zip(old_ids, old_cps, strict=True))}
    common_old = [i for i in old_ids if i in set(new_ids)]
    common_new = [i for i in new_ids if i in old_by_id]
    # Steps outside the longest common order are the ones that moved.
    kept: set[str] = set()
    matcher = difflib.SequenceMatcher(a=common_old, b=common_new, autojunk=False)
    for block in matcher.get_matching_blocks():
        kept.update(common_old[block.a : block.a + block.size])
    out: list[StepChange] = []
    for n, (sid, cp) in enumerate(zip(new_ids, new_cps, strict=True)):
        draft = td.step_draft(cp)
        if sid not in old_by_id:
            out.append(
                StepChange(
                    sid,
                    "added",
                    None,
                    n + 1,
                    draft.axis,
                    draft.intent,
                    draft.tool,
                    fields=_step_contents(cp, removed=False),
                )
            )
            continue
        old_n, old_cp = old_by_id[sid]
        changes = _step_fields(old_cp, cp)
        moved = sid not in kept
        status = "changed" if changes else "moved" if moved else "unchanged"
        out.append(
            StepChange(
                sid,
                status,
                old_n + 1,
                n + 1,
                draft.axis,
                draft.intent,
                draft.tool,
                moved=moved,
                fields=changes,
            )
        )
    new_set = set(new_ids)
    for n, (sid, cp) in enumerate(zip(old_ids, old_cps, strict=True)):
        if sid not in new_set:
            draft = td.step_draft(cp)
            out.append(
                StepChange(
                    sid,
                    "removed",
                    n + 1,
                    None,
                    draft.axis,
                    draft.intent,
                    draft.tool,
                    fields=_step_contents(cp, removed=True),
                )
            )
    return out


def _orderings(old: td.Draft, new: td.Draft) -> list[FieldChange]:
    old_by_id = {o.id: o for o in old.orderings}
    new_by_id = {o.id: o for o in new.orderings}
    out = []

    def text(o: td.OrderingDraft) -> str:
        gap = f" (max gap {o.max_gap})" if o.max_gap else ""
        return f"{o.sequence}{gap}"

    for o in new.orderings:
        before = old_by_id.get(o.id)
        label = f"ordering {o.id}"
        if before is None:
            out.append(FieldChange(label, "", text(o), f"{label} added"))
        elif text(before) != text(o):
            what = "sequence" if before.sequence != o.sequence else "max gap"
            if before.sequence != o.sequence and before.max_gap != o.max_gap:
                what = "sequence and max gap"
            out.append(FieldChange(label, text(before), text(o), f"{label}: {what} changed"))
    for o in old.orderings:
        if o.id not in new_by_id:
            label = f"ordering {o.id}"
            out.append(FieldChange(label, text(o), "", f"{label} removed"))
    if not out and [o.id for o in old.orderings] != [o.id for o in new.orderings]:
        out.append(FieldChange("orderings", "", "", "orderings reordered"))
    return out


# --------------------------------------------------------------------------- the document


def document_diff(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> DocumentDiff:
    """How ``new`` differs from ``old`` (``None``: from nothing, every field added)."""
    old = old or {}
    old_draft, new_draft = td.draft_from_document(old), td.draft_from_document(new)
    other: list[FieldChange] = []
    _paths(_without(old, _TOP_KNOWN), _without(new, _TOP_KNOWN), "", other)
    return DocumentDiff(
        task=_fields(TASK_FIELDS, old_draft, new_draft),
        steps=_steps(old, new),
        orderings=_orderings(old_draft, new_draft),
        efficiency=_fields(EFFICIENCY_FIELDS, old_draft, new_draft),
        other=other,
    )
