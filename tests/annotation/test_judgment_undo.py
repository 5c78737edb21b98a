"""Undoing one's last judgment (issue 25, finding 2): a change is allowed while the outcome is
pending and within JUDGMENT_UNDO_MINUTES, kept as a version (never overwritten), refused with
a clear message after settlement, after the window, or when another window changed it first.
The judge page's progress line, and the htmx submit that answers with the next item in place,
within its query budget."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext, override_settings
from django.urls import reverse
from django.utils import timezone

from annotation.judgment_tasks import services
from annotation.judgment_tasks.models import Judgment, JudgmentVersion, Outcome
from annotation.judgment_tasks.services import judgment_task_ensure_defaults
from benchmark.exceptions import Conflict, Forbidden
from benchmark.models import Item, Toolset
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


def _setup(n_items: int = 3, people: int = 3) -> tuple[Any, list[Any]]:
    project = ProjectFactory(data_format="atp", toolset=Toolset.objects.create(name="atp-u"))
    for i in range(n_items):
        ItemFactory(project=project, external_id=f"u{i}", position=i)
    (task,) = judgment_task_ensure_defaults(project=project)
    users = []
    for n in range(people):
        user = UserFactory(username=f"undo{n}")
        MembershipFactory(project=project, user=user, role="annotator")
        users.append(user)
    return task, users


def _judge(task: Any, user: Any, value: str) -> Judgment:
    lease = services.assignment_next_for_user(task=task, user=user)
    assert lease is not None
    return services.judgment_submit(task=task, item=lease.item, user=user, value=value)


def test_a_change_keeps_the_earlier_values_and_decides_the_outcome_again() -> None:
    task, (a, b, c) = _setup()
    first = _judge(task, a, "remove_ambiguous")
    _judge(task, b, "keep")
    changed = services.judgment_edit(
        task=task, item=first.item, user=a, version=1, value="keep", comment="misread"
    )
    assert (changed.value, changed.comment, changed.version) == ("keep", "misread", 2)
    assert changed.edited_at is not None
    (old,) = JudgmentVersion.objects.filter(judgment=first)
    assert (old.number, old.value, old.created_at) == (1, "remove_ambiguous", first.created_at)
    assert old.author == a
    assert Judgment.objects.filter(task=task, item=first.item).count() == 2  # no new judgment
    # The third judgment settles the item from the changed value: all keep.
    _judge(task, c, "keep")
    assert Outcome.objects.get(task=task, item=first.item).verdict == "accepted"


def test_a_change_is_refused_once_settled_after_the_window_or_when_stale() -> None:
    task, (a, b, c) = _setup()
    first = _judge(task, a, "keep")
    with pytest.raises(Conflict, match="changed this judgment in another window"):
        services.judgment_edit(task=task, item=first.item, user=a, version=2, value="keep")
    later = timezone.now() + timedelta(minutes=11)
    with pytest.raises(Conflict, match="can be undone for 10 minutes after submitting"):
        services.judgment_edit(
            task=task, item=first.item, user=a, version=1, value="keep", now=later
        )
    with override_settings(JUDGMENT_UNDO_MINUTES=20):
        services.judgment_edit(
            task=task, item=first.item, user=a, version=1, value="remove_not_visual", now=later
        )
    _judge(task, b, "keep")
    _judge(task, c, "keep")
    assert Outcome.objects.get(task=task, item=first.item).verdict == "accepted"
    with pytest.raises(Conflict, match=r"its outcome is settled \(accepted\)"):
        services.judgment_edit(task=task, item=first.item, user=a, version=2, value="keep")
    with pytest.raises(Forbidden, match="no judgment of this item"):
        services.judgment_edit(
            task=task, item=Item.objects.get(external_id="u2"), user=a, version=1, value="keep"
        )
    assert JudgmentVersion.objects.count() == 1


def _htmx(client: Client, url: str, data: dict[str, Any]) -> tuple[Any, int]:
    with CaptureQueriesContext(connection) as queries:
        response = client.post(url, data, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="judging")
    return response, len(queries)


def test_htmx_submit_answers_with_the_next_item_in_place_within_its_budget() -> None:
    """One request: the submit, the next lease and the next item's judging area, in fewer
    queries than the three requests it replaces (submit 15, next 10, page 9: 34); the first
    judgment of an item creates its outcome row (26), the next 23 (an annotator's fresh lease
    has no judgment of theirs to read)."""
    task, (a, b, _) = _setup()
    clients = []
    for user in (a, b):
        client = Client()
        client.force_login(user)
        client.get(reverse("annotation:task_list", args=[task.project_id]))  # session warmed
        clients.append(client)
    counts = []
    for client in clients:
        lease = client.post(reverse("annotation:task_next", args=[task.pk]))
        response, queries = _htmx(client, lease["Location"], {"value": '"keep"'})
        assert response.status_code == 200
        nxt = Item.objects.get(external_id="u1")
        assert response["HX-Push-Url"] == reverse("annotation:judge", args=[task.pk, nxt.pk])
        body = response.content.decode()
        assert '<div id="judging"' in body and "<html" not in body
        assert "<title>u1 · Query verification · Benchwright</title>" in body
        assert 'id="undo"' in body and "u0" in body
        counts.append(queries)
    assert max(counts) <= 26, counts


def test_progress_line_counts_today_left_and_position() -> None:
    task, (a, b, _) = _setup(n_items=4)
    Item.objects.filter(external_id="u3").update(status="discarded", discard_reason="off-topic")
    _judge(task, a, "keep")
    client = Client()
    client.force_login(a)
    lease = client.post(reverse("annotation:task_next", args=[task.pk]))
    page = client.get(lease["Location"])
    progress = page.context["progress"]
    assert (progress["done_today"], progress["left"], progress["position"], progress["total"]) == (
        1, 2, 2, 3,
    )  # fmt: skip
    assert progress["last"].item.external_id == "u0"
    # Another person's judgments are not this person's progress.
    client.force_login(b)
    lease = client.post(reverse("annotation:task_next", args=[task.pk]))
    progress = client.get(lease["Location"]).context["progress"]
    assert (progress["done_today"], progress["left"], progress["last"]) == (0, 3, None)


def test_the_page_of_a_judgment_past_its_window_says_why_it_cannot_change() -> None:
    task, (a, _, _) = _setup()
    judgment = _judge(task, a, "keep")
    Judgment.objects.filter(pk=judgment.pk).update(created_at=timezone.now() - timedelta(hours=1))
    client = Client()
    client.force_login(a)
    page = client.get(reverse("annotation:judge", args=[task.pk, judgment.item_id]))
    assert "can be undone for 10 minutes after submitting" in page.content.decode()
    assert 'id="judgment"' not in page.content.decode()
    # A change posted anyway is refused with the message, nothing changed.
    refused = client.post(
        reverse("annotation:judge", args=[task.pk, judgment.item_id]),
        {"value": '"remove_ambiguous"', "version": "1"},
    )
    assert refused.status_code == 409
    assert "can be undone for 10 minutes" in refused.content.decode()
    assert Judgment.objects.get(pk=judgment.pk).value == "keep"
