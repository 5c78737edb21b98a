"""The team page in a real browser: a reviewer opens it from the project page, sees the
figures and the throughput chart, and narrows it to the last 7 days and to one task with the
filters (htmx swaps the figures and the address follows); no Content-Security-Policy violation
(checked by ``login_page``)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from benchmark.models import Role
from tests.factories import (
    DatedJudgmentFactory,
    ItemFactory,
    JudgmentTaskFactory,
    MembershipFactory,
    OutcomeFactory,
    ProjectFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_reviewer_reads_and_filters_the_team_page(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Team project")
    reviewer = UserFactory(username="rita")
    MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)
    keep = JudgmentTaskFactory(project=project, name="Keep?")
    label = JudgmentTaskFactory(
        project=project, name="Label", scheme="nominal", labels=[{"value": "a", "accept": True}]
    )
    item, other = ItemFactory(project=project), ItemFactory(project=project)
    OutcomeFactory(task=keep, item=item, verdict="accepted", value=1)
    now = timezone.now()
    for name, at in (("ann", now), ("bea", now - timedelta(days=20))):
        person = UserFactory(username=name)
        MembershipFactory(project=project, user=person, role=Role.ANNOTATOR)
        DatedJudgmentFactory(task=keep, item=item, user=person, value=1, seconds=12, at=at)
    DatedJudgmentFactory(
        task=label, item=other, user=UserFactory(username="cyd"), value="a", seconds=8, at=now
    )

    page = login_page(reviewer)
    page.goto(f"/projects/{project.pk}/")
    ready(page)
    page.click("a[data-team-link]")
    expect(page.locator("h1")).to_have_text("Team")
    expect(page.locator("[data-total-done]")).to_have_text("3")
    expect(page.locator("#team-chart svg rect")).not_to_have_count(0)
    expect(page.locator("tr.team-person")).to_have_count(3)
    expect(page.locator('tr[data-annotator="ann"] [data-agreement]')).to_have_text("100.0%")

    page.select_option("#id_days", "7")
    expect(page.locator("[data-total-done]")).to_have_text("2")
    expect(page.locator('tr[data-annotator="bea"]')).to_have_count(0)
    expect(page).to_have_url(re.compile(r"days=7"))

    page.select_option("#id_task", str(keep.pk))
    expect(page.locator("[data-total-done]")).to_have_text("1")
    expect(page.locator('tr[data-annotator="cyd"]')).to_have_count(0)
    expect(page.locator("[data-model-draft-figures]")).to_be_visible()
