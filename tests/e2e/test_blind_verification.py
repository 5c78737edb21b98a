"""Blind verification in the browser: two verifiers solve an Agentic-MME task without seeing
its answer or reference trajectory, one audits the reference with the keyboard, their answers
diverge, and a reviewer sees both answers, the reference and the ticks in joint review and
discards the item with a reason."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.judgment_tasks.services import judgment_task_ensure_defaults
from annotation.verification.models import TrajectoryAudit
from benchmark.models import Item, ItemStatus, Role
from tests.annotation.test_verification import SAMPLES, agentic_project
from tests.factories import MembershipFactory, UserFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not SAMPLES.is_dir(), reason="shared Agentic-MME samples not found"),
]


def test_blind_solve_audit_and_joint_review(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = agentic_project()
    (task,) = judgment_task_ensure_defaults(project=project)
    item = Item.objects.get(project=project, external_id="0001")
    Item.objects.filter(project=project).exclude(pk=item.pk).update(status=ItemStatus.VERIFIED)
    users = {}
    for name, role in [("v1", Role.ANNOTATOR), ("v2", Role.ANNOTATOR), ("rev", Role.REVIEWER)]:
        users[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=users[name], role=role)

    # v1 solves blind: the question and the image, nothing of the reference.
    page = login_page(users["v1"])
    page.goto(f"/projects/{project.pk}/judgment-tasks/")
    page.get_by_role("button", name="Judge next item").click()
    expect(page.locator("h1")).to_have_text("0001")
    expect(page.locator("#blind-task")).to_contain_text("What street name is written on it?")
    expect(page.locator("#blind-task img")).to_have_count(1)
    expect(page.locator("body")).not_to_contain_text("Willow")
    expect(page.locator("body")).not_to_contain_text("Crop the small blue sign")
    page.get_by_label("Answer").fill("Willow St")
    with page.expect_navigation():
        page.get_by_label("Answer").press("Enter")

    # The audit: the reference is open now; tick everything with the keyboard and save.
    expect(page.locator("#reference-answer")).to_contain_text("matches")
    expect(page.locator(".audit-step")).to_have_count(2)
    expect(page.locator(".audit-step").first).to_contain_text("Crop the small blue sign")
    ready(page)
    page.keyboard.press("y")  # C1: all ticked, on to C2
    expect(page.locator(".audit-step.current")).to_contain_text("C2")
    page.keyboard.press("1")  # C2: intent only
    page.keyboard.press("c")
    page.keyboard.type("Reads the crop; no tool needed.")
    page.keyboard.press("Escape")
    with page.expect_navigation():
        page.keyboard.press("s")
    expect(page.locator(".alert-success")).to_contain_text("Audit saved (version 1)")
    audit = TrajectoryAudit.objects.get(user=users["v1"])
    assert [e["checks"] for e in audit.steps] == [
        {"intent": True, "tool": True, "checkpoint": True},
        {"intent": True, "tool": False, "checkpoint": False},
    ]
    assert audit.steps[1]["comment"] == "Reads the crop; no tool needed."

    # v2 answers differently: the item goes to joint review.
    other = login_page(users["v2"])
    other.goto(f"/projects/{project.pk}/judgment-tasks/")
    other.get_by_role("button", name="Judge next item").click()
    expect(other.locator("body")).not_to_contain_text("Willow")
    other.get_by_label("Answer").fill("Elm St")
    other.get_by_role("button", name="Submit answer").click()
    expect(other.locator("#reference-answer")).to_contain_text("differs")
    item.refresh_from_db()
    assert item.status == ItemStatus.IN_REVIEW

    # The reviewer sees both answers, the reference and v1's ticks, and discards the item.
    reviewer = login_page(users["rev"])
    reviewer.goto(f"/adjudication/{task.pk}/disputes/")
    expect(reviewer.locator("#joint-review")).to_contain_text("Willow St")
    expect(reviewer.locator("#joint-review")).to_contain_text("Elm St")
    reviewer.get_by_role("link", name="0001").click()
    expect(reviewer.locator("#answers tbody tr")).to_have_count(3)  # the author and two verifiers
    expect(reviewer.locator("#reference")).to_contain_text("Crop the small blue sign")
    expect(reviewer.locator("#audit-table .tick-ok")).to_have_count(4)
    expect(reviewer.locator("#audit-table .tick-no")).to_have_count(2)
    reviewer.get_by_label("Discard").check()
    reviewer.locator("#decision").get_by_label("Reason").fill("The sign can be read both ways.")
    reviewer.get_by_role("button", name="Record decision").click()
    # Adjudication asks before it records.
    reviewer.locator("dialog#confirm-decision").get_by_role("button", name="Record").click()
    expect(reviewer.locator(".empty")).to_contain_text("Nothing in joint review")
    item.refresh_from_db()
    assert (item.status, item.discard_reason) == (
        ItemStatus.DISCARDED,
        "The sign can be read both ways.",
    )
