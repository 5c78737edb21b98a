"""The trajectory editor's form: the posted fields become a :class:`Draft` exactly as typed
(newlines normalized), so a form with mistakes comes back as the annotator left it.

Field names: ``task-<field>`` for the task, ``step-count`` and ``steps-<i>-<field>`` for the
steps in their current order (the image editor adds ``steps-<i>-recipe`` and
``steps-<i>-box_px``), ``ord-count`` and ``ord-<i>-<field>`` for ordering constraints, and
``version`` (the version number the editor was opened on), ``fingerprint`` (of the document
it was opened with), ``note`` (what the save changes, in the annotator's words) and ``op``
(``save``, ``add:V``, ``up:2``, ...).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from annotation.trajectories.document import (
    BOOL_STEP_FIELDS,
    ITEM_FIELDS,
    ORDERING_FIELDS,
    STEP_FIELDS,
    Draft,
    OrderingDraft,
    StepDraft,
)
from benchmark.exceptions import ValidationFailed

MAX_STEPS = 200
MAX_ORDERINGS = 100
MAX_FIELD = 20_000
_OP_RE = re.compile(
    r"^(save|refresh|add:[VS]|add-ordering|(remove|up|down|remove-ordering):\d{1,3})$"
)


def _text(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name, "")
    text = value if isinstance(value, str) else ""
    if len(text) > MAX_FIELD:
        raise ValidationFailed(f"{name}: longer than {MAX_FIELD} characters")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _count(data: Mapping[str, Any], name: str, limit: int) -> int:
    text = _text(data, name).strip() or "0"
    if not text.isdigit():
        raise ValidationFailed(f"{name}: not a number")
    count = int(text)
    if count > limit:
        raise ValidationFailed(f"at most {limit} entries ({name} is {count})")
    return count


def draft_from_post(data: Mapping[str, Any]) -> Draft:
    steps = []
    for i in range(_count(data, "step-count", MAX_STEPS)):
        values: dict[str, Any] = {}
        for name in STEP_FIELDS:
            key = f"steps-{i}-{name}"
            if name in BOOL_STEP_FIELDS:
                values[name] = _text(data, key) in ("on", "true", "1")
            else:
                values[name] = _text(data, key)
        steps.append(StepDraft(**values))
    orderings = [
        OrderingDraft(**{name: _text(data, f"ord-{j}-{name}") for name in ORDERING_FIELDS})
        for j in range(_count(data, "ord-count", MAX_ORDERINGS))
    ]
    return Draft(
        **{name: _text(data, f"task-{name}") for name in ITEM_FIELDS},
        steps=steps,
        orderings=orderings,
    )


def op_from_post(data: Mapping[str, Any]) -> str:
    """The action asked for; a plain submit (Enter in a field) saves."""
    op = _text(data, "op").strip() or "save"
    if not _OP_RE.match(op):
        raise ValidationFailed(f"unknown editor action {op!r}")
    return op


def base_from_post(data: Mapping[str, Any]) -> tuple[int | None, str]:
    """The version number and document fingerprint the editor was opened on. A missing or
    unreadable number is ``None``, which the save service answers as an outdated version."""
    number = _text(data, "version").strip()
    fingerprint = _text(data, "fingerprint").strip()
    if fingerprint and not re.fullmatch(r"[0-9a-f]{64}", fingerprint):
        raise ValidationFailed("fingerprint: not a version fingerprint of this editor")
    return (int(number) if number.isdigit() and len(number) < 10 else None), fingerprint
