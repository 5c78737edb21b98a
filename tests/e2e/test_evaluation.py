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
from tests.e2e.sqlite_locks import retry_while_locked
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory, UserFactory
from tests.llm_server import MODEL, FakeModelServer, point_at

pytestmark = pytest.mark.django_db(transaction=True)
#: An evaluation runs in the request (no broker: eager) or a worker thread; on a loaded machine
#: it takes longer than expect()'s default 5 s to show.
RUN = 30_000


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
    expect(job).to_have_attribute("data-status", "succeeded", timeout=RUN)
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


def _query(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"][0]["text"])


def test_the_progress_bar_fills_while_the_model_answers_then_the_leaderboard(  # type: ignore[no-untyped-def]
    login_page, ready, server, monkeypatch, settings
) -> None:
    """A worker (here a thread, as a Celery worker would take the job) evaluates the items;
    the model holds its answer to the last item at the test server's gate, so the run's page
    shows the bar part-way (2 of 3 items, still running, no leaderboard row yet);
    the test opens the gate and the bar fills, then the leaderboard shows the model's row."""
    import threading

    from django.db import connection

    from benchmark.jobs import services as job_services

    evaluation_protocol.install(monkeypatch, "atp")
    settings.EVALUATION_TOOL_PROVIDERS = ["tests.evaluation_protocol.lookup_provider"]
    monkeypatch.setattr(evaluation_protocol.LOOKUP_PROVIDER, "answers", {"apple": "a fruit"})

    def worker(job_id: int) -> None:
        try:
            with retry_while_locked():
                job_services.job_run(job_id=job_id)
        finally:
            connection.close()

    workers: list[threading.Thread] = []

    def enqueue(job_id: int, spec: Any) -> None:
        workers.append(threading.Thread(target=worker, args=(job_id,), daemon=True))
        workers[-1].start()

    monkeypatch.setattr(job_services, "_enqueue", enqueue)
    try:
        with retry_while_locked():  # the live server's requests use this thread's connection
            _watch_the_run(login_page, ready, server)
    finally:  # the worker finishes before the test's database goes
        server.open_gate()
        for thread in workers:
            thread.join(timeout=60)


def _watch_the_run(login_page: Any, ready: Any, server: FakeModelServer) -> None:
    project = ProjectFactory(name="Watched in the browser")
    point_at(project, server)
    for n, (word, answer) in enumerate(
        [("apple", "a fruit"), ("pear", "a fruit"), ("fig", "unknown")]
    ):
        ItemFactory(
            project=project, external_id=word, position=n, query=word,
            status=ItemStatus.VERIFIED, raw=json.dumps({"query": word, "answer": answer}),
        )  # fmt: skip
    reviewer = UserFactory(username="eval-watcher")
    MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)
    server.gate(lambda body: _query(body) == "fig")

    page = login_page(reviewer)
    page.goto(f"/projects/{project.pk}/evaluation/")
    ready(page)
    # Three calls at once: the held call to "fig" takes one, and "apple" and "pear" finish
    # beside it, whichever order the runner's threads take the items in.
    page.get_by_label("Workers").fill("3")
    page.get_by_role("button", name="Start the evaluation").click()
    page.locator("[data-run-link]").click()
    expect(page.locator("h1")).to_contain_text(MODEL)

    progress = page.locator("#evaluation-progress")
    expect(progress.locator("[data-progress]")).to_contain_text("2 of 3 items", timeout=RUN)
    expect(progress).to_have_attribute("data-running", "yes")
    expect(progress.get_by_role("progressbar")).to_have_attribute("aria-valuenow", "67")
    assert server.wait_at_gate(1)
    run_url = page.url
    page.goto(f"/projects/{project.pk}/evaluation/leaderboard/")
    expect(page.locator("h1")).to_contain_text("Leaderboard")
    expect(page.locator(f'tr[data-model="{MODEL}"]')).to_have_count(0)  # not finished yet

    page.goto(run_url)
    server.open_gate()
    expect(progress.locator("[data-progress]")).to_contain_text("3 of 3 items", timeout=RUN)
    expect(progress).to_have_attribute("data-running", "no", timeout=RUN)
    expect(progress.get_by_role("progressbar")).to_have_attribute("aria-valuenow", "100")

    page.goto(f"/projects/{project.pk}/evaluation/leaderboard/")
    row = page.locator(f'tr[data-model="{MODEL}"]')
    expect(row.locator("[data-figure]").first).to_have_text("66.7")


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
        expect(page.locator("#evaluation-judges [data-status=succeeded]")).to_have_count(
            5
        )  # MAM, the LLM-I rubric and judges, pairwise
        expect(page.locator("#evaluation-judges")).to_contain_text("Judge run #")

        page.goto(f"/projects/{project.pk}/evaluation/leaderboard/")
        expect(page.locator('th[data-judge-column="fs"]')).to_be_visible()
        row = page.locator(f'tr[data-model="{MODEL}"]')
        # apple: "a fruit" (Chief 85); pear: "unknown" (Chief 30).
        expect(row.locator("[data-judged]").first).to_have_text("57.50")
    finally:
        judge.stop()
