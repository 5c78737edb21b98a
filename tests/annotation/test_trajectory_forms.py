"""The trajectory editor's POST read by Django forms: the draft exactly as typed, a malformed
post refused with a message naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from django.http import QueryDict

from annotation.trajectories import document as td
from annotation.trajectories.forms import MAX_FIELD, StepForm, TaskForm, editor_post
from benchmark.exceptions import ValidationFailed


def _post(**fields: str) -> QueryDict:
    data = QueryDict(mutable=True)
    for name, value in fields.items():
        data[name.replace("__", "-")] = value
    return data


def test_every_draft_field_is_a_form_field() -> None:
    assert tuple(StepForm().fields) == td.STEP_FIELDS
    assert tuple(TaskForm().fields) == td.ITEM_FIELDS


def test_the_post_becomes_the_draft_as_typed() -> None:
    data = _post(
        step__count="2",
        ord__count="1",
        task__question="  What is it?\r\nReally? ",
        task__level="2",
        steps__0__intent=" Crop. ",
        steps__0__check_op="on",
        steps__1__check_op="off",
        steps__1__clear_image="true",
        ord__0__sequence="C1, C2",
        op="up:1",
        version="7",
        fingerprint="a" * 64,
        note="why",
    )
    post = editor_post(data)
    assert post.draft.question == "  What is it?\nReally? "
    assert post.draft.level == "2" and post.draft.domain == ""
    assert post.draft.steps[0].intent == " Crop. "
    assert [s.check_op for s in post.draft.steps] == [True, False]
    assert [s.clear_image for s in post.draft.steps] == [False, True]
    assert post.draft.orderings == [td.OrderingDraft(sequence="C1, C2")]
    assert (post.op, post.base_number, post.base_fingerprint, post.note) == (
        "up:1",
        7,
        "a" * 64,
        "why",
    )


def test_an_empty_post_saves_an_empty_draft_on_an_unknown_version() -> None:
    post = editor_post(QueryDict())
    assert post.draft == td.Draft()
    assert (post.op, post.base_number, post.base_fingerprint, post.note) == ("save", None, "", "")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"step__count": "two"}, "step-count: not a number"),
        ({"step__count": "201"}, "step-count: at most 200 entries (201 posted)"),
        ({"ord__count": "101"}, "ord-count: at most 100 entries (101 posted)"),
        (
            {"step__count": "1", "steps__0__intent": "x" * (MAX_FIELD + 1)},
            f"steps-0-intent: longer than {MAX_FIELD} characters",
        ),
        ({"task__expected": "x" * (MAX_FIELD + 1)}, "task-expected: longer than"),
        ({"op": "delete-everything"}, "op: unknown editor action 'delete-everything'"),
        ({"fingerprint": "not-hex"}, "fingerprint: not a version fingerprint of this editor"),
    ],
)
def test_a_malformed_post_is_refused_naming_the_field(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        editor_post(_post(**fields))
    assert caught.value.message.startswith(message)
