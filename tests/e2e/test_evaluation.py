"""A reviewer opens "Evaluate a model" from the project page, starts an evaluation against
the scripted model server, sees it finish, opens the run and one result's trace, and watches
the model appear on the Leaderboard."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from benchmark.models import ItemStatus, Role
from tests import evaluation_protocol
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory, UserFactory
from tests.llm_server import MODEL, FakeModelServer, point_at

pytestmark = pytest.mark.django_db(transaction=True)


def lookup_then_answer(body: dict[str, Any]) -> Any:
    query = body["messages"][0]["content"][0]["text"]
    last = body["messages"][-1]
    if last["role"] == "tool":
        return json.loads(last["content"])["meaning"]
    return {"content": None, "tool_calls": [{"name": "lookup", "arguments": {"q": query}}]}


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    s = FakeModelServer(respond=lookup_then_answer).start()
    try:
        yield s
    finally:
        s.stop()


def test_evaluate_a_model_and_see_it_on_the_leaderboard(  # type: ignore[no-untyped-def]
    login_page, ready, server, monkeypatch, settings
) -> None:
    evaluation_protocol.install(monkeypatch, "atp")
    settings.EVALUATION_TOOL_PROVIDERS = ["tests.evaluation_protocol.lookup_provider"]
    monkeypatch.setattr(evaluation_protocol.LOOKUP_PROVIDER, "answers", {"apple": "a fruit"})
    project = ProjectFactory(name="Evaluated in the browser")
    point_at(project, server)
    for n, (word, answer) in enumerate(
        [("apple", "a fruit"), ("pear", "a fruit"), ("fig", "unknown")]
    ):
        ItemFactory(
            project=project, external_id=word, position=n, query=word,
            status=ItemStatus.VERIFIED, raw=json.dumps({"query": word, "answer": answer}),
        )  # fmt: skip
    reviewer = UserFactory(username="eval-reviewer")
    MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)

    page = login_page(reviewer)
    page.goto(f"/projects/{project.pk}/")
    page.get_by_role("link", name="Evaluate a model").click()
    expect(page.locator("h1")).to_have_text("Evaluate a model")
    ready(page)
    page.get_by_label("Workers").fill("2")
    page.get_by_role("button", name="Start the evaluation").click()

    job = page.locator("#evaluation-started [id^=job-]")
    expect(job).to_have_attribute("data-status", "succeeded")
    expect(job).to_contain_text("3 of 3 items · 3 tool calls")

    page.locator("[data-run-link]").click()
    expect(page.locator("h1")).to_contain_text(MODEL)
    expect(page.locator('#evaluation-figures [data-column="accuracy"] [data-figure]')).to_have_text(
        "66.7"
    )
    page.locator('tr[data-result="apple"] a').click()
    expect(page.locator("[data-tool-call]").first).to_contain_text("lookup")
    expect(page.locator("#result-output-text")).to_have_text("a fruit")

    page.goto(f"/projects/{project.pk}/evaluation/leaderboard/")
    row = page.locator(f'tr[data-model="{MODEL}"]')
    expect(row.locator("[data-figure]").first).to_have_text("66.7")
    expect(row.locator("[data-interval]").first).to_be_visible()


def test_run_the_judges_on_a_finished_evaluation_and_see_their_column(  # type: ignore[no-untyped-def]
    login_page, ready, server, monkeypatch, settings
) -> None:
    """On a finished run's page a reviewer gives the judge endpoint and clicks "Run the
    judges"; the judges card follows the judge jobs until they end, and the Leaderboard then
    shows the ATP-Bench MAM columns beside the model's figures."""
    from review.evaluation import services
    from tests.judge_server import ScriptedServer
    from tests.review.evaluation.test_evaluation_judges import judge_script

    evaluation_protocol.install(monkeypatch, "atp")
    settings.EVALUATION_TOOL_PROVIDERS = ["tests.evaluation_protocol.lookup_provider"]
    monkeypatch.setattr(evaluation_protocol.LOOKUP_PROVIDER, "answers", {"apple": "a fruit"})
    project = ProjectFactory(name="Judged in the browser")
    point_at(project, server)
    for n, word in enumerate(["apple", "pear"]):
        ItemFactory(
            project=project, external_id=word, position=n, query=word,
            status=ItemStatus.VERIFIED, raw=json.dumps({"query": word, "answer": "a fruit"}),
        )  # fmt: skip
    run, jobs = services.evaluation_run_create(
        project=project, user=None, model=MODEL, base_url=server.url
    )
    services.evaluation_run_execute(run=run, jobs=jobs)
    reviewer = UserFactory(username="judge-reviewer")
    MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)
    judge = ScriptedServer()
    judge.script = staticmethod(judge_script)  # type: ignore[assignment]
    judge.start()
    try:
        page = login_page(reviewer)
        page.goto(f"/projects/{project.pk}/evaluation/leaderboard/")
        expect(page.locator(f'tr[data-model="{MODEL}"]')).to_be_visible()
        expect(page.locator('th[data-judge-column="fs"]')).to_have_count(0)

        page.goto(f"/evaluation/runs/{run.pk}/")
        ready(page)
        card = page.locator("#evaluation-judges")
        card.get_by_label("Judge endpoint base URL").fill(judge.url)
        card.get_by_label("Judge model").fill("judge-m")
        card.get_by_role("button", name="Run the judges").click()
        expect(page.locator("#evaluation-judges [data-judge-job]").first).to_be_visible()
        expect(page.locator("#evaluation-judges")).to_have_attribute("data-running", "no")
        expect(page.locator("#evaluation-judges [data-status=succeeded]")).to_have_count(4)
        expect(page.locator("#evaluation-judges")).to_contain_text("Judge run #")

        page.goto(f"/projects/{project.pk}/evaluation/leaderboard/")
        expect(page.locator('th[data-judge-column="fs"]')).to_be_visible()
        row = page.locator(f'tr[data-model="{MODEL}"]')
        # apple: "a fruit" (Chief 85); pear: "unknown" (Chief 30).
        expect(row.locator("[data-judged]").first).to_have_text("57.50")
    finally:
        judge.stop()
