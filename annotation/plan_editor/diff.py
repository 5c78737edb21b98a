"""What changed between two versions of a plan, step by step (steps matched by their id)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StepChange:
    id: Any
    status: str
    """``added``, ``removed``, ``changed``, ``moved`` or ``unchanged``."""
    tool: str
    old_tool: str = ""
    args: list[str] = field(default_factory=list)
    """The arguments added, removed or changed, in words."""

    @property
    def words(self) -> str:
        if self.status in ("added", "removed"):
            return f"step {self.id} ({self.tool}) {self.status}"
        parts = []
        if self.old_tool and self.old_tool != self.tool:
            parts.append(f"tool {self.old_tool} → {self.tool}")
        if self.status == "moved":
            parts.append("moved")
        parts.extend(self.args)
        return f"step {self.id}: " + ", ".join(parts)


def _steps(steps: Any) -> list[dict[str, Any]]:
    return [s for s in steps or [] if isinstance(s, dict)]


def _args(step: dict[str, Any]) -> dict[str, Any]:
    args = step.get("args")
    return args if isinstance(args, dict) else {}


def _arg_words(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    out = []
    for name, value in new.items():
        if name not in old:
            out.append(f"{name} added")
        elif old[name] != value:
            out.append(f"{name} changed")
    out.extend(f"{name} removed" for name in old if name not in new)
    return out


def step_diff(old: Any, new: Any) -> list[StepChange]:
    """Every step of ``new`` (in order) then the removed ones of ``old``, each with its change."""
    old_steps, new_steps = _steps(old), _steps(new)
    old_by_id = {repr(s.get("id")): s for s in old_steps}
    new_ids = [repr(s.get("id")) for s in new_steps]
    common_old = [i for i in old_by_id if i in set(new_ids)]
    common_new = [i for i in new_ids if i in old_by_id]
    kept: set[str] = set()
    matcher = difflib.SequenceMatcher(a=common_old, b=common_new, autojunk=False)
    for block in matcher.get_matching_blocks():
        kept.update(common_old[block.a : block.a + block.size])
    out: list[StepChange] = []
    for sid, step in zip(new_ids, new_steps, strict=True):
        tool = str(step.get("name") or "")
        before = old_by_id.get(sid)
        if before is None:
            out.append(StepChange(step.get("id"), "added", tool))
            continue
        old_tool = str(before.get("name") or "")
        args = _arg_words(_args(before), _args(step))
        if old_tool != tool or args:
            status = "changed"
        elif sid not in kept:
            status = "moved"
        elif before != step:
            status = "changed"  # the same values in another key order
            args = ["arguments reordered"]
        else:
            status = "unchanged"
        out.append(StepChange(step.get("id"), status, tool, old_tool, args))
    for sid, step in old_by_id.items():
        if sid not in set(new_ids):
            out.append(StepChange(step.get("id"), "removed", str(step.get("name") or "")))
    return out


def diff_summary(old: Any, new: Any, *, limit: int = 6) -> str:
    """The changes in words; "no change" when there is none."""
    parts = [c.words for c in step_diff(old, new) if c.status != "unchanged"]
    if not parts:
        return "no change"
    if len(parts) > limit:
        parts = [*parts[:limit], f"{len(parts) - limit} more change(s)"]
    return "; ".join(parts)
