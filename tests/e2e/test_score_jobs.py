"""Scoring as jobs in the browser: a large upload of model answers shows a job card and then
the figures in its place; "Rescore this upload" on an upload of agent runs shows a progress
card that ends with what changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from benchmark.datasets import services as benchmark_services
from benchmark.models import ItemStatus, ProjectKind, Role
from review.answers import services as review_answers
from tests.factories import (
    ItemFactory,
    MembershipFactory,
    ProjectFactory,
    ResponseFactory,
    UserFactory,
)
from tests.shared_data import SHARED_DATA, needs_data

pytestmark = pytest.mark.django_db(transaction=True)

MME = SHARED_DATA / "agentic-mme"
REF = '<tool>{"tool_name": "Reference", "description": "d", "params": {"img_index": 0}}</tool>'


def test_a_large_answer_upload_runs_as_a_job_then_shows_the_figures(  # type: ignore[no-untyped-def]
    login_page, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(review_answers, "INLINE_BYTES", 10)  # every upload counts as large
    project = ProjectFactory(name="Answers in the browser")
    for n in (1, 2):
        item = ItemFactory(project=project, external_id=f"atp_{n}", status=ItemStatus.VERIFIED)
        ResponseFactory(item=item, key="gt", text=REF)
    reviewer = UserFactory(username="answers-reviewer")
    MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)
    answers = tmp_path / "gpt.jsonl"
    answers.write_text(
        "\n".join(json.dumps({"trace_id": f"atp_{n}", "answer": REF}) for n in (1, 2))
    )

    page = login_page(reviewer)
    page.goto(f"/projects/{project.pk}/answers/")
    page.locator('input[name="answers"]').set_input_files(str(answers))
    page.get_by_role("button", name="Score").click()
    job = page.locator("[id^=job-]")
    expect(job).to_have_attribute("data-status", "succeeded")
    expect(job.locator('#model-table tr[data-model="gpt"] [data-figure="f1"]')).to_have_text(
        "100.00"
    )
    expect(job).to_contain_text("Scored as a job")


@needs_data("agentic-mme")
def test_rescore_an_upload_after_an_item_edit(login_page) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(
        name="Rescore in the browser", kind=ProjectKind.TRAJECTORY, data_format="agentic-mme"
    )
    benchmark_services.dataset_import(project=project, path=MME / "json")
    reviewer = UserFactory(username="rescore-reviewer")
    MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)

    page = login_page(reviewer)
    page.goto(f"/projects/{project.pk}/runs/")
    page.locator("input[data-folder-input]").set_input_files(str(MME / "runs"))
    page.get_by_role("button", name="Upload and score").click()
    expect(page.locator("[id^=job-]")).to_have_attribute("data-status", "succeeded")
    page.get_by_role("link", name="See the results").click()
    overall = page.locator('[data-row="Overall"]')
    expect(overall.locator('[data-figure="acc"]')).to_have_text("100.0%")

    # An item's golden answer is edited; the stored run no longer matches it.
    item = project.items.get(external_id="0001")
    item.expected_answer = "Oak Rd"
    item.save()
    page.get_by_role("button", name="Rescore this upload").click()
    done = page.locator("#run-rescore [data-rescore-done]")
    expect(done).to_contain_text("2 runs rescored, 1 with new figures, 1 now judged differently")
    page.get_by_role("link", name="See the new figures").click()
    expect(overall.locator('[data-figure="acc"]')).to_have_text("50.0%")
