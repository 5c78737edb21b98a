"""A reviewer opens "Evaluate a model" on a demo-like ATP-Bench project with three verified
items, points it at the scripted model server (tests/llm_server.py), starts the evaluation,
watches its progress reach the end, then opens the Leaderboard and reads the model's row.

The scripted model answers two queries with their verified ground truth (every tool call
well-formed, the same tool set) and the third with plain text (no tool call), so the row
reads 66.7 % format validity and 66.7 % tool-set F1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from benchmark.builtin import taxonomies_ensure, toolsets_ensure
from benchmark.datasets.services import dataset_import
from benchmark.kinds import kind_named
from benchmark.models import ItemStatus, Project, Role
from review.demo import DEMO_ROOT
from tests.factories import MembershipFactory, UserFactory
from tests.llm_server import MODEL, FakeModelServer

pytestmark = pytest.mark.django_db(transaction=True)

ANSWERED = ("atp_demo_01", "atp_demo_03")  # with their ground truth
PLAIN = "atp_demo_05"  # with text only
PLAIN_TEXT = "It depends on the recipe; I would rather not show anything."


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    s = FakeModelServer().start()
    try:
        yield s
    finally:
        s.stop()


def atp_project() -> Project:
    """The ATP-Bench demo's records in a project of their own, three of them verified."""
    kind = kind_named("atp")
    toolsets, taxonomies = toolsets_ensure(), taxonomies_ensure()
    project = Project.objects.create(
        name="Evaluated in the browser",
        kind=kind.project_kind,
        tag_syntax=kind.tag_syntax,
        data_format=kind.name,
        toolset=toolsets[kind.toolset] if kind.toolset else None,
        taxonomy=taxonomies[kind.taxonomy] if kind.taxonomy else None,
    )
    dataset_import(project=project, path=DEMO_ROOT / "atp")
    project.items.filter(external_id__in=[*ANSWERED, PLAIN]).update(status=ItemStatus.VERIFIED)
    return project


def scripted(records: dict[str, dict[str, Any]]) -> Any:
    def reply(body: dict[str, Any]) -> str:
        sent = json.dumps(body["messages"])
        for trace_id, record in records.items():
            if json.dumps(record["query"])[1:-1] in sent:
                return PLAIN_TEXT if trace_id == PLAIN else str(record["gt"])
        return "no such query"

    return reply


def test_evaluate_a_model_then_read_its_row_on_the_leaderboard(
    login_page: Any, ready: Any, server: FakeModelServer
) -> None:
    project = atp_project()
    lines = (DEMO_ROOT / "atp" / "data.jsonl").read_text(encoding="utf-8").splitlines()
    records = {r["trace_id"]: r for r in map(json.loads, lines)}
    server.respond = scripted({k: records[k] for k in (*ANSWERED, PLAIN)})
    reviewer = UserFactory(username="eval-reviewer")
    MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)

    page = login_page(reviewer)
    page.goto(f"/projects/{project.pk}/")
    page.get_by_role("link", name="Evaluate a model").click()
    expect(page.locator("h1")).to_have_text("Evaluate a model")
    ready(page)
    expect(page.locator("#evaluation-runs")).to_contain_text("No evaluation yet.")
    page.get_by_label("Endpoint base URL").fill(server.url)
    page.get_by_label("Model", exact=True).fill(MODEL)
    page.get_by_label("Workers").fill("2")
    page.get_by_role("button", name="Start the evaluation").click()

    started = page.locator("#evaluation-started")
    expect(started).to_contain_text(f"{MODEL} on 3 items")
    progress = started.locator("#evaluation-progress")
    expect(progress).to_have_attribute("data-running", "no")
    expect(progress.locator("[data-progress]")).to_contain_text("3 of 3 items")
    expect(progress.get_by_role("progressbar")).to_have_attribute("aria-valuenow", "100")
    expect(progress.locator(".job-status-succeeded")).to_have_count(1)
    assert server.count == 3  # one model call per item

    page.locator(".page-actions").get_by_role("link", name="Leaderboard").click()
    expect(page.locator("h1")).to_have_text("Leaderboard")
    row = page.locator(f'#leaderboard tr[data-model="{MODEL}"]')
    expect(row).to_have_count(1)

    def texts(cells: Any) -> list[str]:
        return [" ".join(text.split()) for text in cells.all_text_contents()]

    figures = dict(
        zip(texts(page.locator("#leaderboard thead th")), texts(row.locator("th, td")), strict=True)
    )
    # Each figure with its bootstrap interval over the three items.
    assert figures["Format validity (%)"] == "66.7 [0.0, 100.0]"
    assert figures["Tool-set F1 (%)"] == "66.7 [0.0, 100.0]"
    assert figures["Adoption: Reference (%)"] == "66.7 [0.0, 100.0]"
    assert figures["Format correctness (per call) (%)"] == "100.0 [100.0, 100.0]"
    assert figures["Items"] == "3"

    # The row links to its run; the run to each item's result, where the answer is.
    row.locator("td").last.get_by_role("link").click()
    expect(page.locator("h1")).to_contain_text(MODEL)
    expect(page.locator("#evaluation-results tr[data-result]")).to_have_count(3)
    page.locator(f'tr[data-result="{PLAIN}"]').get_by_role("link", name=PLAIN).click()
    expect(page.locator("body")).to_contain_text(PLAIN_TEXT)
