"""Gold units (issue 26): in a task with units (rate one judge report; score one criterion of
one answer) a reviewer marks a unit gold with the rating that counts; gold units are mixed into
the unit queue at the task's rate, look like any other unit to the annotator (page, API,
statements), never enter outcomes or agreement figures, and count toward gold accuracy exactly
as gold items do."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.judgment_tasks import gold, services
from annotation.judgment_tasks.models import (
    Assignment,
    GoldItem,
    Judgment,
    JudgmentTask,
    Outcome,
    TaskUnit,
)
from benchmark.exceptions import NotFound, ValidationFailed
from benchmark.models import Item
from review.gold import selectors as gold_selectors
from review.gold import services as gold_services
from tests.factories import MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

LABELS = ("precision", "recall", "chief")
CSRF = re.compile(r"[A-Za-z0-9]{64}")
AGENT = re.compile(r'(id="unit-title"><span class="chip">)[^<]*(</span>)')
PROGRESS = re.compile(
    r'data-progress="today">(\d+) judged today.*?data-progress="left">(\d+) left for you'
    r'.*?data-progress="position">(?:Item|Unit) (\d+) of (\d+)',
    re.S,
)


def _unit_task(project: Any, *, gold_rate: int = 50, n_items: int = 3) -> JudgmentTask:
    """A "rate the judge" task (0-2) over ``n_items`` items x 3 agent reports; the last
    item's three units settled (accepted 2, rejected 0, rejected 1)."""
    task = JudgmentTask.objects.create(
        project=project, name="rate", question="Agree with the report?", scheme="ordinal",
        labels=[{"value": 0, "label": "0 · disagree"}, {"value": 1, "label": "1 · partly"},
                {"value": 2, "label": "2 · agree", "accept": True}],
        overlap=2, consensus="majority", updates_item_status=False, unit_kind="judge-report",
        gold_rate=gold_rate,
    )  # fmt: skip
    position = 0
    for i in range(n_items):
        item = Item.objects.create(
            project=project, external_id=f"it-{i}", position=i, query=f"Question {i}"
        )
        for label in LABELS:
            TaskUnit.objects.create(
                task=task, item=item, key=f"response:{i + 1}:{label}", position=position
            )
            position += 1
    settled = Item.objects.get(project=project, external_id=f"it-{n_items - 1}")
    for label, (verdict, value) in zip(
        LABELS, [("accepted", 2), ("rejected", 0), ("rejected", 1)], strict=True
    ):
        Outcome.objects.create(
            task=task, item=settled, unit=f"response:{n_items}:{label}", verdict=verdict,
            value=value,
        )  # fmt: skip
    return task


@pytest.fixture
def world() -> Any:
    project = ProjectFactory(name="rating reports")
    task = _unit_task(project)
    people = {}
    for name, role in (("ann", "annotator"), ("ben", "annotator"), ("rev", "reviewer")):
        people[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=people[name], role=role)
    return task, people


def _mark_all(task: JudgmentTask, reviewer: Any) -> list[GoldItem]:
    """The settled item's three units marked gold: the first with its accepted value (2),
    the others with the rating the reviewer gives (0 and 1)."""
    item = Item.objects.get(project=task.project, external_id="it-2")
    return [
        gold_services.gold_mark(task=task, item=item, user=reviewer, unit="response:3:precision"),
        gold_services.gold_mark(
            task=task, item=item, user=reviewer, unit="response:3:recall", value="0"
        ),
        gold_services.gold_mark(
            task=task, item=item, user=reviewer, unit="response:3:chief", value=1
        ),
    ]


def _judge_all(task: JudgmentTask, user: Any, value: Any) -> list[tuple[str, bool]]:
    """Ask "next" and rate until nothing is left: (unit key, served as gold) in order;
    ``value``: a rating, or a function of the unit key."""
    served = []
    for _ in range(40):
        lease = services.assignment_next_for_user(task=task, user=user)
        if lease is None:
            break
        rating = value(lease.unit) if callable(value) else value
        services.judgment_submit(
            task=task, item=lease.item, user=user, value=rating, unit=lease.unit
        )
        served.append((lease.unit, lease.gold))
    return served


