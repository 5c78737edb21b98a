"""A reviewer opens "Judge answers" from the project page, starts an LLMI-Bench rubric run
against the scripted model server, watches its job card reach done with the figures per
model, opens the run's page and reads one model's answer reports."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from benchmark.models import Role
from review.judges import services as judge_services
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory, UserFactory
from tests.judge_server import GARBAGE, ScriptedServer, criterion_of, jsonl, rubric
from tests.llm_server import point_at

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    s = ScriptedServer().start()
    try:
        yield s
    finally:
        s.stop()


def script(system: str, user: str, model: str) -> str:
    """alpha: r1 2, r2 1 -> 75 %; beta: r1 0, r2 unparseable (excluded) -> 0 %."""
    criterion = criterion_of(user)
    if "ALPHA" in user:
        return rubric(2 if criterion == "r1" else 1, f"alpha meets {criterion}")
    return GARBAGE if criterion == "r2" else rubric(0, "beta misses it")


def test_start_a_judge_run_and_read_its_figures(login_page, ready, server) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Judged in the browser", data_format="llmi")
    point_at(project, server)
    for n in (1, 2):
        ItemFactory(
            project=project,
            external_id=f"q{n}",
            position=n,
            query=f"Explain topic {n}",
            rubric=[{"key": "r1", "text": "is correct"}, {"key": "r2", "text": "is clear"}],
        )
    judge_services.answers_import(
        project=project,
        files=[
            (
                f"{m}.jsonl",
                jsonl([{"trace_id": f"q{n}", "answer": f"{m.upper()} {n}"} for n in (1, 2)]),
            )
            for m in ("alpha", "beta")
        ],
    )
    reviewer = UserFactory(username="judge-reviewer")
    MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)
    server.script = script

    page = login_page(reviewer)
    page.goto(f"/projects/{project.pk}/")
    page.get_by_role("link", name="Judge answers").click()
    expect(page.locator("h1")).to_have_text("Judge answers")
    ready(page)
    page.get_by_label("LLMI-Bench rubric").check()
    page.get_by_label("Workers").fill("2")
    page.get_by_role("button", name="Start judging").click()

    job = page.locator("#judge-started [id^=job-]")
    expect(job).to_have_attribute("data-status", "succeeded")
    expect(job.locator('tr[data-model="alpha"] [data-figure="rubric"]')).to_have_text("75.00%")
    expect(job.locator('tr[data-model="beta"] [data-figure="rubric"]')).to_have_text("0.00%")

    job.get_by_role("link", name="See every answer's report").click()
    expect(page.locator("h1")).to_contain_text("LLMI-Bench rubric")
    figures = page.locator("#judge-figures")
    expect(figures.locator('tr[data-model="beta"] [data-figure="criteria_excluded"]')).to_have_text(
        "2"
    )
    expect(page.locator("#judge-excluded")).to_contain_text("2 judgments did not parse")
    expect(page.locator(".answer-report")).to_have_count(4)

    page.locator("#judge-answers").get_by_role("link", name="beta (2)").click()
    expect(page.locator(".answer-report")).to_have_count(2)
    first = page.locator('.answer-report[data-item="q1"][data-model="beta"]')
    expect(first.locator('[data-failed-call="r2"]')).to_contain_text("not valid JSON")
    expect(first.locator('tr[data-criterion="r1"]')).to_contain_text("beta misses it")
    expect(page).to_have_url(f"{page.url.split('?')[0]}?model=beta")


def test_the_run_shows_it_is_starting_the_moment_start_is_pressed(
    login_page, ready, server
) -> None:  # type: ignore[no-untyped-def]
    """Pressing Start once showed nothing until the job had run (~5 s in-process): a
    progress card now shows at once, and the job's card replaces it."""
    project = ProjectFactory(name="Started at once", data_format="llmi")
    point_at(project, server)
    ItemFactory(project=project, external_id="q1", rubric=[{"key": "r1", "text": "is correct"}])
    judge_services.answers_import(
        project=project,
        files=[("alpha.jsonl", jsonl([{"trace_id": "q1", "answer": "ALPHA 1"}]))],
    )
    reviewer = UserFactory(username="judge-starter")
    MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)
    server.script = script

    page = login_page(reviewer)
    page.goto(f"/projects/{project.pk}/judges/")
    ready(page)
    held: list[Any] = []  # the start request, held until the page shows it is starting

    def hold(route: Any) -> None:
        if route.request.method == "POST":
            held.append(route)
        else:
            route.continue_()

    page.route("**/judges/", hold)
    page.get_by_label("LLMI-Bench rubric").check()
    with page.expect_request(lambda request: request.method == "POST"):
        page.get_by_role("button", name="Start judging").click()
    starting = page.locator("[data-judge-starting]")
    expect(starting).to_be_visible()
    expect(starting).to_contain_text("Starting the judge run")
    assert held, "the start request is held at the page's route"
    held[0].continue_()
    expect(page.locator("#judge-started [id^=job-]")).to_have_attribute("data-status", "succeeded")
    expect(page.locator("[data-judge-starting]")).to_be_hidden()
