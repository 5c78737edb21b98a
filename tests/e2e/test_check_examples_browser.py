"""The S judge's correction cases become worked examples, in the browser: on a run set's page a
reviewer ticks a correction case under "S judge vs people", adds it as a worked example (a new
version of the S template), starts the held-back comparison and sees before and after (the
scripted judge passes r4 once its prompt has the example)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from review.agreement.judge_examples.models import ExampleSet
from review.runs.models import AgentRun, RunSet
from tests.review.test_check_examples import learning
from tests.review.test_s_judge import answered, s_project, s_runs, s_server

__all__ = ["answered", "learning", "s_project", "s_runs", "s_server"]

pytestmark = pytest.mark.django_db(transaction=True)


def test_reviewer_adds_an_s_correction_and_compares(  # type: ignore[no-untyped-def]
    login_page, answered: RunSet, users: dict[str, Any], learning: Any
) -> None:
    r2 = AgentRun.objects.get(run_set=answered, folder="r2")
    page = login_page(users["reviewer"])
    page.goto(f"/runs/{answered.pk}/")
    cases = page.locator('[data-corrections="s-judge"] tbody tr')
    expect(cases).to_have_count(2)
    page.locator(f'[data-corrections="s-judge"] tr[data-unit="run:{r2.pk}:S1"] input').check()
    page.locator("#s-judge-add-examples").click()

    expect(page.locator("h1")).to_contain_text("Worked examples #")
    expect(page.locator("#example-cases-table tbody tr")).to_have_count(1)
    expect(page.locator("#example-versions")).to_contain_text("agentic_mme.s_judge")
    expect(page.locator("#held-back")).to_contain_text("(5)")
    page.get_by_role("button", name="Run the held-back comparison").click()

    table = page.locator("#held-back-table")
    expect(table).to_be_visible(timeout=30_000)
    expect(table.locator('tr[data-version="before"] [data-agreement]')).to_have_text("0.750")
    expect(table.locator('tr[data-version="after"] [data-agreement]')).to_have_text("1.000")
    expect(table.locator('tr[data-version="difference"] [data-kappa]')).to_have_text("0.500")
    assert ExampleSet.objects.get().held_back_values["after"]
    # Back on the run set's page the case is an example now.
    page.goto(f"/runs/{answered.pk}/")
    expect(page.locator(f'tr[data-unit="run:{r2.pk}:S1"]')).to_contain_text("example #")
