"""Three annotators vote on an m&m's plan with the keyboard, two agree and one does not; the
item lands in the disagreement queue, a reviewer resolves it, and the agreement dashboard's
figures change accordingly."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from annotation.judgment_tasks.models import JudgmentTask, Outcome
from benchmark.models import Project
from review.demo import demo_load

pytestmark = pytest.mark.django_db(transaction=True)


def test_vote_dispute_resolve_and_agreement(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    demo_load()
    project = Project.objects.get(data_format="mms")
    task = JudgmentTask.objects.get(project=project)
    first = project.items.order_by("position").first()
    users = get_user_model().objects

    for name, key in [("annotator1", "1"), ("annotator2", "1"), ("annotator3", "0")]:
        page = login_page(users.get(username=name))
        page.goto(f"/projects/{project.pk}/judgment-tasks/")
        page.get_by_role("button", name="Judge next item").click()
        expect(page.locator("h1")).to_have_text(first.external_id)
        expect(page.locator("svg.plan-graph").first).to_be_visible()
        # blind: nobody else's vote is on the page
        expect(page.locator("table.judgments")).to_have_count(0)
        ready(page)
        page.keyboard.press(key)
        expect(page.locator("h1")).not_to_have_text(first.external_id)
        # The next item is shown at once and the vote saved in the background (its answer
        # updates the progress line), or by the server's answer when nothing was left.
        saved = page.locator("#judge-progress", has_text="1 judged today").or_(
            page.locator("h1", has_text="Nothing left to judge")
        )
        expect(saved).to_be_visible()

    outcome = Outcome.objects.get(task=task, item=first)
    assert outcome.verdict == "disputed"

    reviewer = login_page(users.get(username="reviewer"))
    reviewer.goto(f"/agreement/{task.pk}/")
    rater_rows = reviewer.locator("#rater-table tbody tr")
    expect(rater_rows).to_have_count(3)
    expect(reviewer.locator("#rater-table")).not_to_contain_text("1.000")  # no outcome yet

    reviewer.goto(f"/adjudication/{task.pk}/disputes/")
    reviewer.get_by_role("link", name=first.external_id).click()
    expect(reviewer.locator("table.judgments tbody tr")).to_have_count(3)
    reviewer.get_by_label("Accept").check()
    reviewer.get_by_label("Reason").fill("The plan solves the query; annotator3 misread step 2.")
    reviewer.get_by_role("button", name="Record decision").click()
    # Adjudication asks before it records.
    reviewer.locator("dialog#confirm-decision").get_by_role("button", name="Record").click()
    expect(reviewer.locator(".empty")).to_contain_text("No disagreements")

    reviewer.goto(f"/agreement/{task.pk}/")

    def with_outcome(name: str):  # type: ignore[no-untyped-def]
        row = reviewer.locator("#rater-table tbody tr", has_text=name)
        return row.locator("td").nth(2)

    expect(with_outcome("annotator3")).to_have_text("0.000")
    expect(with_outcome("annotator1")).to_have_text("1.000")
    first.refresh_from_db()
    assert first.status == "verified"
