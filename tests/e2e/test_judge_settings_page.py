"""Judge settings and job cancel in the browser (issue 10): an admin edits a judge template and
picks the LLM-I paper's weights; a reviewer cancels a running judge job from its card."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from benchmark.models import Job, JobStatus, Role
from review.judges.models import JudgeTemplateVersion, JudgeWeights
from tests.factories import JobFactory, MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_admin_edits_a_template_and_sets_the_weights(login_page) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Judges in the browser")
    admin = UserFactory(username="judge-admin")
    MembershipFactory(project=project, user=admin, role=Role.ADMIN)

    page = login_page(admin)
    page.goto(f"/projects/{project.pk}/judge-settings/")
    card = page.locator('section[data-template="llmi.llm_judge"]')
    expect(card.locator("[data-current-version]")).to_contain_text("The built-in text")
    system = card.locator('textarea[name="system"]')
    system.fill("Be strict. " + system.input_value())
    card.get_by_role("button", name="Save as a new version").click()
    expect(page.locator("[data-saved]")).to_have_text("Saved llmi.llm_judge version 1.")
    card = page.locator('section[data-template="llmi.llm_judge"]')
    expect(card.locator("[data-current-version]")).to_contain_text("Version 1 by judge-admin")
    card.locator("[data-history] > summary").click()
    card.get_by_text("Change from the built-in text").click()
    expect(card.locator('[data-diff="system"] .diff-add')).to_contain_text("+ Be strict.")

    # A placeholder removed: refused, with the typed text kept.
    card.locator('textarea[name="user"]').fill("Answer:\n{answer}")
    card.get_by_role("button", name="Save as a new version").click()
    card = page.locator('section[data-template="llmi.llm_judge"]')
    expect(card.locator("[data-template-error]")).to_contain_text(
        "keep the placeholder(s) {prompt}"
    )
    expect(card.locator('textarea[name="user"]')).to_have_value("Answer:\n{answer}")
    assert JudgeTemplateVersion.objects.count() == 1

    page.locator('[data-preset="paper"]').get_by_role("button", name="Use these").click()
    expect(page.locator("[data-weights-current]")).to_contain_text(
        "w_rule = 0.200, w_llm = 0.500, w_mllm = 0.300"
    )
    assert JudgeWeights.objects.get().preset == "paper"


def test_a_reviewer_cancels_a_running_job_from_its_card(login_page) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Cancel in the browser")
    reviewer = UserFactory(username="judge-reviewer")
    MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)
    now = timezone.now()
    job = JobFactory(
        kind="judge",
        project=project,
        created_by=reviewer,
        params={"project_id": project.pk, "run_id": 0, "workers": 1},
        status=JobStatus.RUNNING,
        progress=5,
        total=10,
        started_at=now - timedelta(minutes=2),
        heartbeat_at=now,
    )

    page = login_page(reviewer)
    page.goto(f"/jobs/{job.pk}/")
    card = page.locator(f"#job-{job.pk}")
    expect(card.locator("[data-eta]")).to_contain_text("min left")
    card.get_by_role("button", name="Cancel").click()
    expect(card.locator("[data-cancelling]").first).to_be_visible()
    job.refresh_from_db()
    assert job.cancel_requested_by == reviewer and job.status == JobStatus.RUNNING

    # The worker's runner raises at its next report; the pipeline records it so.
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.FAILED,
        error="Cancelled by judge-reviewer.",
        result={"cancelled": True, "cancelled_by": "judge-reviewer"},
        finished_at=timezone.now(),
    )
    expect(card.locator("[data-cancelled]")).to_have_text("Cancelled")
    expect(card).to_contain_text("was cancelled after 5 of 10 calls")
    expect(card.get_by_role("button", name="Cancel")).to_have_count(0)
