"""Corrected reports become worked examples, in the browser: a reviewer opens a "Rate the
judge" task of ATP-Bench's MAM judge, corrects the Chief Judge's reports people rated wrong
(a text the judge's parser refuses is answered with the reason and kept), adds two as worked
examples, runs the held-back comparison and sees before and after (the scripted Chief Judge
answers like the corrections once its prompt has the examples)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from review.agreement.judge_examples.models import ExampleSet
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.llm_server import point_at
from tests.review.test_judge_runs import ScriptedServer
from tests.review.test_report_examples import Rated, poor, script

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    s = ScriptedServer().start()
    s.script = script
    try:
        yield s
    finally:
        s.stop()


def test_reviewer_corrects_reports_adds_examples_and_compares(login_page, server) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="ATP rated", data_format="atp")
    point_at(project, server)
    reviewer = UserFactory(username="reviewer")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    rated = Rated(project, reviewer)

    page = login_page(reviewer)
    page.goto(f"/agreement/{rated.task.pk}/")
    page.get_by_role("link", name="Correct the reports people rated wrong…").click()
    rows = page.locator("#report-cases-table tbody tr")
    expect(rows).to_have_count(3)  # q2, q4, q5: rated below 80 %

    q2 = page.locator(f'tr[data-unit="{rated.unit("q2")}"]')
    q2.locator("textarea").fill('{"score": 85, "tier": "Poor", "why": "x"}')
    q2.get_by_role("button", name="Save correction").click()
    expect(page.locator("#report-error")).to_contain_text("score 85 is outside tier")
    q2 = page.locator(f'tr[data-unit="{rated.unit("q2")}"]')
    expect(q2.locator("textarea")).to_have_value('{"score": 85, "tier": "Poor", "why": "x"}')

    for ext, score in (("q2", 35), ("q4", 25), ("q5", 30)):
        row = page.locator(f'tr[data-unit="{rated.unit(ext)}"]')
        row.locator("textarea").fill(poor(score))
        row.get_by_role("button", name="Save correction").click()
        expect(
            page.locator(f'tr[data-unit="{rated.unit(ext)}"] [data-corrected-verdict]')
        ).to_have_text("Poor")
    for ext in ("q2", "q4"):
        page.locator(f'tr[data-unit="{rated.unit(ext)}"] input[type="checkbox"]').check()
    page.get_by_role("button", name="Add as worked examples").click()

    expect(page.locator("h1")).to_contain_text("Worked examples #")
    expect(page.locator("#example-versions")).to_contain_text("atp.mam.chief")
    expect(page.locator("#example-versions li")).to_have_count(1)
    expect(page.locator("#held-back")).to_contain_text("(4 now)")
    page.get_by_role("button", name="Run the held-back comparison").click()

    # People's verdicts E, E, Poor, E; before E x4 (kappa 0), after E, E, Poor, Poor (0.5).
    table = page.locator("#held-back-table")
    expect(table).to_be_visible(timeout=60_000)
    expect(table.locator('tr[data-version="before"] [data-kappa]')).to_have_text("0.000")
    expect(table.locator('tr[data-version="after"] [data-kappa]')).to_have_text("0.500")
    expect(table.locator('tr[data-version="after"] [data-share]')).to_have_text("0.750")
    expect(table.locator('tr[data-version="difference"] [data-share]')).to_have_text("0.000")
    assert ExampleSet.objects.get().held_back_run is not None
