"""What a verifier confirms about each step of a reference trajectory (Agentic-MME §2.3-2.4). Pure: no Django."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

#: What a verifier confirms about a step of the reference trajectory, after §2.3's step-wise
#: annotation (intent, tool or operation, ground-truth intermediate artifact with its question
#: and answer, search keywords with human-verified URLs and the expected intermediate answer)
#: and §2.4's audit ("intermediate tool actions, visual artifacts, and retrieved URLs are
#: accurate and logically sound").
CHECKS: dict[str, str] = {
    "intent": "The intent is clear and says why this step is needed",
    "tool": "The tool or operation and its arguments are right",
    "checkpoint": "The checkpoint is right: its image shows the evidence and its question and "
    "expected answer hold (search: the keywords find the expected intermediate answer)",
    "url": "The reference URLs work and support the expected answer",
}


CHECK_SHORT = {"intent": "intent", "tool": "tool", "checkpoint": "checkpoint", "url": "URLs"}


URL_RE = re.compile(r"^https?://\S+$", re.IGNORECASE)


MAX_COMMENT = 2000


def checks_for(step: Mapping[str, Any]) -> list[str]:
    """The checklist of one step: intent and tool always; the checkpoint when the step has
    one to check (a visual question, a crop box, a search finding); URLs on search steps."""
    names = ["intent", "tool"]
    axis = str(step.get("axis", "")).upper()
    if axis == "S" or step.get("search_check"):
        names += ["checkpoint", "url"]
    elif any(step.get(k) for k in ("visual_check", "code_check", "answer_check")):
        names.append("checkpoint")
    return names


def step_urls(step: Mapping[str, Any]) -> list[str]:
    """Every http(s) URL among the step's values (``search_check.urls``, ``reference_urls``,
    ...), in order, once each."""
    found: dict[str, None] = {}

    def walk(value: Any) -> None:
        if isinstance(value, str):
            if URL_RE.match(value.strip()):
                found[value.strip()] = None
        elif isinstance(value, Mapping):
            for v in value.values():
                walk(v)
        elif isinstance(value, list | tuple):
            for v in value:
                walk(v)

    walk(step)
    return list(found)


def audit_steps(checkpoints: Sequence[Any], steps: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """The units a verifier audits: the reference trajectory's checkpoints (each one step of
    the Agentic-MME task file, with its intent as ``description``), or its steps when it has
    no checkpoints. Each gets a stable ``step`` key (the checkpoint id, else ``#n``)."""
    source = [c for c in checkpoints if isinstance(c, Mapping)] or [
        s for s in steps if isinstance(s, Mapping)
    ]
    units = []
    for n, raw in enumerate(source):
        key = str(raw.get("id") or f"#{n + 1}")
        units.append(
            {
                "step": key,
                "axis": str(raw.get("axis", "")).upper(),
                "description": str(raw.get("description") or raw.get("intent") or ""),
                "checks": checks_for(raw),
                "urls": step_urls(raw),
                "raw": raw,
            }
        )
    return units