# ----------------------------------------------------------------------------- marking


def test_marking_a_unit_takes_its_value_and_refuses_what_cannot_be_gold(world: Any) -> None:
    task, people = world
    marks = _mark_all(task, people["rev"])
    assert [(m.unit, m.value) for m in marks] == [
        ("response:3:precision", 2), ("response:3:recall", 0), ("response:3:chief", 1)
    ]  # fmt: skip
    settled = Item.objects.get(project=task.project, external_id="it-2")
    open_item = Item.objects.get(project=task.project, external_id="it-0")
    # Another value keeps the earlier mark; the unit's key tells its marks apart.
    again = gold_services.gold_mark(
        task=task, item=settled, user=people["rev"], unit="response:3:recall", value=1
    )
    assert GoldItem.objects.filter(task=task, unit="response:3:recall").count() == 2
    assert GoldItem.objects.get(task=task, unit="response:3:recall", removed_at=None) == again
    refusals = [
        ({"item": settled}, "say which unit of item it-2"),
        ({"item": settled, "unit": "response:1:chief"}, "is not a unit of item it-2"),
        ({"item": open_item, "unit": "response:1:chief"}, "not settled yet"),
        ({"item": settled, "unit": "response:3:chief", "value": "7"}, "is not one of"),
    ]
    for kwargs, message in refusals:
        with pytest.raises(ValidationFailed, match=message):
            gold_services.gold_mark(task=task, user=people["rev"], **kwargs)
    with pytest.raises(ValidationFailed, match="accepted outcome"):  # rejected 0: say the value
        gold_services.gold_mark(
            task=task, item=settled, user=people["rev"], unit="response:3:recall", value=""
        )
    gold_services.gold_unmark(
        task=task, item_id=settled.pk, user=people["rev"], unit="response:3:chief"
    )
    with pytest.raises(NotFound, match="unit 'response:3:chief' of this item"):
        gold_services.gold_unmark(
            task=task, item_id=settled.pk, user=people["rev"], unit="response:3:chief"
        )
    # Several scores at once have no single answer that counts: no gold rate, no mark.
    task.scheme, task.labels = "scores", [{"value": "mi", "label": "MI", "min": 0, "max": 2}]
    with pytest.raises(ValidationFailed, match="several scores"):
        services._check_quality_settings(task)


# ----------------------------------------------------------------------------- the queue


def test_gold_units_are_served_at_the_rate_once_each_and_never_enter_outcomes(
    world: Any,
) -> None:
    task, people = world
    _mark_all(task, people["rev"])
    before = list(Outcome.objects.filter(task=task).order_by("pk").values_list(
        "unit", "verdict", "value"))  # fmt: skip
    served = _judge_all(task, people["ann"], value=0)
    golds = [n for n, (_, is_gold) in enumerate(served) if is_gold]
    phase = gold.gold_phase(task_id=task.pk, user_id=people["ann"].pk, period=2)
    # Six open units and three gold units: gold after ``phase`` others, then every 2nd.
    assert golds == [phase, phase + 2, phase + 4]
    assert sorted(u for u, g in served if g) == [f"response:3:{x}" for x in sorted(LABELS)]
    assert len(served) == 9 and len({u for u, _ in served}) == 9
    # A second annotator meets them too; the gold units still take no place of the overlap.
    assert len(_judge_all(task, people["ben"], value=0)) == 9
    after = list(Outcome.objects.filter(task=task).order_by("pk").values_list(
        "unit", "verdict", "value"))  # fmt: skip
    assert after[: len(before)] == before  # the gold units' outcomes are as they were
    assert not Judgment.objects.filter(task=task, unit__startswith="response:3:").exists()
    assert Judgment.with_gold.filter(task=task, gold=True).count() == 6
    assert set(Judgment.with_gold.filter(gold=True).values_list("agrees", flat=True)) == {None}
    # The other units were settled by the two people's zeros alone.
    assert Outcome.objects.filter(task=task, verdict="rejected", value=0).count() == 6 + 1


