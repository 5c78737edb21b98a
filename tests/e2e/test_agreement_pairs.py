"""A reviewer opens the agreement page of a task twelve annotators judged, turns to the second
page of annotator pairs, orders them by fewest shared items, and opens one pair's confusion
matrix, which loads beside the table without leaving the page."""

from __future__ import annotations

import random

import pytest
from playwright.sync_api import expect

from tests.factories import (
    ItemFactory,
    JudgmentFactory,
    JudgmentTaskFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_pairs_paged_and_confusion_on_demand(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Pairs")
    reviewer = UserFactory(username="rev")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    task = JudgmentTaskFactory(project=project, name="Keep?", overlap=3)
    people = [UserFactory(username=f"ann{n:02d}") for n in range(12)]
    rng = random.Random(3)
    for n in range(40):
        item = ItemFactory(project=project, external_id=f"q{n}", position=n)
        for user in rng.sample(people, 3):
            JudgmentFactory(task=task, item=item, user=user, value=rng.choice([0, 1]))

    page = login_page(reviewer)
    page.goto(f"/agreement/{task.pk}/")
    ready(page)
    rows = page.locator("#pair-table tbody tr")
    expect(rows).to_have_count(25)
    first = rows.nth(0).locator("td").nth(0).inner_text()
    page.locator("#agreement-pairs").get_by_role("link", name="Next →").click()
    expect(page).to_have_url(f"{page.url.split('?')[0]}?page=2")
    expect(page.locator("#agreement-pairs")).to_have_count(1)  # swapped, not nested
    expect(page.locator("#agreement-pairs")).to_contain_text("Page 2 of")
    expect(rows.nth(0).locator("td").nth(0)).not_to_have_text(first)

    page.get_by_role("link", name="fewest shared items").click()
    expect(page.locator("#agreement-pairs")).to_contain_text("Page 1 of")
    shared = [int(t) for t in rows.locator("td:nth-child(2)").all_inner_texts()]
    assert shared == sorted(shared)

    pair = rows.nth(0).locator("td").nth(0).inner_text()
    rows.nth(0).get_by_role("link", name="Confusion").click()
    figure = page.locator("#pair-confusion figure")
    expect(figure).to_be_visible()
    expect(figure).to_contain_text(pair.split(" × ")[0])
    expect(figure.locator("svg rect")).to_have_count(4)
    assert "/pair/" not in page.url  # the confusion is swapped in, the address stays
