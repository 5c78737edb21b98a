"""Versions of reviewed answers: saving, conflicts, reverting and discarding (the services), and
the pure edit helpers behind the review screen."""

from __future__ import annotations

from typing import Any

import pytest

from annotation.tag_review import edits as tag_edits
from annotation.tag_review.models import ResponseVersion, TagDecision
from annotation.tag_review.services import (
    item_discard,
    response_revert,
    response_save_version,
)
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.models import ItemStatus, Project, Response
from benchmark.tags import parse
from benchmark.versions import StaleVersion
from tests.factories import ItemFactory, ResponseFactory

ORIGINAL = (
    "Intro.\n\n"
    '<tool>{"tool_name": "Reference", "description": "d", "params": {"img_index": 0}}</tool>\n\n'
    "The end."
)


@pytest.fixture
def response(project: Project) -> Response:
    return ResponseFactory(item=ItemFactory(project=project), key="gt", text=ORIGINAL)


def save(response: Response, user: Any, text: str, base: int, **kwargs: Any) -> ResponseVersion:
    return response_save_version(
        response=response,
        user=user,
        text=text,
        base_number=base,
        decisions=kwargs.pop("decisions", []),
        **kwargs,
    )


@pytest.mark.django_db
def test_first_save_keeps_the_original_as_version_1(response: Response, users: dict[str, Any]):
    decision = {"tag": 0, "tool": "Reference", "decision": "removed", "reason": "redundant"}
    v2 = save(response, users["annotator"], "Intro.\n\nThe end.", 1, decisions=[decision], note="n")
    assert v2.number == 2 and v2.base_number == 1 and v2.author == users["annotator"]
    v1 = ResponseVersion.objects.get(response=response, number=1)
    assert v1.text == ORIGINAL and v1.author is None
    response.refresh_from_db()
    assert response.text == "Intro.\n\nThe end."
    saved = TagDecision.objects.get()
    assert (saved.version, saved.decision, saved.reason, saved.tool) == (
        v2,
        "removed",
        "redundant",
        "Reference",
    )


@pytest.mark.django_db
def test_stale_base_raises_conflict_with_the_current_version(
    response: Response, users: dict[str, Any]
):
    v2 = save(response, users["annotator"], "mine", 1)
    with pytest.raises(StaleVersion) as caught:
        save(response, users["reviewer"], "theirs", 1)
    assert isinstance(caught.value, Conflict) and caught.value.status_code == 409
    assert caught.value.current == v2 and caught.value.current.text == "mine"
    assert "annotator-user" in caught.value.message
    assert list(response.versions.values_list("number", "text")) == [(1, ORIGINAL), (2, "mine")]
    response.refresh_from_db()
    assert response.text == "mine"


@pytest.mark.django_db
def test_revert_makes_a_new_version_and_keeps_all(response: Response, users: dict[str, Any]):
    save(response, users["annotator"], "second", 1)
    save(response, users["reviewer"], "third", 2)
    v4 = response_revert(response=response, user=users["admin"], number=1)
    assert (v4.number, v4.text, v4.base_number) == (4, ORIGINAL, 3)
    assert "Reverted to version 1" in v4.note
    assert list(response.versions.values_list("number", "text")) == [
        (1, ORIGINAL),
        (2, "second"),
        (3, "third"),
        (4, ORIGINAL),
    ]
    response.refresh_from_db()
    assert response.text == ORIGINAL
    with pytest.raises(StaleVersion):
        response_revert(response=response, user=users["admin"], number=2, base_number=3)
    with pytest.raises(ValidationFailed):  # version 4 already has version 1's text
        response_revert(response=response, user=users["admin"], number=1)


@pytest.mark.django_db
def test_nothing_to_save_and_bad_decisions_are_refused(response: Response, users: dict[str, Any]):
    with pytest.raises(ValidationFailed):
        save(response, users["annotator"], ORIGINAL, 1)
    with pytest.raises(ValidationFailed):
        save(response, users["annotator"], "x", 1, decisions=[{"tag": 0, "decision": "deleted"}])
    with pytest.raises(ValidationFailed):
        save(response, users["annotator"], "x", 1, decisions=[{"tag": -1, "decision": "kept"}])
    assert not ResponseVersion.objects.exists()
    # Keeping every tag without changing the text is a review worth recording.
    v2 = save(response, users["annotator"], ORIGINAL, 1, decisions=[{"tag": 0, "decision": "kept"}])
    assert v2.number == 2


@pytest.mark.django_db
def test_only_project_members_may_save(response: Response, users: dict[str, Any]):
    with pytest.raises(Forbidden):
        save(response, users["outsider"], "x", 1)
    for n, role in enumerate(("annotator", "reviewer", "admin")):
        save(response, users[role], f"by {role}", n + 1)
    assert response.versions.count() == 4


@pytest.mark.django_db
def test_item_discard(response: Response, users: dict[str, Any]):
    item = response.item
    with pytest.raises(ValidationFailed):
        item_discard(item=item, user=users["reviewer"], reason="boring")
    with pytest.raises(ValidationFailed):
        item_discard(item=item, user=users["reviewer"], reason="other")
    with pytest.raises(Forbidden):
        item_discard(item=item, user=users["outsider"], reason="factual_errors")
    with pytest.raises(Forbidden):  # annotators propose it instead
        item_discard(item=item, user=users["annotator"], reason="factual_errors")
    item_discard(item=item, user=users["reviewer"], reason="factual_errors", detail="wrong year")
    item.refresh_from_db()
    assert (item.status, item.discard_reason) == (
        ItemStatus.DISCARDED,
        "factual_errors: wrong year",
    )


# --------------------------------------------------------------------------- pure edits


TWO = (
    'A <tool>{"tool_name": "Search", "description": "s", "params": {"query": "q"}}</tool> b.\n\n'
    '<tool>{"tool_name": "Reference", "description": "r", "params": {"img_index": 0}}</tool>'
)


def test_marks_follow_their_tags_through_removal_and_insertion() -> None:
    parsed = parse(TWO, "atp")
    kept = tag_edits.keep(parsed, 1, ["", ""])
    assert kept.marks == ["", "kept"] and kept.text == TWO
    removed = tag_edits.remove(parsed, 0, kept.marks, reason="redundant")
    assert removed.marks == ["kept"] and removed.decision["decision"] == "removed"
    again = parse(removed.text, "atp")
    inserted = tag_edits.insert(
        again, removed.marks, at=0, tool_name="Diffusion", description="x", params='{"prompt": "p"}'
    )
    assert inserted.marks == ["inserted", "kept"]
    assert inserted.decision["tag"] == 0 and inserted.decision["tool"] == "Diffusion"


def test_fix_fields_converts_by_parameter_type() -> None:
    parsed = parse(TWO, "atp")
    specs = [{"name": "img_index", "type": "int", "required": True}]
    edit = tag_edits.fix_fields(
        parsed, 1, [], specs=specs, values={"img_index": "2"}, description="r"
    )
    assert '"params": {"img_index": 2}' in edit.text
    with pytest.raises(tag_edits.EditError):
        tag_edits.fix_fields(
            parsed, 1, [], specs=specs, values={"img_index": "two"}, description="r"
        )


def test_move_without_a_boundary_is_an_error() -> None:
    text = '<tool>{"tool_name": "Search", "description": "s", "params": {"query": "q"}}</tool>'
    with pytest.raises(tag_edits.EditError):
        tag_edits.move(parse(text, "atp"), 0, [""], direction="before")