def test_gold_accuracy_of_units_by_hand(world: Any) -> None:
    """Gold values 2, 0, 1 (precision, recall, chief). Ann rates 2, 0, 0: 2 of 3 right; Ben
    rates 2, 0, 1: 3 of 3. Wilson 95 % (z = 1.959964): 2 of 3 → 0.2077–0.9385; 3 of 3 →
    0.4385–1.0 (worked out by hand from the score interval's formula)."""
    task, people = world
    _mark_all(task, people["rev"])
    ann = {"response:3:precision": 2, "response:3:recall": 0, "response:3:chief": 0}
    ben = {"response:3:precision": 2, "response:3:recall": 0, "response:3:chief": 1}
    _judge_all(task, people["ann"], value=lambda unit: ann.get(unit, 1))
    _judge_all(task, people["ben"], value=lambda unit: ben.get(unit, 1))
    assert gold.gold_tallies(tasks=[task]) == {
        (task.pk, people["ann"].pk): (2, 3, "ann"),
        (task.pk, people["ben"].pk): (3, 3, "ben"),
    }
    rows = {r.username: r for r in gold_selectors.gold_report(user=people["rev"], task=task).rows}
    assert rows["ann"].accuracy == pytest.approx(2 / 3)
    assert (rows["ann"].low, rows["ann"].high) == pytest.approx((0.2077, 0.9385), abs=1e-4)
    assert (rows["ben"].low, rows["ben"].high) == pytest.approx((0.4385, 1.0), abs=1e-4)
    assert not rows["ann"].flagged  # fewer than the task's minimum of 5 gold judgments
    task.gold_min_judgments = 3
    task.save(update_fields=["gold_min_judgments"])
    flagged = gold_selectors.gold_report(user=people["rev"], task=task).flagged
    assert [r.username for r in flagged] == ["ann"]  # 0.67 < 0.7


# ----------------------------------------------------------------------------- invisible


def _normalized(html: str, unit: TaskUnit, previous: TaskUnit | None) -> str:
    for u, name in ((unit, "UNIT"), (previous, "PREVIOUS")):
        if u is None:
            continue
        # Units of one item share its external id and query: one name for either item.
        # The key as it is, and URL-encoded (the judge page's lease-ahead URL names it).
        for key in (u.key, quote(u.key, safe="/")):
            html = html.replace(key, f"{name}-KEY")
        html = html.replace(u.item.external_id, "AN-ITEM-EXT")
        html = html.replace(u.item.query, "AN-ITEM-QUERY")
        html = html.replace(f"/items/{u.item_id}/", "/items/AN-ITEM-PK/")
    html = AGENT.sub(r"\1AGENT\2", html)  # which agent's report: the unit's own content
    html = CSRF.sub("TOKEN", html)
    return PROGRESS.sub("PROGRESS", html)


def test_unit_pages_of_gold_and_other_units_differ_only_in_the_unit(world: Any) -> None:
    task, people = world
    _mark_all(task, people["rev"])
    client = Client()
    client.force_login(people["ann"])
    pages: list[tuple[bool, str]] = []
    figures: list[tuple[int, ...]] = []
    previous = None
    while True:
        answer = client.post(reverse("annotation:task_next", args=[task.pk]))
        if answer.status_code != 302:
            break
        lease = Assignment.objects.get(task=task, user=people["ann"], status="active")
        unit = TaskUnit.objects.select_related("item").get(task=task, key=lease.unit)
        assert answer["Location"] == reverse("annotation:judge_unit", args=[task.pk, unit.key])
        html = client.get(answer["Location"]).content.decode()
        found = PROGRESS.search(html)
        assert found is not None
        figures.append(tuple(int(n) for n in found.groups()))
        pages.append((lease.gold, _normalized(html, unit, previous)))
        done = client.post(answer["Location"], {"value": "1", "seconds": "3"})
        assert done.status_code == 302
        previous = unit
    assert len(pages) == 9 and [g for g, _ in pages].count(True) == 3
    # One more judged today and one fewer left per unit, gold or not.
    assert [f[0] for f in figures] == list(range(9))
    assert [f[1] for f in figures] == list(range(9, 0, -1))
    gold_pages = {html for g, html in pages[1:] if g}
    other_pages = {html for g, html in pages[1:] if not g}
    assert len(gold_pages) == 1 and gold_pages == other_pages
    assert "gold" not in pages[-1][1].lower()


