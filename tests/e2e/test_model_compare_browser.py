"""A reviewer opens the Leaderboard, clicks "Compare two models", picks model A and model B and
starts the pairwise judge in both orders against the scripted judge; the run's page follows the
job and then shows A wins / ties / B wins, the flip and longer-answer rates, and each pair's two
raw verdicts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from benchmark.models import Origin, Role
from tests import evaluation_protocol
from tests.factories import (
    EvaluationRunFactory,
    ItemFactory,
    MembershipFactory,
    ProjectFactory,
    ResponseFactory,
    UserFactory,
)
from tests.judge_server import TEXTS, ScriptedServer, prefer
from tests.llm_server import MODEL, point_at

pytestmark = pytest.mark.django_db(transaction=True)
#: The judge job runs in the request's process (no broker); on a loaded machine it takes longer
#: than expect()'s default 5 s to show.
RUN = 30_000


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    s = ScriptedServer()
    s.script = staticmethod(prefer)  # type: ignore[method-assign, assignment]
    s.start()
    try:
        yield s
    finally:
        s.stop()


def test_compare_two_models_from_the_leaderboard(  # type: ignore[no-untyped-def]
    login_page, ready, server, monkeypatch
) -> None:
    evaluation_protocol.install(monkeypatch, "atp")
    project = ProjectFactory(name="Compared in the browser", data_format="atp")
    point_at(project, server)
    for n, (ext, (alpha, own)) in enumerate(TEXTS.items()):
        query = "Explain it. POSITION" if ext == "q3" else "Explain it."
        item = ItemFactory(project=project, external_id=ext, query=query, position=n)
        ResponseFactory(
            item=item, key="model:alpha", origin=Origin.MODEL, model_name="alpha", text=alpha
        )
        if own is not None:
            ResponseFactory(
                item=item, key=f"model:{MODEL}", origin=Origin.MODEL, model_name=MODEL, text=own
            )
    for model in ("alpha", MODEL):
        EvaluationRunFactory(project=project, model=model, finished_at=timezone.now(), summary={})
    reviewer = UserFactory(username="compare-reviewer")
    MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)

    page = login_page(reviewer)
    page.goto(f"/projects/{project.pk}/evaluation/leaderboard/")
    expect(page.locator("h1")).to_have_text("Leaderboard")
    ready(page)
    page.get_by_role("link", name="Compare two models").click()
    expect(page.locator("h1")).to_have_text("Compare two models")
    ready(page)
    page.get_by_label("Model A").select_option("alpha")
    page.get_by_label("Model B").select_option(MODEL)
    page.get_by_label("Workers").fill("2")
    page.get_by_role("button", name="Compare in both orders").click()

    expect(page.locator("h1")).to_contain_text("Model vs model, both orders")
    figures = page.locator("#comparison-figures")
    expect(figures.locator('[data-figure="a_win"]')).to_have_text("40.0%", timeout=RUN)
    expect(figures.locator('[data-figure="tie"]')).to_have_text("40.0%")
    expect(figures.locator('[data-figure="b_win"]')).to_have_text("20.0%")
    expect(figures.locator('[data-figure="flip"]')).to_have_text("20.0%")
    expect(figures.locator('[data-figure="longer_wins"]')).to_have_text("66.7%")
    expect(page.locator("#people-agreement")).to_contain_text("No human ratings yet")
    expect(page.locator("#self-preference [data-figure=own_share]")).to_have_text("40.0%")
    flipped = page.locator('article[data-item="q3"]')
    expect(flipped.locator(".pair-verdict")).to_contain_text("flipped with the order")
    expect(flipped.locator('[data-raw="a-first"]')).to_contain_text("The first one reads better.")
    expect(flipped.locator('[data-raw="b-first"]')).to_contain_text("The first one reads better.")
