"""Defect 1: a blind verifier may not change the answer of an item they verify; the outcome is
decided against the answer as it stood when verification began; a later change of the answer
by anyone else reopens verification (the old answers are kept in a closed round)."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.backward_drafting.services import drafting_draft_save, item_draft_token
from annotation.judgment_tasks.models import Assignment, Judgment, Outcome
from annotation.judgment_tasks.services import judgment_task_ensure_defaults
from annotation.trajectories import document as td
from annotation.trajectories.services import task_document, trajectory_save
from annotation.verification.models import VerificationRound
from benchmark.builtin import taxonomies_ensure, toolsets_ensure
from benchmark.exceptions import Forbidden
from benchmark.models import Item, ItemStatus, Project, Role, Trajectory
from review.adjudication.services import answer_revise
from tests.factories import (
    DraftingSessionFactory,
    ImageFactory,
    ItemFactory,
    MembershipFactory,
    UserFactory,
    image_ref,
)

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "trajectory-editor"}


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    project = Project.objects.create(
        name="MME blind",
        kind="trajectory",
        data_format="agentic-mme",
        toolset=toolsets_ensure()["agentic-mme"],
        taxonomy=taxonomies_ensure()["agentic-mme"],
    )
    (task,) = judgment_task_ensure_defaults(project=project)
    image = ImageFactory(projects=[project])
    people, clients = {}, {}
    for name, role in [
        ("annotator1", Role.ANNOTATOR),
        ("annotator2", Role.ANNOTATOR),
        ("author", Role.ANNOTATOR),
        ("reviewer", Role.REVIEWER),
    ]:
        people[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=people[name], role=role)
        clients[name] = Client()
        clients[name].force_login(people[name])
    item = ItemFactory(
        project=project,
        external_id="21",
        position=21,
        query="What does the sign say? Answer with two words.",
        expected_answer="Pack order",
        match_type="exact",
        level=1,
        domain="Life",
        provenance="user:author",
        image_refs=[image_ref(image, position=0, role="input")],
        raw="",
        documents=[],
        category="",
        intent="",
    )
    Trajectory.objects.create(
        item=item,
        key="reference",
        checkpoints=[
            {
                "id": "C1",
                "axis": "V",
                "description": "Crop the sign.",
                "tools": ["crop"],
                "code_check": {"verifier": "verify_crop_ast", "image_index": 0},
                "visual_check": {"question": "What is on the sign?", "expected_answer": "Pack"},
            }
        ],
        efficiency={"reference_tool_calls": 1, "penalty_per_extra_call": 0.1},
    )
    return {"project": project, "task": task, "item": item, "u": people, "c": clients}


def _answer(world: dict[str, Any], name: str, answer: str) -> None:
    """Ask for the next item through the queue, then answer it on the blind solve screen."""
    client, task, item = world["c"][name], world["task"], world["item"]
    response = client.post(reverse("annotation:task_next", args=[task.pk]))
    assert response["Location"] == reverse("annotation:judge", args=[task.pk, item.pk])
    response = client.post(response["Location"], {"answer": answer})
    assert response.status_code == 302, response.content[:300]


def _editor_url(item: Item) -> str:
    return reverse("annotation:trajectory_edit", args=[item.project_id, item.pk])


def _editor_form(client: Client, item: Item) -> dict[str, Any]:
    response = client.get(_editor_url(item))
    assert response.status_code == 200, response.content[:300]
    html = response.content.decode()
    form = html[html.index('id="trajectory-editor"') :]
    data: dict[str, Any] = {}
    for m in re.finditer(r"<input ([^>]*)>", form):
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))
        if attrs.get("name") and attrs.get("type") != "checkbox":
            data[attrs["name"]] = unescape(attrs.get("value", ""))
        elif attrs.get("name") and " checked" in m.group(1):
            data[attrs["name"]] = "on"
    for m in re.finditer(r'<textarea name="([^"]+)"[^>]*>(.*?)</textarea>', form, re.S):
        data[m.group(1)] = unescape(m.group(2))
    for m in re.finditer(r'<select name="([^"]+)"[^>]*>(.*?)</select>', form, re.S):
        chosen = re.search(r'<option value="([^"]*)"[^>]*selected', m.group(2))
        data[m.group(1)] = unescape(chosen.group(1)) if chosen else ""
    return data


def _save_directly(world: dict[str, Any], name: str, expected: str) -> Any:
    """The trajectory editor's save, called as its service (as a POST would)."""
    item = Item.objects.get(pk=world["item"].pk)
    document = task_document(item=item, reference=item.trajectories.get(key="reference"))
    draft = td.draft_from_document(document)
    draft.expected = expected
    return trajectory_save(
        user=world["u"][name],
        project=world["project"],
        item=item,
        draft=draft,
        base_number=None,
        tools=["crop"],
        domains=["Life"],
    )


# --------------------------------------------------------------------------- the defect


def test_a_verifier_who_answered_may_not_rewrite_the_reference_answer(
    world: dict[str, Any],
) -> None:
    """annotator1 answers 'Shipping' (reference 'Pack order'), then posts the trajectory editor
    with task-expected=Shipping: refused with the reason, the answer stays; the second
    verifier's 'Shipping' does not verify the item."""
    item, client = world["item"], world["c"]["annotator1"]
    _answer(world, "annotator1", "Shipping")
    form = _editor_form(client, item)
    assert form["task-expected"] == "Pack order"
    response = client.post(_editor_url(item), {**form, "task-expected": "Shipping", "op": "save"})
    assert response.status_code == 403
    assert "blind verifiers" in response.content.decode()
    item.refresh_from_db()
    assert item.expected_answer == "Pack order"

    _answer(world, "annotator2", "Shipping")
    outcome = Outcome.objects.get(task=world["task"], item=item)
    assert outcome.verdict == "disputed"
    item.refresh_from_db()
    assert item.status == ItemStatus.IN_REVIEW