def test_api_and_statements_of_next_are_the_same_for_gold_and_other_units(world: Any) -> None:
    """The API's "next" and judgment answers have the same fields for a gold unit (no
    "gold", no status), and "next" runs the same number of statements either way."""
    task, people = world
    _mark_all(task, people["rev"])
    api = APIClient()
    api.force_authenticate(people["ben"])
    shapes: dict[bool, set[tuple[str, ...]]] = {True: set(), False: set()}
    statements: dict[bool, set[int]] = {True: set(), False: set()}
    while True:
        with CaptureQueriesContext(connection) as ctx:
            answer = api.post(f"/api/judgment-tasks/{task.pk}/next/")
        if answer.status_code == 204:
            break
        body = answer.json()
        lease = Assignment.objects.get(task=task, user=people["ben"], status="active")
        statements[lease.gold].add(len(ctx.captured_queries))
        shapes[lease.gold].add(tuple(sorted(body)))
        posted = api.post(
            f"/api/judgment-tasks/{task.pk}/judgments/",
            {"item": body["item"], "unit": lease.unit, "value": 1},
            format="json",
        )
        assert posted.status_code == 201, posted.content
        shapes[lease.gold].add(tuple(sorted(posted.json())))
    assert shapes[True] and shapes[True] == shapes[False]
    assert not any("gold" in key or "status" in key for shape in shapes[True] for key in shape)
    assert len(statements[True]) == 1 and statements[True] == statements[False], statements
    listed = api.get(f"/api/judgment-tasks/{task.pk}/judgments/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert len(rows) == 9 and all("gold" not in key for row in rows for key in row)


def test_agreement_figures_leave_gold_units_out(world: Any) -> None:
    """The rate-the-judge report reads people's ratings through ``Judgment.objects``: a
    gold rating is not among them."""
    task, people = world
    _mark_all(task, people["rev"])
    _judge_all(task, people["ann"], value=2)
    rated = set(Judgment.objects.filter(task=task).values_list("unit", flat=True))
    assert rated and not any(unit.startswith("response:3:") for unit in rated)
    assert set(Judgment.with_gold.filter(task=task).values_list("unit", flat=True)) > rated


def test_the_gold_page_marks_a_unit_and_unmarks_it(world: Any) -> None:
    task, people = world
    client = Client()
    client.force_login(people["rev"])
    url = reverse("review:gold", args=[task.pk])
    page = client.get(url + "?item=it-2&unit=response:3:chief").content.decode()
    assert 'name="unit"' in page and 'value="response:3:chief"' in page
    done = client.post(
        reverse("review:gold_mark", args=[task.pk]),
        {"item": "it-2", "unit": "response:3:chief", "value": "1"},
    )
    assert done.status_code == 302
    page = client.get(url).content.decode()
    assert 'data-gold-unit="response:3:chief"' in page
    bad = client.post(
        reverse("review:gold_mark", args=[task.pk]),
        {"item": "it-0", "unit": "response:1:chief", "value": "1"},
    )
    assert bad.status_code == 400 and "not settled yet" in bad.content.decode()
    item = Item.objects.get(project=task.project, external_id="it-2")
    gone = client.post(
        reverse("review:gold_unmark", args=[task.pk, item.pk]), {"unit": "response:3:chief"}
    )
    assert gone.status_code == 302
    assert not GoldItem.objects.filter(task=task, removed_at=None).exists()
    # Annotators may not see the page.
    client.force_login(people["ann"])
    assert client.get(url).status_code == 403
