"""On the agreement page of a task that serves items by doubt, a reviewer recomputes the doubt
(a job, run in-process without a broker) and sees the split item first, the unanimous ones after
it in position order (the page passes the axe check)."""

from __future__ import annotations

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


def test_reviewer_recomputes_and_sees_items_by_doubt(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Doubt")
    reviewer = UserFactory(username="rev")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    task = JudgmentTaskFactory(
        project=project, name="Keep?", overlap=3, consensus="majority", serve_by_doubt=True
    )
    a, b = UserFactory(username="ann-a"), UserFactory(username="ann-b")
    for n, votes in enumerate([(1, 1), (1, 0), (0, 0)]):
        item = ItemFactory(project=project, external_id=f"q{n}", position=n)
        for user, value in zip((a, b), votes, strict=True):
            JudgmentFactory(task=task, item=item, user=user, value=value)

    page = login_page(reviewer)
    page.goto(f"/agreement/{task.pk}/")
    ready(page)
    section = page.locator("#items-by-doubt")
    expect(section).to_contain_text("This task serves items by doubt")
    expect(section.locator("#doubt-empty")).to_be_visible()
    section.get_by_role("button", name="Recompute doubt").click()
    ready(page)
    rows = page.locator("#doubt-table tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_have_attribute("data-item", "q1")  # the split one
    expect(rows.nth(0)).to_contain_text("1.000")
    expect(rows.nth(1)).to_have_attribute("data-item", "q0")  # ties by position