def test_a_verifier_may_not_change_the_answer_before_answering_either(
    world: dict[str, Any],
) -> None:
    task, item = world["task"], world["item"]
    world["c"]["annotator1"].post(reverse("annotation:task_next", args=[task.pk]))  # leased
    with pytest.raises(Forbidden, match="blind verifiers"):
        _save_directly(world, "annotator1", "Shipping")
    # Not leased yet, but the item is hidden from annotator2 (a verifier-to-be): refused too.
    with pytest.raises(Forbidden, match="blind verifiers"):
        _save_directly(world, "annotator2", "Shipping")
    assert Item.objects.get(pk=item.pk).expected_answer == "Pack order"


def test_drafting_cannot_save_a_verifiers_answer_to_the_item(world: dict[str, Any]) -> None:
    item = world["item"]
    _answer(world, "annotator1", "Shipping")
    session = DraftingSessionFactory(item=item, source_sha256=item.image_refs[0]["sha256"])
    with pytest.raises(Forbidden, match="blind verifiers"):
        drafting_draft_save(
            session=session,
            user=world["u"]["annotator1"],
            query=item.query,
            expected_answer="Shipping",
            base_token=item_draft_token(Item.objects.get(pk=item.pk)),
        )
    assert Item.objects.get(pk=item.pk).expected_answer == "Pack order"


# --------------------------------------------------------------------------- the snapshot


def test_answers_are_compared_with_the_answer_when_verification_began(
    world: dict[str, Any],
) -> None:
    """A change that bypasses the services (a re-import, the admin) does not move the answer
    the verification is decided against."""
    task, item = world["task"], world["item"]
    _answer(world, "annotator1", "Pack order")
    outcome = Outcome.objects.get(task=task, item=item)
    assert outcome.answer_snapshot["value"] == "Pack order"
    Item.objects.filter(pk=item.pk).update(expected_answer="Shipping")
    _answer(world, "annotator2", "Pack order")
    outcome.refresh_from_db()
    assert outcome.verdict == "accepted"
    assert Item.objects.get(pk=item.pk).status == ItemStatus.VERIFIED


def test_an_author_edit_after_verification_began_reopens_it(world: dict[str, Any]) -> None:
    task, item = world["task"], world["item"]
    _answer(world, "annotator1", "Pack order")
    _answer(world, "annotator2", "Pack order")
    assert Outcome.objects.get(task=task, item=item).verdict == "accepted"

    author = world["c"]["author"]
    form = _editor_form(author, item)
    response = author.post(
        _editor_url(item), {**form, "task-expected": "Pack the order", "op": "save"}
    )
    assert response.status_code == 302, response.content[:300]

    item.refresh_from_db()
    assert (item.expected_answer, item.status) == ("Pack the order", ItemStatus.DRAFT)
    outcome = Outcome.objects.get(task=task, item=item)
    assert outcome.verdict == "pending" and outcome.decided_at is None
    assert outcome.answer_snapshot["value"] == "Pack the order"
    assert "reopened" in outcome.reason
    # The old answers no longer count, but are kept with the answer they were compared with.
    assert not Judgment.objects.filter(task=task, item=item).exists()
    assert not Assignment.objects.filter(task=task, item=item).exists()
    (closed,) = VerificationRound.objects.filter(task=task, item=item)
    assert closed.verdict == "accepted"
    assert closed.answer["value"] == "Pack order"
    assert sorted((j["username"], j["value"]) for j in closed.judgments) == [
        ("annotator1", "Pack order"),
        ("annotator2", "Pack order"),
    ]
    assert "trajectory editor" in closed.reason and closed.closed_by == world["u"]["author"]
    # The verifiers answer again, against the new answer.
    _answer(world, "annotator1", "Pack the order")
    _answer(world, "annotator2", "Pack order")
    assert Outcome.objects.get(task=task, item=item).verdict == "disputed"


def test_an_unchanged_answer_does_not_reopen(world: dict[str, Any]) -> None:
    task, item = world["task"], world["item"]
    _answer(world, "annotator1", "Pack order")
    author = world["c"]["author"]
    form = _editor_form(author, item)
    form["steps-0-intent"] = "Crop the shop sign."
    assert author.post(_editor_url(item), {**form, "op": "save"}).status_code == 302
    assert Judgment.objects.filter(task=task, item=item).count() == 1
    assert not VerificationRound.objects.exists()


def test_a_joint_review_revision_moves_the_recorded_answer(world: dict[str, Any]) -> None:
    """Reviewers may still revise in joint review: the same answers are compared again."""
    task, item = world["task"], world["item"]
    _answer(world, "annotator1", "Shipping")
    _answer(world, "annotator2", "Shipping")
    outcome = answer_revise(
        task=task,
        item=item,
        reviewer=world["u"]["reviewer"],
        expected_answer="Shipping",
        accepted_variants=[],
        match_type="exact",
    )
    assert outcome.verdict == "accepted"
    assert outcome.answer_snapshot["value"] == "Shipping"
    assert Judgment.objects.filter(task=task, item=item).count() == 2
    assert not VerificationRound.objects.exists()
