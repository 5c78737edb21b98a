"""The pairwise judge in both orders (issue 26), run end to end against a scripted judge model:
each model answer against the item's reference answer, asked twice with the two swapped; a
verdict that flips with the order is a tie; the run reports the flip rate, the longer-answer
rate and, the judge model being one of the models judged, its self-preference."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from benchmark.models import JobStatus, Origin, Project
from review.judges import services as judge_services
from review.judges.models import JudgeRun
from tests.factories import ItemFactory, ProjectFactory, ResponseFactory
from tests.judge_server import ScriptedServer
from tests.llm_server import MODEL, point_at

pytestmark = pytest.mark.django_db


def prefer(system: str, user: str, model: str) -> str:
    """Prefers the answer holding GOOD; on a query saying POSITION, always answer A (a judge
    with a position bias); a tie otherwise."""
    first, second = re.search(r"\[Answer A\]\n(.*)\n\n\[Answer B\]\n(.*)", user, re.S).groups()  # type: ignore[union-attr]
    if "POSITION" in user:
        return "A\nThe first one reads better."
    if "GOOD" in first:
        return "A\nIt answers the request."
    if "GOOD" in second:
        return "B\nIt answers the request."
    return "TIE\nBoth are as good."


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    s = ScriptedServer()
    s.script = staticmethod(prefer)  # type: ignore[method-assign, assignment]
    s.start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def project(server: ScriptedServer) -> Project:
    """Four items with a reference answer, answered by "alpha" and by the judge model itself:
    q1 alpha GOOD and long (wins), the judge model's short (loses to a GOOD reference? no: its
    reference is plain, so a tie); q2 the reference GOOD (both lose); q3 position-biased (both
    flip: ties); q4 has no reference (not judged)."""
    project = ProjectFactory(name="Pairwise sample", data_format="atp")
    point_at(project, server)
    texts = {
        "q1": ("plain reference", "GOOD " + "x" * 200, "short"),
        "q2": ("GOOD reference", "wrong " * 10, "also wrong"),
        "q3": ("a reference", "alpha answer", "judge answer"),
        "q4": (None, "GOOD alone", "GOOD alone too"),
    }
    for n, (ext, (reference, alpha, own)) in enumerate(texts.items()):
        query = "Explain it. POSITION" if ext == "q3" else "Explain it."
        item = ItemFactory(project=project, external_id=ext, query=query, position=n)
        if reference is not None:
            ResponseFactory(item=item, key="gt", origin=Origin.GROUND_TRUTH, text=reference)
        ResponseFactory(
            item=item, key="model:alpha", origin=Origin.MODEL, model_name="alpha", text=alpha
        )
        ResponseFactory(
            item=item, key=f"model:{MODEL}", origin=Origin.MODEL, model_name=MODEL, text=own
        )
    return project


def run_pairwise(project: Project) -> tuple[JudgeRun, dict[str, Any]]:
    run, job = judge_services.judge_run_create(project=project, user=None, judge="pairwise")
    job = judge_services.judge_run_execute(job=job)
    assert job.status == JobStatus.SUCCEEDED, job.error
    return run, job.result["summary"]


def test_both_orders_flips_length_and_self_preference(
    project: Project, server: ScriptedServer
) -> None:
    run, summary = run_pairwise(project)
    alpha, own = summary["models"]["alpha"], summary["models"][MODEL]
    # alpha: q1 win, q2 loss, q3 flip (tie); q4 has no reference: not judged.
    assert (alpha["win"], alpha["loss"], alpha["tie"]) == (
        pytest.approx(100 / 3),
        pytest.approx(100 / 3),
        pytest.approx(100 / 3),
    )
    assert alpha["flip"] == pytest.approx(100 / 3)
    assert (alpha["n"], alpha["excluded"]) == (3, 0)
    # The judge model's own answers: q1 tie (neither GOOD), q2 loss, q3 flip.
    assert (own["win"], own["tie"], own["loss"]) == (
        0.0,
        pytest.approx(200 / 3),
        pytest.approx(100 / 3),
    )
    assert summary["flip"] == pytest.approx(100 * 2 / 6)
    # Decided pairs with different lengths: alpha q1 (longer won), alpha q2 (60 vs 14
    # characters: the shorter reference won), own q2 (10 vs 14: the longer reference won).
    assert summary["n_decided_by_length"] == 3
    assert summary["longer_wins"] == pytest.approx(200 / 3)
    assert summary["self_preference"] == {
        "model": MODEL,
        "own_win": 0.0,
        "others_win": pytest.approx(100 / 3),
    }
    # Every pair asked in both orders: 2 calls for each of the 6 answers with a reference.
    assert run.calls.count() == 12
    assert summary["calls"]["total"] == 16  # counted up front: 2 per answer, q4's never made
