"""Corrections become worked examples, in the browser: a reviewer opens the calibration report
of an m&m's plan validity judge run on a plan-vote task, ticks two correction cases, adds them as
worked examples (a new template version), starts the held-back comparison and sees the
before/after table (the scripted judge answers like the people once its prompt has the
examples)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from benchmark.models import JobStatus
from review.agreement.judge_examples.models import ExampleSet
from review.judges import services as judge_services
from tests.factories import (
    ItemFactory,
    JudgmentFactory,
    JudgmentTaskFactory,
    MembershipFactory,
    PlanFactory,
    ProjectFactory,
    UserFactory,
)
from tests.llm_server import FakeModelServer, point_at
from tests.review.test_judge_examples import QUERIES, VOTES, reply

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    s = FakeModelServer(respond=reply).start()
    try:
        yield s
    finally:
        s.stop()


def test_reviewer_adds_corrections_as_examples_and_compares(login_page, server) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="m&m's plans", kind="plan", data_format="mms")
    point_at(project, server)
    reviewer = UserFactory(username="reviewer")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    task = JudgmentTaskFactory(project=project, name="Plan votes", scheme="binary")
    items = {}
    for n, (ext, query) in enumerate(QUERIES.items()):
        items[ext] = ItemFactory(project=project, external_id=ext, query=query, position=n)
        PlanFactory(item=items[ext], key="gt", steps=[{"id": 0, "name": "image captioning"}])
    voters = [UserFactory(username=f"voter{n}") for n in range(3)]
    for ext, votes in VOTES.items():
        for user, value in zip(voters, votes, strict=True):
            JudgmentFactory(task=task, item=items[ext], user=user, value=value)
    run, job = judge_services.judge_run_create(project=project, user=reviewer, judge="mms-plan")
    assert judge_services.judge_run_execute(job=job).status == JobStatus.SUCCEEDED

    page = login_page(reviewer)
    page.goto(f"/agreement/{task.pk}/?judge=judge-run:{run.pk}")
    cases = page.locator("#corrections-table tbody tr")
    expect(cases).to_have_count(3)  # i2, i4, i5: the judge said valid, people no
    for ext in ("i2", "i4"):
        page.locator(f'#corrections-table tr[data-unit="{items[ext].pk}"] input').check()
    page.get_by_role("button", name="Add as worked examples").click()

    expect(page.locator("h1")).to_contain_text("Worked examples #")
    expect(page.locator("#example-cases-table tbody tr")).to_have_count(2)
    expect(page.locator("#example-versions")).to_contain_text("mms.plan_validity")
    expect(page.locator("#held-back")).to_contain_text("(4 now)")
    page.get_by_role("button", name="Run the held-back comparison").click()

    # Before: judge yes on all four held-back items, kappa 0; after: kappa 0.5.
    table = page.locator("#held-back-table")
    expect(table).to_be_visible(timeout=30_000)
    expect(table.locator('tr[data-version="before"] td').nth(2)).to_contain_text("0.000")
    expect(table.locator('tr[data-version="after"] td').nth(2)).to_contain_text("0.500")
    expect(table.locator('tr[data-version="difference"] td').nth(2)).to_have_text("0.500")
    expect(table.locator('tr[data-version="after"] td').nth(1)).to_have_text("0.750")
    assert ExampleSet.objects.get().held_back_run is not None
    # Back on the report, the two cases are now examples, the third can still be added.
    page.goto(f"/agreement/{task.pk}/?judge=judge-run:{run.pk}")
    expect(page.locator("#corrections-table input[type=checkbox]")).to_have_count(1)
