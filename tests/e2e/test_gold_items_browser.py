"""Gold items in a real browser (issue 26): a reviewer marks a verified item gold on the task's
gold page; the annotator judges their queue and is served it (nothing on the page says so);
the reviewer reads the annotator's gold accuracy on the Team page, flagged below the
threshold, and pauses their queue; the annotator's "next" then says a reviewer paused it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.judgment_tasks.models import Assignment, JudgmentTask, Outcome
from benchmark.models import ItemStatus, Role
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_reviewer_marks_gold_annotator_is_served_it_reviewer_pauses(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Gold project")
    rita, ann = UserFactory(username="rita"), UserFactory(username="ann")
    MembershipFactory(project=project, user=rita, role=Role.REVIEWER)
    MembershipFactory(project=project, user=ann, role=Role.ANNOTATOR)
    task = JudgmentTask.objects.create(
        project=project, name="Keep?", question="Keep this item?", scheme="binary", overlap=1,
        consensus="majority", gold_rate=50, gold_min_judgments=1,
    )  # fmt: skip
    for i in range(3):
        ItemFactory(project=project, external_id=f"draft-{i}", position=i)
    gold = ItemFactory(
        project=project, external_id="known-1", position=9, status=ItemStatus.VERIFIED
    )
    Outcome.objects.create(task=task, item=gold, verdict="accepted", value=1)

    # The reviewer marks the verified item gold, with the answer that counts.
    reviewer = login_page(rita)
    reviewer.goto(f"/gold/{task.pk}/")
    reviewer.get_by_label("Item").fill("known-1")
    reviewer.get_by_label("Value").select_option(label="1 · yes")
    reviewer.get_by_role("button", name="Mark as gold").click()
    expect(reviewer.locator('tr[data-gold-item="known-1"] [data-gold-value]')).to_have_text("1")

    # The annotator judges every item of the queue "no"; the gold item comes among them.
    annotator = login_page(ann)
    seen = []
    for n in range(4):
        annotator.goto(f"/judgment-tasks/{task.pk}/next/")
        expect(annotator.locator("form#judgment")).to_be_visible()
        ready(annotator)
        name = annotator.locator("h1").inner_text()
        seen.append(name)
        expect(annotator.locator("#judge-progress")).not_to_contain_text("gold")
        annotator.get_by_label("0 · no").check()
        annotator.get_by_role("button", name=re.compile("^Submit")).click()
        expect(annotator.locator("h1")).not_to_have_text(name)
        # Saved: in the background when the next item was held ahead (its answer updates the
        # progress line), or by the server's answer when nothing was left.
        saved = annotator.locator("#judge-progress", has_text=f"{n + 1} judged today").or_(
            annotator.locator("h1", has_text="Nothing left to judge")
        )
        expect(saved).to_be_visible()
    assert sorted(seen) == ["draft-0", "draft-1", "draft-2", "known-1"]
    assert Assignment.objects.get(task=task, user=ann, item=gold).gold
    expect(annotator.locator("h1")).to_have_text("Nothing left to judge")

    # The Team page shows the annotator's gold accuracy, flagged; the reviewer pauses them.
    # (One test client logs people in: logging in another person ends the last one's session.)
    reviewer = login_page(rita)
    reviewer.goto(f"/projects/{project.pk}/team/")
    row = reviewer.locator('tr[data-gold-annotator="ann"]')
    expect(row.locator("[data-gold-accuracy]")).to_have_text("0.000")
    expect(row.locator("[data-gold-interval]")).to_have_text("0.000 – 0.793")
    expect(row).to_contain_text("below threshold")
    expect(reviewer.locator("[data-gold-flagged]")).to_contain_text("ann")
    row.get_by_role("button", name="Pause queue").click()
    expect(reviewer).to_have_url(re.compile(rf"/projects/{project.pk}/team/$"))
    expect(reviewer.locator('tr[data-gold-annotator="ann"]')).to_contain_text("paused")

    annotator = login_page(ann)
    annotator.goto(f"/judgment-tasks/{task.pk}/next/")
    expect(annotator.locator("body")).to_contain_text("paused by a reviewer")
