"""Gold units in a real browser (issue 26): a reviewer opens a settled unit of a "rate the
judge" task, follows "Mark as gold…", gives the rating that counts and marks it; the annotator
rates their queue and is served the gold unit among the others (nothing says so); the gold page
then shows the annotator's gold accuracy."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.judgment_tasks.models import Assignment, JudgmentTask, Outcome, TaskUnit
from benchmark.models import Role
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_reviewer_marks_a_gold_unit_annotator_is_served_it(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Rating reports")
    rita, ann = UserFactory(username="rita"), UserFactory(username="ann")
    MembershipFactory(project=project, user=rita, role=Role.REVIEWER)
    MembershipFactory(project=project, user=ann, role=Role.ANNOTATOR)
    task = JudgmentTask.objects.create(
        project=project, name="Rate the judge", question="Agree with the report?",
        scheme="ordinal", overlap=1, consensus="majority", updates_item_status=False,
        labels=[{"value": 0, "label": "0 · disagree"}, {"value": 1, "label": "1 · partly"},
                {"value": 2, "label": "2 · agree", "accept": True}],
        unit_kind="judge-report", gold_rate=50, gold_min_judgments=1,
    )  # fmt: skip
    first = ItemFactory(project=project, external_id="answer-1", position=0)
    known = ItemFactory(project=project, external_id="answer-2", position=1)
    for n, label in enumerate(("precision", "recall")):
        TaskUnit.objects.create(task=task, item=first, key=f"response:1:{label}", position=n)
    TaskUnit.objects.create(task=task, item=known, key="response:2:chief", position=5)
    Outcome.objects.create(
        task=task, item=known, unit="response:2:chief", verdict="rejected", value=1
    )

    # The reviewer opens the settled unit and marks it gold with the rating that counts.
    reviewer = login_page(rita)
    reviewer.goto(f"/judgment-tasks/{task.pk}/units/response:2:chief/")
    reviewer.locator("#mark-gold-link").click()
    expect(reviewer.get_by_label("Unit")).to_have_value("response:2:chief")
    expect(reviewer.get_by_label("Item")).to_have_value(str(known.pk))
    reviewer.get_by_label("Value").select_option(label="1 · partly")
    reviewer.get_by_role("button", name="Mark as gold").click()
    row = reviewer.locator('tr[data-gold-unit="response:2:chief"]')
    expect(row.locator("[data-gold-value]")).to_have_text("1")

    # The annotator rates every unit of the queue "2"; the gold unit comes among them.
    annotator = login_page(ann)
    seen = []
    for n in range(3):
        annotator.goto(f"/judgment-tasks/{task.pk}/next/")
        expect(annotator.locator("form#judgment")).to_be_visible()
        ready(annotator)
        title = annotator.locator("#unit-title").inner_text()
        seen.append(title)
        expect(annotator.locator("main")).not_to_contain_text("gold")
        annotator.get_by_label("2 · agree").check()
        annotator.get_by_role("button", name=re.compile("^Submit")).click()
        key = title.split()[-1]  # the unit's key ends its title
        expect(annotator.locator("main")).not_to_contain_text(key)
        if n < 2:  # shown from the queue: the rating is saved in the background; wait for it
            # before leaving the page (on PostgreSQL it may not be through yet)
            today = annotator.locator("#judge-progress [data-progress=today]")
            expect(today).to_have_text(f"{n + 1} judged today")
    expect(annotator.locator("h1")).to_have_text("Nothing left to judge")
    assert len(set(seen)) == 3
    assert Assignment.objects.get(task=task, user=ann, unit="response:2:chief").gold
    assert Assignment.objects.filter(task=task, user=ann).count() == 3

    # The gold page shows her gold accuracy: 0 of 1 (she said 2, the unit's rating is 1).
    reviewer = login_page(rita)
    reviewer.goto(f"/gold/{task.pk}/")
    person = reviewer.locator('tr[data-gold-annotator="ann"]')
    expect(person.locator("[data-gold-accuracy]")).to_have_text("0.000")
    expect(person).to_contain_text("below threshold")
