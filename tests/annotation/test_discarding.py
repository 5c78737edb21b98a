"""Discarding from the tag review screen: an annotator's discard becomes a proposal (the item
stays as it is, even a verified one), a reviewer's discards and is recorded; automatic status
changes of the consensus rules and reviewers' adjudications are recorded too."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.discarding.models import DiscardProposal, ProposalStatus
from annotation.discarding.services import discard_propose
from annotation.judgment_tasks import services as judging
from annotation.judgment_tasks.models import JudgmentTask
from benchmark.builtin import toolsets_ensure
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.models import Item, ItemStatus, ItemStatusChange, Membership, Project, Response
from review.adjudication.services import outcome_decide
from tests.factories import ItemFactory, ResponseFactory

pytestmark = pytest.mark.django_db

TEXT = 'Press it. <tool>{"tool_name": "Reference", "description": "x", "params": {"img_index": 0}}</tool>'


@pytest.fixture
def answer(project: Project) -> Response:
    project.toolset = toolsets_ensure()["atp"]
    project.save(update_fields=["toolset"])
    item = ItemFactory(project=project, status=ItemStatus.VERIFIED)
    return ResponseFactory(item=item, key="gt", text=TEXT)


def url(response: Response, page: str = "review/") -> str:
    item = response.item
    return f"/projects/{item.project_id}/tag-review/items/{item.pk}/responses/{response.pk}/{page}"


def test_an_annotators_discard_post_becomes_a_proposal(
    answer: Response, users: dict[str, Any], clients: dict[str, Client]
):
    page = clients["annotator"].get(url(answer)).content.decode()
    assert "Propose discarding the sample" in page and "A reviewer decides" in page
    assert "Discard sample</button>" not in page

    done = clients["annotator"].post(
        url(answer, "discard/"), {"reason": "factual_errors", "detail": "wrong year"}
    )
    assert done.status_code == 302 and done["Location"].endswith("review/?proposed=1")
    item = Item.objects.get(pk=answer.item_id)
    assert (item.status, item.discard_reason) == (ItemStatus.VERIFIED, "")
    assert not ItemStatusChange.objects.exists()
    proposal = DiscardProposal.objects.get()
    assert (proposal.item, proposal.response, proposal.proposed_by, proposal.reason) == (
        item,
        answer,
        users["annotator"],
        "factual_errors: wrong year",
    )
    assert proposal.status == ProposalStatus.OPEN and proposal.created_at is not None

    shown = clients["annotator"].get(done["Location"]).content.decode()
    assert "Your proposal is recorded" in shown
    assert "Discarding proposed by <strong>annotator-user</strong>" in shown

    twice = clients["annotator"].post(url(answer, "discard/"), {"reason": "broken_markdown"})
    assert twice.status_code == 409
    assert "already proposed discarding this item" in twice.content.decode()
    assert DiscardProposal.objects.count() == 1


def test_a_reviewers_discard_post_discards_and_is_recorded(
    answer: Response, users: dict[str, Any], clients: dict[str, Client]
):
    page = clients["reviewer"].get(url(answer)).content.decode()
    assert "Discard sample</button>" in page and "Propose discarding" not in page
    done = clients["reviewer"].post(url(answer, "discard/"), {"reason": "broken_markdown"})
    assert done.status_code == 302
    item = Item.objects.get(pk=answer.item_id)
    assert (item.status, item.discard_reason) == (ItemStatus.DISCARDED, "broken_markdown")
    change = ItemStatusChange.objects.get()
    assert (change.changed_by, change.from_status, change.to_status, change.reason) == (
        users["reviewer"],
        ItemStatus.VERIFIED,
        ItemStatus.DISCARDED,
        "broken_markdown",
    )
    assert not DiscardProposal.objects.exists()
    again = clients["admin"].post(url(answer, "discard/"), {"reason": "broken_markdown"})
    assert again.status_code == 409 and "already discarded" in again.content.decode()
    assert ItemStatusChange.objects.count() == 1


def test_outsiders_neither_discard_nor_propose(answer: Response, clients: dict[str, Client]):
    assert clients["outsider"].post(url(answer, "discard/"), {"reason": "other"}).status_code == 404
    anonymous = clients["anonymous"].post(url(answer, "discard/"), {"reason": "broken_markdown"})
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    assert Item.objects.get(pk=answer.item_id).status == ItemStatus.VERIFIED
    assert not DiscardProposal.objects.exists()


def test_discard_propose_service(answer: Response, users: dict[str, Any]):
    item = answer.item
    with pytest.raises(Forbidden):
        discard_propose(item=item, user=users["outsider"], reason="dup")
    with pytest.raises(ValidationFailed, match="say why"):
        discard_propose(item=item, user=users["annotator"], reason="  ")
    other = ResponseFactory(item=ItemFactory(project=item.project))
    with pytest.raises(ValidationFailed, match="not one of this item's"):
        discard_propose(item=item, user=users["annotator"], reason="dup", response=other)
    discard_propose(item=item, user=users["annotator"], reason="dup")
    discard_propose(item=item, user=users["reviewer"], reason="dup too")
    with pytest.raises(Conflict):
        discard_propose(item=item, user=users["annotator"], reason="again")
    gone = ItemFactory(project=item.project, status="discarded", discard_reason="x")
    with pytest.raises(Conflict, match="already discarded"):
        discard_propose(item=gone, user=users["annotator"], reason="dup")
    assert DiscardProposal.objects.count() == 2


# --------------------------------------------------------------------------- judging outcomes


@pytest.fixture
def voting(project: Project) -> JudgmentTask:
    return JudgmentTask.objects.create(
        project=project,
        name="keep?",
        question="Keep this item?",
        scheme="binary",
        overlap=2,
        consensus="unanimous",
    )


def _annotator(project: Project, name: str) -> Any:
    user = get_user_model().objects.create_user(name, password="x")
    Membership.objects.create(project=project, user=user, role="annotator")
    return user


def test_consensus_changes_are_recorded_without_a_person(project: Project, voting: JudgmentTask):
    item = ItemFactory(project=project)
    for vote, name in ((0, "v1"), (0, "v2")):
        user = _annotator(project, name)
        judging.assignment_next_for_user(task=voting, user=user)
        judging.judgment_submit(task=voting, item=item, user=user, value=vote, seconds=1)
    item.refresh_from_db()
    assert item.status == ItemStatus.DISCARDED and item.discard_reason  # as before
    change = ItemStatusChange.objects.get(item=item)
    assert change.changed_by is None
    assert (change.from_status, change.to_status) == (ItemStatus.DRAFT, ItemStatus.DISCARDED)
    assert change.rule == "consensus (unanimous) of judgment task 'keep?'"
    assert change.reason == item.discard_reason


def test_a_reviewers_adjudication_is_recorded_as_theirs(
    project: Project, voting: JudgmentTask, users: dict[str, Any]
):
    item = ItemFactory(project=project)
    for vote, name in ((0, "v1"), (1, "v2")):
        user = _annotator(project, name)
        judging.assignment_next_for_user(task=voting, user=user)
        judging.judgment_submit(task=voting, item=item, user=user, value=vote, seconds=1)
    outcome_decide(
        task=voting, item=item, reviewer=users["reviewer"], verdict="discarded", reason="unclear"
    )
    first, second = ItemStatusChange.objects.filter(item=item).order_by("id")
    assert (first.changed_by, first.to_status) == (None, ItemStatus.IN_REVIEW)
    assert first.rule.startswith("consensus")
    assert (second.changed_by, second.from_status, second.to_status, second.reason) == (
        users["reviewer"],
        ItemStatus.IN_REVIEW,
        ItemStatus.DISCARDED,
        "unclear",
    )
