"""Reviewers decide on proposals to discard an item (/projects/<id>/adjudication/discard-proposals/):
accepting discards the item and records it, rejecting keeps it and records the decision; both
plainly and with htmx; annotators get 403, another project's reviewer 404."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from annotation.discarding.models import DiscardProposal, ProposalStatus
from benchmark.exceptions import Conflict, Forbidden
from benchmark.models import Item, ItemStatus, ItemStatusChange, Project, Role
from review.adjudication.services import discard_proposal_decide
from tests.factories import DiscardProposalFactory, ItemFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def proposal(project: Project, users: dict[str, Any]) -> DiscardProposal:
    item = ItemFactory(project=project, status=ItemStatus.VERIFIED, external_id="atp_0007")
    return DiscardProposalFactory(
        item=item, proposed_by=users["annotator"], reason="factual_errors: wrong year"
    )


def list_url(project: Project) -> str:
    return f"/projects/{project.pk}/adjudication/discard-proposals/"


def decide_url(proposal: DiscardProposal) -> str:
    return (
        f"/projects/{proposal.item.project_id}/adjudication/discard-proposals/{proposal.pk}/decide/"
    )


def test_reviewers_see_open_proposals(
    project: Project, proposal: DiscardProposal, clients: dict[str, Client]
):
    for role in ("admin", "reviewer"):
        page = clients[role].get(list_url(project))
        assert page.status_code == 200
        html = page.content.decode()
        assert "atp_0007" in html and "annotator-user" in html and "wrong year" in html
        assert f'action="{decide_url(proposal)}"' in html
    assert clients["annotator"].get(list_url(project)).status_code == 403
    assert clients["outsider"].get(list_url(project)).status_code == 404
    project_page = clients["reviewer"].get(f"/projects/{project.pk}/").content.decode()
    assert f'href="{list_url(project)}"' in project_page
    annotator_page = clients["annotator"].get(f"/projects/{project.pk}/").content.decode()
    assert f'href="{list_url(project)}"' not in annotator_page


def test_accepting_discards_the_item_and_records_it(
    proposal: DiscardProposal, users: dict[str, Any], clients: dict[str, Client]
):
    done = clients["reviewer"].post(decide_url(proposal), {"decision": "accept", "note": "agreed"})
    assert done.status_code == 302 and done["Location"] == list_url(proposal.item.project)
    item = Item.objects.get(pk=proposal.item_id)
    assert item.status == ItemStatus.DISCARDED
    assert item.discard_reason == "factual_errors: wrong year (proposed by annotator-user); agreed"
    change = ItemStatusChange.objects.get()
    assert (change.changed_by, change.from_status, change.to_status) == (
        users["reviewer"],
        ItemStatus.VERIFIED,
        ItemStatus.DISCARDED,
    )
    proposal.refresh_from_db()
    assert (proposal.status, proposal.decided_by, proposal.decision_note) == (
        ProposalStatus.ACCEPTED,
        users["reviewer"],
        "agreed",
    )
    assert proposal.decided_at is not None
    html = clients["reviewer"].get(list_url(item.project)).content.decode()
    assert "No open proposals" in html and "Accepted</strong> by reviewer-user" in html

    # The item page shows the change, and the reviewer can undo it.
    item_page = clients["reviewer"].get(f"/projects/{item.project_id}/items/{item.pk}/")
    assert "Verified → Discarded" in item_page.content.decode()
    restored = clients["reviewer"].post(f"/projects/{item.project_id}/items/{item.pk}/restore/")
    assert restored.status_code == 302
    item.refresh_from_db()
    assert item.status == ItemStatus.VERIFIED


def test_rejecting_keeps_the_item_and_records_the_decision(
    proposal: DiscardProposal, users: dict[str, Any], clients: dict[str, Client]
):
    done = clients["admin"].post(decide_url(proposal), {"decision": "reject", "note": "fine"})
    assert done.status_code == 302
    item = Item.objects.get(pk=proposal.item_id)
    assert item.status == ItemStatus.VERIFIED
    assert not ItemStatusChange.objects.exists()
    proposal.refresh_from_db()
    assert (proposal.status, proposal.decided_by, proposal.decision_note) == (
        ProposalStatus.REJECTED,
        users["admin"],
        "fine",
    )
    again = clients["reviewer"].post(decide_url(proposal), {"decision": "accept"})
    assert again.status_code == 409
    assert "already rejected by admin-user" in again.content.decode()
    assert Item.objects.get(pk=proposal.item_id).status == ItemStatus.VERIFIED


def test_bad_decisions_are_named(proposal: DiscardProposal, clients: dict[str, Client]):
    bad = clients["reviewer"].post(decide_url(proposal), {"decision": "maybe"})
    assert bad.status_code == 400 and "Choose accept or reject." in bad.content.decode()
    hx_bad = clients["reviewer"].post(decide_url(proposal), {"note": "x"}, **HX)
    assert hx_bad.status_code == 200  # htmx swaps only 2xx: the error shows on the row
    assert f'id="proposal-{proposal.pk}"' in hx_bad.content.decode()
    assert "Choose accept or reject." in hx_bad.content.decode()
    assert (
        clients["annotator"].post(decide_url(proposal), {"decision": "accept"}).status_code == 403
    )
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.OPEN


def test_another_projects_reviewer_gets_404(
    proposal: DiscardProposal, other_project: Project, client_for: Any
):
    stranger = UserFactory(username="other-reviewer")
    MembershipFactory(project=other_project, user=stranger, role=Role.REVIEWER)
    client = client_for(stranger)
    assert client.get(list_url(proposal.item.project)).status_code == 404
    assert client.post(decide_url(proposal), {"decision": "accept"}).status_code == 404
    # Their own project's URL with this proposal's id: not found either.
    theirs = f"/projects/{other_project.pk}/adjudication/discard-proposals/{proposal.pk}/decide/"
    assert client.post(theirs, {"decision": "accept"}).status_code == 404
    assert Item.objects.get(pk=proposal.item_id).status == ItemStatus.VERIFIED


def test_htmx_buttons_swap_the_list(
    proposal: DiscardProposal, users: dict[str, Any], clients: dict[str, Client]
):
    page = clients["reviewer"].get(list_url(proposal.item.project)).content.decode()
    assert f'hx-post="{decide_url(proposal)}" hx-target="#proposals"' in page
    swapped = clients["reviewer"].post(decide_url(proposal), {"decision": "accept"}, **HX)
    assert swapped.status_code == 200
    html = swapped.content.decode()
    assert html.lstrip().startswith('<div id="proposals">') and "<html" not in html
    assert "Accepted</strong> by reviewer-user" in html
    # A second click (say from another tab) is answered in the list htmx swaps in.
    stale = clients["admin"].post(decide_url(proposal), {"decision": "reject"}, **HX)
    assert stale.status_code == 200
    assert "already accepted by reviewer-user" in stale.content.decode()
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.ACCEPTED


def test_service_accepting_for_an_item_already_discarded(
    proposal: DiscardProposal, users: dict[str, Any]
):
    with pytest.raises(Forbidden):
        discard_proposal_decide(proposal=proposal, reviewer=users["annotator"], accept=True)
    Item.objects.filter(pk=proposal.item_id).update(status="discarded", discard_reason="dup")
    decided = discard_proposal_decide(proposal=proposal, reviewer=users["reviewer"], accept=True)
    assert decided.status == ProposalStatus.ACCEPTED
    assert decided.decision_note == "the item was already discarded"
    assert not ItemStatusChange.objects.exists()
    with pytest.raises(Conflict):
        discard_proposal_decide(proposal=proposal, reviewer=users["reviewer"], accept=False)
