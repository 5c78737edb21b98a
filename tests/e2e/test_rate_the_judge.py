"""Rate the judge (ATP-Bench §6) in a browser: a reviewer makes the task from a judge run, an
annotator rates each agent's report with the keyboard (0/1/2 submit at once), and the
agreement rate per agent appears on the task's agreement page."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.judgment_tasks.models import Judgment, JudgmentTask
from benchmark.models import Origin
from tests.factories import (
    ItemFactory,
    JudgeCallFactory,
    JudgeRunFactory,
    MembershipFactory,
    ProjectFactory,
    ResponseFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db(transaction=True)

REPORTS = {
    "precision": {
        "calls": [
            {
                "index": 1, "necessity": 2, "position": 2, "structure": 2, "tool_choice": 2,
                "parameters": 1, "format": 2, "comment": "The reference photo fits the nave.",
            }
        ]
    },
    "recall": {"missed": []},
    "chief": {"score": 64, "tier": "acceptable", "why": "One image, well placed, none missed."},
}  # fmt: skip


def test_reviewer_makes_the_task_annotator_rates_with_keys(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="ATP judge study", data_format="atp")
    reviewer, annotator = UserFactory(username="rev"), UserFactory(username="ann")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    MembershipFactory(project=project, user=annotator, role="annotator")
    item = ItemFactory(project=project, external_id="nave-01", query="Show me the nave.")
    answer = ResponseFactory(
        item=item,
        origin=Origin.MODEL,
        model_name="model-a",
        key="model:model-a",
        text='The nave is long.\n\n<tool>{"tool_name": "Reference", "description": "the nave", '
        '"params": {"img_index": 0}}</tool>',
    )
    run = JudgeRunFactory(project=project, model="mam-judge")
    for label, parsed in REPORTS.items():
        JudgeCallFactory(run=run, response=answer, label=label, parsed=parsed)

    # The reviewer creates the task from the run: all three agents, one rater per unit.
    page = login_page(reviewer)
    page.goto(f"/projects/{project.pk}/judgment-tasks/")
    page.get_by_role("link", name="Rate the judge").click()
    page.get_by_label("Judge run").select_option(str(run.pk))
    page.get_by_role("button", name="Show its agents").click()
    for agent in ("Precision Inspector", "Recall Inspector", "Chief Judge"):
        expect(page.get_by_label(f"{agent} (1 report)")).to_be_checked()
    page.get_by_label("Raters per unit (k)").fill("1")
    page.get_by_label("Name").fill("MAM agreement")
    page.get_by_role("button", name="Create the task").click()
    expect(page.locator("table")).to_contain_text("MAM agreement")
    expect(page.locator("table")).to_contain_text("3 units")
    task = JudgmentTask.objects.get(project=project, name="MAM agreement")

    # The annotator rates each report with one key: 2 agree, 2 agree, 1 partly.
    rater = login_page(annotator)
    rater.goto(f"/projects/{project.pk}/judgment-tasks/")
    rater.get_by_role("button", name="Rate next unit").click()
    title = rater.locator("#unit-title")
    for agent, key, shown in [
        ("Precision Inspector", "2", "The reference photo fits the nave."),
        ("Recall Inspector", "2", "missed"),
        ("Chief Judge", "1", "One image, well placed, none missed."),
    ]:
        expect(title).to_contain_text(agent)
        expect(rater.locator("#unit-report")).to_contain_text(shown)
        expect(rater.locator("#unit-answer")).to_contain_text("#1 Reference")
        expect(rater.locator("table.judgments")).to_have_count(0)  # blind
        ready(rater)
        with rater.expect_navigation():
            rater.keyboard.press(key)
    expect(rater.locator("h1")).to_have_text("Nothing left to judge")
    ratings = dict(Judgment.objects.filter(task=task).values_list("unit", "value"))
    assert ratings == {
        f"response:{answer.pk}:precision": 2,
        f"response:{answer.pk}:recall": 2,
        f"response:{answer.pk}:chief": 1,
    }

    # The agreement page shows the rate per agent: mean rating / 2. (A new login: logging
    # the annotator in ended the reviewer's first session.)
    page = login_page(reviewer)
    page.goto(f"/agreement/{task.pk}/")
    rates = page.locator("#judge-agent-rates")
    expect(rates.locator("[data-agent=precision]")).to_contain_text("100.00 %")
    expect(rates.locator("[data-agent=chief]")).to_contain_text("50.00 %")
    expect(page.locator("#judge-rater-table tbody tr", has_text="ann")).to_contain_text("83.33 %")
