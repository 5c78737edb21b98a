"""The trajectory editor's forms: the posted fields become a :class:`Draft` exactly as typed
(newlines normalized), so a form with mistakes comes back as the annotator left it.

Field names: ``task-<field>`` for the task, ``step-count`` and ``steps-<i>-<field>`` for the
steps in their current order (the image editor adds ``steps-<i>-recipe`` and
``steps-<i>-box_px``), ``ord-count`` and ``ord-<i>-<field>`` for ordering constraints, and
``version`` (the version number the editor was opened on), ``fingerprint`` (of the document
it was opened with), ``note`` (what the save changes, in the annotator's words) and ``op``
(``save``, ``add:V``, ``up:2``, ...).

Each form's fields are made from the draft's dataclass fields, so a field added to
:class:`~annotation.trajectories.document.StepDraft` (and its row in ``STEP_ROWS``) is posted,
checked and read with no change here. The forms check the shape of the post (lengths, counts,
the action, the version it was made on); what the values mean is checked by
:func:`~annotation.trajectories.document.apply_draft`, which names step and field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

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


class TypedText(forms.Field):
    """Text kept as typed (not stripped: spaces are the annotator's), newlines normalized; a
    missing field is empty."""

    def to_python(self, value: Any) -> str:
        text = value if isinstance(value, str) else ""
        if len(text) > MAX_FIELD:
            raise ValidationError(f"longer than {MAX_FIELD} characters", code="max_length")
        return text.replace("\r\n", "\n").replace("\r", "\n")


class Flag(TypedText):
    """A checkbox: ticked is ``on`` (or ``true``, ``1``)."""

    def to_python(self, value: Any) -> bool:  # type: ignore[override]
        return super().to_python(value) in ("on", "true", "1")


def _text_fields(names: tuple[str, ...], flags: tuple[str, ...] = ()) -> dict[str, forms.Field]:
    return {
        name: Flag(required=False) if name in flags else TypedText(required=False) for name in names
    }


class _DraftPartForm(forms.Form):
    """A form whose fields are a draft dataclass's fields."""

    names: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields.update(_text_fields(self.names, self.flags))


class TaskForm(_DraftPartForm):
    names = ITEM_FIELDS


class StepForm(_DraftPartForm):
    names, flags = STEP_FIELDS, BOOL_STEP_FIELDS


class OrderingForm(_DraftPartForm):
    names = ORDERING_FIELDS


class CountForm(forms.Form):
    """How many steps (prefix ``step``) or ordering constraints (``ord``) the post carries."""

    count = TypedText(required=False)

    def __init__(self, *args: Any, limit: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limit = limit

    def clean_count(self) -> int:
        text = self.cleaned_data["count"].strip() or "0"
        if not text.isdigit():
            raise ValidationError("not a number", code="invalid")
        count = int(text)
        if count > self.limit:
            raise ValidationError(f"at most {self.limit} entries ({count} posted)", code="max")
        return count


class ActionForm(forms.Form):
    """What the post asks for and the version it was made on. A missing or unreadable version
    number is ``None``, which the save service answers as an outdated version."""

    op = TypedText(required=False)
    version = TypedText(required=False)
    fingerprint = TypedText(required=False)
    note = forms.Field(required=False)

    def clean_op(self) -> str:
        op = self.cleaned_data["op"].strip() or "save"  # a plain submit (Enter in a field) saves
        if not _OP_RE.match(op):
            raise ValidationError(f"unknown editor action {op!r}", code="invalid")
        return op

    def clean_version(self) -> int | None:
        number = self.cleaned_data["version"].strip()
        return int(number) if number.isdigit() and len(number) < 10 else None

    def clean_fingerprint(self) -> str:
        fingerprint = self.cleaned_data["fingerprint"].strip()
        if fingerprint and not re.fullmatch(r"[0-9a-f]{64}", fingerprint):
            raise ValidationError("not a version fingerprint of this editor", code="invalid")
        return fingerprint

    def clean_note(self) -> str:
        note = self.cleaned_data["note"]
        return note if isinstance(note, str) else ""


@dataclass(frozen=True)
class EditorPost:
    draft: Draft
    op: str
    base_number: int | None
    base_fingerprint: str
    note: str


def _cleaned(form: forms.Form) -> dict[str, Any]:
    """The form's values, or :class:`ValidationFailed` naming the first field in error."""
    if not form.is_valid():
        name, messages = next(iter(form.errors.items()))
        raise ValidationFailed(f"{form.add_prefix(name)}: {messages[0]}")
    return form.cleaned_data


def editor_post(data: Mapping[str, Any]) -> EditorPost:
    """The editor's POST as plain data for the pure core; a malformed post (too long, too many
    entries, an unknown action, a forged fingerprint) raises :class:`ValidationFailed`."""
    steps = _cleaned(CountForm(data, prefix="step", limit=MAX_STEPS))["count"]
    orderings = _cleaned(CountForm(data, prefix="ord", limit=MAX_ORDERINGS))["count"]
    draft = Draft(
        **_cleaned(TaskForm(data, prefix="task")),
        steps=[StepDraft(**_cleaned(StepForm(data, prefix=f"steps-{i}"))) for i in range(steps)],
        orderings=[
            OrderingDraft(**_cleaned(OrderingForm(data, prefix=f"ord-{j}")))
            for j in range(orderings)
        ],
    )
    action = _cleaned(ActionForm(data))
    return EditorPost(
        draft=draft,
        op=action["op"],
        base_number=action["version"],
        base_fingerprint=action["fingerprint"],
        note=action["note"],
    )
