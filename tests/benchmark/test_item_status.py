"""An item's status changes: only reviewers and admins set them (a discard needs a reason),
every change is recorded with who, when, from, to and why, a discard can be undone
("Restore") back to the status before it, and the item page shows the history."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.models import Item, ItemStatus, ItemStatusChange, Project, Role
from benchmark.projects.services import item_restore, item_status_set
from tests.factories import ItemFactory, ItemStatusChangeFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def verified(project: Project) -> Item:
    return ItemFactory(project=project, status=ItemStatus.VERIFIED)


def item_url(item: Item, page: str = "") -> str:
    return f"/projects/{item.project_id}/items/{item.pk}/{page}"


# --------------------------------------------------------------------------- the service


def test_an_annotator_cannot_discard_a_verified_item(verified: Item, users: dict[str, Any]):
    with pytest.raises(Forbidden, match="propose"):
        item_status_set(
            item=verified, user=users["annotator"], status=ItemStatus.DISCARDED, reason="dup"
        )
    with pytest.raises(Forbidden):
        item_status_set(
            item=verified, user=users["outsider"], status=ItemStatus.DISCARDED, reason="dup"
        )
    verified.refresh_from_db()
    assert verified.status == ItemStatus.VERIFIED
    assert not ItemStatusChange.objects.exists()


@pytest.mark.parametrize("role", ["reviewer", "admin"])
def test_a_reviewer_discards_and_the_change_is_recorded(
    verified: Item, users: dict[str, Any], role: str
):
    with pytest.raises(ValidationFailed, match="say why"):
        item_status_set(item=verified, user=users[role], status=ItemStatus.DISCARDED, reason=" ")
    change = item_status_set(
        item=verified, user=users[role], status=ItemStatus.DISCARDED, reason=" duplicate of 7 "
    )
    verified.refresh_from_db()
    assert (verified.status, verified.discard_reason) == (ItemStatus.DISCARDED, "duplicate of 7")
    assert change is not None
    row = ItemStatusChange.objects.get()
    assert (row.changed_by, row.from_status, row.to_status, row.reason, row.rule) == (
        users[role],
        ItemStatus.VERIFIED,
        ItemStatus.DISCARDED,
        "duplicate of 7",
        "",
    )
    assert row.created_at is not None


def test_bad_status_and_stale_expectation(verified: Item, users: dict[str, Any]):
    with pytest.raises(ValidationFailed, match="unknown status 'gone'"):
        item_status_set(item=verified, user=users["reviewer"], status="gone", reason="x")
    with pytest.raises(Conflict, match="verified now, not draft"):
        item_status_set(
            item=verified,
            user=users["reviewer"],
            status=ItemStatus.DISCARDED,
            reason="x",
            expect=ItemStatus.DRAFT,
        )
    with pytest.raises(ValidationFailed, match="rule"):
        item_status_set(item=verified, user=None, status=ItemStatus.DRAFT, reason="")
    assert not ItemStatusChange.objects.exists()


def test_setting_the_same_status_records_nothing(verified: Item, users: dict[str, Any]):
    assert (
        item_status_set(item=verified, user=users["reviewer"], status="verified", reason="") is None
    )
    assert not ItemStatusChange.objects.exists()


def test_restore_goes_back_to_the_status_before_the_discard(verified: Item, users: dict[str, Any]):
    item_status_set(item=verified, user=users["admin"], status="discarded", reason="dup")
    with pytest.raises(Forbidden):
        item_restore(item=verified, user=users["annotator"])
    change = item_restore(item=verified, user=users["reviewer"], reason="not a duplicate")
    verified.refresh_from_db()
    assert (verified.status, verified.discard_reason) == (ItemStatus.VERIFIED, "")
    assert (change.changed_by, change.from_status, change.to_status, change.reason) == (
        users["reviewer"],
        ItemStatus.DISCARDED,
        ItemStatus.VERIFIED,
        "not a duplicate",
    )
    with pytest.raises(Conflict, match="not discarded"):
        item_restore(item=verified, user=users["reviewer"])
    assert ItemStatusChange.objects.count() == 2


def test_restore_of_an_unrecorded_discard_goes_back_to_draft(
    project: Project, users: dict[str, Any]
):
    item = ItemFactory(project=project, status="discarded", discard_reason="before history")
    change = item_restore(item=item, user=users["admin"])
    item.refresh_from_db()
    assert item.status == ItemStatus.DRAFT
    assert change.reason == "discard undone"


# --------------------------------------------------------------------------- pages


def test_the_item_page_shows_the_status_history(verified: Item, users: dict[str, Any], clients):
    item_status_set(item=verified, user=users["reviewer"], status="discarded", reason="dup of 7")
    item_status_set(item=verified, user=None, status="in_review", reason="", rule="consensus x")
    for role in ("admin", "reviewer", "annotator"):
        html = clients[role].get(item_url(verified)).content.decode()
        assert 'id="status-history"' in html
        assert "reviewer-user" in html and "Verified → Discarded" in html and "dup of 7" in html
        assert "automatic" in html and "Discarded → In review" in html and "consensus x" in html


def test_restore_button_only_for_reviewers_of_a_discarded_item(
    verified: Item, users: dict[str, Any], clients: dict[str, Client]
):
    restore = f'action="{item_url(verified, "restore/")}"'
    assert restore not in clients["reviewer"].get(item_url(verified)).content.decode()
    item_status_set(item=verified, user=users["reviewer"], status="discarded", reason="dup")
    reviewer_page = clients["reviewer"].get(item_url(verified)).content.decode()
    assert restore in reviewer_page and "Restore (verified)" in reviewer_page
    assert restore not in clients["annotator"].get(item_url(verified)).content.decode()


def test_restore_view(verified: Item, users: dict[str, Any], clients: dict[str, Client]):
    item_status_set(item=verified, user=users["reviewer"], status="discarded", reason="dup")
    url = item_url(verified, "restore/")
    assert clients["annotator"].post(url, {"reason": "mine"}).status_code == 403
    assert clients["outsider"].post(url, {"reason": "theirs"}).status_code == 404
    verified.refresh_from_db()
    assert verified.status == ItemStatus.DISCARDED

    done = clients["reviewer"].post(url, {"reason": "kept after all"})
    assert done.status_code == 302 and done["Location"] == item_url(verified)
    verified.refresh_from_db()
    assert verified.status == ItemStatus.VERIFIED
    latest = ItemStatusChange.objects.latest("id")
    assert (latest.changed_by, latest.reason) == (users["reviewer"], "kept after all")

    again = clients["reviewer"].post(url, {"reason": ""})
    assert again.status_code == 409
    assert "not discarded; reload the page" in again.content.decode()
    too_long = clients["admin"].post(url, {"reason": "x" * 1001})
    assert too_long.status_code == 400
    assert "at most 1000 characters" in too_long.content.decode()


def test_another_projects_reviewer_gets_404(
    verified: Item, other_project: Project, users: dict[str, Any], client_for: Any
):
    item_status_set(item=verified, user=users["reviewer"], status="discarded", reason="dup")
    stranger = UserFactory(username="other-reviewer")
    MembershipFactory(project=other_project, user=stranger, role=Role.REVIEWER)
    client = client_for(stranger)
    assert client.get(item_url(verified)).status_code == 404
    assert client.post(item_url(verified, "restore/")).status_code == 404
    # Nor with the item under the reviewer's own project's id.
    wrong = f"/projects/{other_project.pk}/items/{verified.pk}/restore/"
    assert client.post(wrong).status_code == 404
    verified.refresh_from_db()
    assert verified.status == ItemStatus.DISCARDED


def test_item_page_queries_do_not_grow_with_history(
    project: Project,
    users: dict[str, Any],
    clients: dict[str, Client],
    django_assert_max_num_queries,
):
    item = ItemFactory(project=project, status="discarded", discard_reason="dup")
    clients["reviewer"].get(item_url(item))  # warm caches (sessions, content types)
    with django_assert_max_num_queries(12) as one:
        clients["reviewer"].get(item_url(item))
    for _ in range(10):
        ItemStatusChangeFactory(item=item, changed_by=users["admin"])
    with django_assert_max_num_queries(len(one.captured_queries)):
        page = clients["reviewer"].get(item_url(item))
    assert page.content.decode().count("admin-user") >= 10
