"""A reviewer answers a run's search check with the keyboard (p / f), sees the S judge's
verdict only after answering, and finds the S judge's calibration on the run set's page."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect

from benchmark.models import ProjectKind, Role
from review.runs import services as runs
from tests.factories import (
    AgentRunFactory,
    ItemFactory,
    MembershipFactory,
    ProjectFactory,
    RunSetFactory,
    TrajectoryFactory,
    UserFactory,
)
from tests.llm_server import FakeModelServer, point_at

pytestmark = pytest.mark.django_db(transaction=True)


def respond(body: dict[str, Any]) -> str:
    """The scripted S judge: PASS for run r1's search, FAIL for the others."""
    return "PASS\nfound" if "query-r1" in json.dumps(body["messages"]) else "FAIL\nnot found"


def test_answer_search_checks_by_keyboard_and_see_the_s_calibration(  # type: ignore[no-untyped-def]
    login_page, ready
) -> None:
    project = ProjectFactory(
        name="Search checks", kind=ProjectKind.TRAJECTORY, data_format="agentic-mme", tag_syntax=""
    )
    reviewer = UserFactory(username="search-reviewer")
    MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)
    item = ItemFactory(project=project, query="Which district?", expected_answer="Old Town")
    TrajectoryFactory(
        item=item,
        key="reference",
        checkpoints=[
            {
                "id": "S1",
                "axis": "S",
                "description": "Find the street's district.",
                "tools": ["google_search"],
                "search_check": {"keywords": ["district"], "expected": "Old Town"},
            }
        ],
    )
    server = FakeModelServer().start()
    server.respond = respond
    try:
        point_at(project, server)
        judge = runs.run_judge_for(project=project)
        run_set = RunSetFactory(project=project, name="model A", created_by=reviewer)
        made = []
        for name in ("r1", "r2"):
            event = {
                "index": 0,
                "tool_name": "google_search",
                "arguments": {"query": f"query-{name}"},
                "output": {"ok": "true", "context": f"{name}: the Old Town district"},
            }
            run = AgentRunFactory(run_set=run_set, item=item, folder=name, events=[event])
            made.append(runs.run_rescore(run=run, judge=judge))
    finally:
        server.stop()

    page = login_page(reviewer)
    for run, key, answer, verdict in (
        (made[0], "p", "PASS", "PASS"),
        (made[1], "f", "FAIL", "FAIL"),
    ):
        page.goto(f"/runs/agent-runs/{run.pk}/")
        checks = page.locator("#run-checks")
        expect(checks.locator("[data-s-judge-hidden]")).to_be_visible()
        expect(checks.locator('[data-figure="S"]')).to_have_text("hidden")
        expect(checks).to_contain_text(f"query-{run.folder}")
        ready(page)
        page.keyboard.press(key)
        expect(checks.locator("[data-search-verdict]")).to_contain_text(
            f"Answered {answer} by search-reviewer"
        )
        expect(checks.locator("[data-s-judge]")).to_contain_text(f"S judge: {verdict}")
        expect(checks.locator('[data-figure="S"]')).to_have_text(
            "1.00" if verdict == "PASS" else "0.00"
        )

    page.goto(f"/runs/{run_set.pk}/")
    section = page.locator("#s-judge-vs-people")
    expect(section).to_contain_text("S judge vs people")
    overall = page.locator('#s-judge-calibration-table tr[data-group="all"]')
    # (judge, people): r1 (PASS, PASS), r2 (FAIL, FAIL): agreement 1, kappa 1.
    expect(overall.locator("td").nth(1)).to_have_text("2")
    expect(overall.locator("td").nth(2)).to_have_text("1.000")
    expect(overall).to_contain_text("ok")
