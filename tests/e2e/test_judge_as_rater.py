"""A reviewer opens the agreement dashboard of an m&m's plan-validity task that three annotators
have voted on, adds the plan validity judge run (made against the scripted model server) as one
more rater, and sees Cohen's kappa against the majority and the confusion matrix."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from benchmark.models import JobStatus
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

pytestmark = pytest.mark.django_db(transaction=True)


class PlanServer(FakeModelServer):
    """VALID for plans with an image captioning step, INVALID otherwise."""

    def _reply(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict]:
        status, payload, headers = super()._reply(path, body)
        if status == 200:
            user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
            verdict = "VALID" if "image captioning" in user else "INVALID"
            payload["choices"][0]["message"]["content"] = f"{verdict}\nBecause of the steps."
        return status, payload, headers


@pytest.fixture
def server() -> Iterator[PlanServer]:
    s = PlanServer().start()
    try:
        yield s
    finally:
        s.stop()


def test_reviewer_adds_the_plan_judge_as_a_rater(login_page, server) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="m&m's plans", kind="plan", data_format="mms")
    point_at(project, server)
    reviewer = UserFactory(username="reviewer")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    task = JudgmentTaskFactory(project=project, name="Plan validity", scheme="binary")
    tools = ["image captioning", "object detection", "image captioning", "text generation"]
    votes = {"ann": [1, 0, 1, 1], "bob": [1, 1, 0, 1], "cat": [0, 0, 1, 1]}
    items = []
    for n, tool in enumerate(tools):
        item = ItemFactory(project=project, external_id=f"p{n}", position=n)
        PlanFactory(item=item, key="gt", steps=[{"id": 0, "name": tool, "args": {}}])
        items.append(item)
    for name, values in votes.items():
        user = UserFactory(username=name)
        MembershipFactory(project=project, user=user, role="annotator")
        for item, value in zip(items, values, strict=True):
            JudgmentFactory(task=task, item=item, user=user, value=value)
    run, job = judge_services.judge_run_create(project=project, user=reviewer, judge="mms-plan")
    job = judge_services.judge_run_execute(job=job)
    assert job.status == JobStatus.SUCCEEDED, job.error

    page = login_page(reviewer)
    page.goto(f"/agreement/{task.pk}/")
    section = page.locator("#judge-rater")
    expect(section).to_contain_text("Add a judge as rater")
    page.get_by_label("Judge").select_option(f"judge-run:{run.pk}")
    page.get_by_role("button", name="Add as rater").click()

    # Judge: valid, invalid, valid, invalid. Majority: 1, 0, 1, 1. Judge x majority:
    # [[1, 1], [0, 2]], po 3/4, pe (2*1 + 2*3) / 16 = 1/2, kappa 1/2.
    figures = page.locator(f'[data-judge-rater="judge-run:{run.pk}"]')
    expect(figures).to_be_visible()
    expect(page.locator('tr[data-rater="majority"]')).to_contain_text("0.500")
    majority = page.locator('table[data-confusion="majority"]')
    expect(majority.locator("tbody tr")).to_have_count(2)
    expect(majority.locator("tbody tr").nth(0).locator("td").nth(0)).to_have_text("1")
    expect(majority.locator("tbody tr").nth(1).locator("td").nth(1)).to_have_text("2")
    expect(page.locator('table[data-confusion="bob"]')).to_be_visible()
    expect(page).to_have_url(f"{page.url.split('?')[0]}?judge=judge-run%3A{run.pk}&threshold=0.6")
