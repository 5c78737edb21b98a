"""People answer the search checks of agent runs, and the S judge is calibrated against them
(issue 26): the answers are stored per reviewer (newest counts, a stale answer is refused),
the judge's verdict stays hidden on the run page until the person answered, and the run set's
page shows the S judge's kappa, percent agreement, TPR/FPR and flag beside the V judge's,
equal to hand-computed figures on runs scored by a scripted judge (tests/llm_server.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.models import Project
from review.runs import selectors as run_selectors
from review.runs import services as runs
from review.runs.models import AgentRun, RunSet, SearchVerdict
from tests.factories import (
    AgentRunFactory,
    ItemFactory,
    RunSetFactory,
    TrajectoryFactory,
    UserFactory,
)
from tests.llm_server import FakeModelServer, point_at

pytestmark = pytest.mark.django_db

#: The runs whose search the scripted S judge passes (r6 and r7 too; r3, r4 fail).
JUDGE_PASSES = {"r1", "r2", "r5", "r6", "r7"}


@pytest.fixture
def s_server() -> Iterator[FakeModelServer]:
    server = FakeModelServer().start()

    def respond(body: dict[str, Any]) -> str:
        text = json.dumps(body["messages"])
        run = next(r for r in ("r1", "r2", "r3", "r4", "r5", "r6", "r7") if f"query-{r}" in text)
        return "PASS\nthe results name it" if run in JUDGE_PASSES else "FAIL\nnot found"

    server.respond = respond
    try:
        yield server
    finally:
        server.stop()


def search_event(name: str) -> dict[str, Any]:
    return {
        "index": 0,
        "tool_name": "google_search",
        "arguments": {"query": f"query-{name}"},
        "output": {"ok": "true", "context": f"results of {name}: the Harbour quarter"},
    }


@pytest.fixture
def s_project(users: dict[str, Any], s_server: FakeModelServer) -> Project:
    project = users["reviewer"].memberships.first().project
    project.kind, project.data_format, project.tag_syntax = "trajectory", "agentic-mme", ""
    project.save()
    return point_at(project, s_server)


@pytest.fixture
def s_runs(s_project: Project, users: dict[str, Any]) -> dict[str, AgentRun]:
    """Seven runs of one item with a search checkpoint S1, each with one google_search call,
    scored with the scripted S judge."""
    item = ItemFactory(project=s_project, query="Which district?", expected_answer="Old Town")
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
    run_set = RunSetFactory(project=s_project, created_by=users["reviewer"])
    judge = runs.run_judge_for(project=s_project)
    assert judge is not None
    made = {}
    for n in range(1, 8):
        name = f"r{n}"
        run = AgentRunFactory(run_set=run_set, item=item, folder=name, events=[search_event(name)])
        made[name] = runs.run_rescore(run=run, judge=judge)
    return made


def answer(run: AgentRun, user: Any, passed: bool) -> SearchVerdict:
    seen = run.search_verdicts.order_by("-id").values_list("pk", flat=True).first() or 0
    return runs.search_verdict_set(run=run, user=user, checkpoint_id="S1", passed=passed, seen=seen)


def test_the_s_judge_decided_each_search_check(s_runs: dict[str, AgentRun]) -> None:
    for name, run in s_runs.items():
        s1 = next(c for c in run.score["checkpoints"] if c["id"] == "S1")
        assert s1["method"] == "judge" and s1["detail"]["decided_by"] == "judge"
        assert s1["passed"] is (name in JUDGE_PASSES)
        assert s1["detail"]["queries"] == [f"query-{name}"]


def test_a_search_answer_is_stored_and_leaves_the_score(
    s_runs: dict[str, AgentRun], users: dict[str, Any]
) -> None:
    run = s_runs["r3"]
    before = dict(run.score)
    first = answer(run, users["reviewer"], True)
    run.refresh_from_db()
    assert run.score == before  # the judge's FAIL stays the score's
    assert (first.passed, first.checkpoint_id, first.reviewer) == (True, "S1", users["reviewer"])
    with pytest.raises(Conflict, match="answered S1 with PASS"):
        runs.search_verdict_set(
            run=run, user=users["admin"], checkpoint_id="S1", passed=False, seen=0
        )
    second = runs.search_verdict_set(
        run=run, user=users["admin"], checkpoint_id="S1", passed=False, seen=first.pk
    )
    assert SearchVerdict.objects.filter(run=run).count() == 2 and second.passed is False
    with pytest.raises(ValidationFailed, match="'C9' is not a search check"):
        runs.search_verdict_set(
            run=run, user=users["reviewer"], checkpoint_id="C9", passed=True, seen=0
        )
    with pytest.raises(Forbidden):
        runs.search_verdict_set(
            run=run, user=users["annotator"], checkpoint_id="S1", passed=True, seen=second.pk
        )


@pytest.fixture
def answered(s_runs: dict[str, AgentRun], users: dict[str, Any]) -> RunSet:
    """Judge: r1 P, r2 P, r3 F, r4 F, r5 P, r6 P, r7 P. People's majority: r1 P, r2 F, r3 F,
    r4 P, r5 tied (left out), r6 P; r7 unanswered."""
    rev1, rev2 = UserFactory(username="rev1"), UserFactory(username="rev2")
    project = s_runs["r1"].run_set.project
    for user in (rev1, rev2):
        project.memberships.create(user=user, role="reviewer")
    for name, user, passed in [
        ("r1", rev1, True),
        ("r1", rev2, True),
        ("r2", rev1, True),
        ("r2", rev1, False),  # newer: counts
        ("r3", rev1, False),
        ("r3", rev2, False),
        ("r4", rev1, True),
        ("r5", rev1, True),
        ("r5", rev2, False),
        ("r6", rev2, True),
    ]:
        answer(s_runs[name], user, passed)
    return s_runs["r1"].run_set


def test_s_judge_calibration_hand_computed(answered: RunSet, users: dict[str, Any]) -> None:
    report = run_selectors.run_set_judge_rater(
        user=users["reviewer"], run_set=answered, judge=run_selectors.S_CHECKS
    )
    assert report is not None and report["source"]["key"] == "s-judge"
    calibration = report["calibration"]["overall"]
    # (judge, majority): r1 (1,1) r2 (1,0) r3 (0,0) r4 (0,1) r6 (1,1); r5 tied, r7 unanswered.
    # po = 3/5; judge yes 3/5, people yes 3/5: pe = 9/25 + 4/25 = 13/25;
    # kappa = (15/25 - 13/25) / (12/25) = 1/6.
    assert calibration["n_units"] == 5
    assert calibration["percent_agreement"] == pytest.approx(0.6)
    assert calibration["kappa"]["value"] == pytest.approx(1 / 6)
    low, high = calibration["kappa"]["interval"]["low"], calibration["kappa"]["interval"]["high"]
    assert low <= 1 / 6 <= high
    assert calibration["true_positive_rate"]["value"] == pytest.approx(2 / 3)  # r1, r6 of r1 r4 r6
    assert calibration["false_positive_rate"]["value"] == pytest.approx(1 / 2)  # r2 of r2, r3
    assert calibration["flagged"] is True  # 1/6 < 0.6
    assert report["calibration"]["n_ties"] == 1
    # Correction cases: r2 (judge PASS, majority FAIL) and r4 (judge FAIL, majority PASS).
    ids = dict(AgentRun.objects.filter(run_set=answered).values_list("folder", "pk"))
    assert [
        (c["run_id"], c["checkpoint"], c["judge"], c["people"], c["votes"], c["n_raters"])
        for c in report["corrections"]
    ] == [
        (ids["r2"], "S1", 1, 0, 1, 1),
        (ids["r4"], "S1", 0, 1, 1, 1),
    ]
    lenient = run_selectors.run_set_judge_rater(
        user=users["reviewer"], run_set=answered, judge=run_selectors.S_CHECKS, threshold=0.1
    )
    assert lenient is not None and lenient["calibration"]["overall"]["flagged"] is False
    # No visual check here: the V judge has nothing to compare.
    assert run_selectors.run_set_judge_rater(user=users["reviewer"], run_set=answered) is None
    with pytest.raises(Forbidden):
        run_selectors.run_set_judge_rater(
            user=users["annotator"], run_set=answered, judge=run_selectors.S_CHECKS
        )


def test_run_set_page_shows_the_s_judge_calibration(
    answered: RunSet, clients: dict[str, Client], django_assert_max_num_queries: Any
) -> None:
    with django_assert_max_num_queries(9):
        page = clients["reviewer"].get(f"/runs/{answered.pk}/").content.decode()
    assert 'id="s-judge-vs-people"' in page and "S judge vs people" in page
    assert 'id="s-judge-calibration"' in page and "0.167" in page and "not trustworthy" in page
    assert 'id="judge-vs-people"' not in page  # no V judge answers in this upload
    assert 'data-corrections="s-judge"' in page and page.count('<tr data-unit="run:') == 2
    page = clients["reviewer"].get(f"/runs/{answered.pk}/?threshold=0.1").content.decode()
    assert "0.167" in page and "not trustworthy" not in page
    page = clients["reviewer"].get(f"/runs/{answered.pk}/?threshold=abc").content.decode()
    assert "is not a number between 0 and 1" in page and "not trustworthy" in page


def test_run_page_hides_the_s_verdict_until_the_person_answered(
    s_runs: dict[str, AgentRun], clients: dict[str, Client], users: dict[str, Any]
) -> None:
    run = s_runs["r3"]
    page = clients["reviewer"].get(f"/runs/agent-runs/{run.pk}/").content.decode()
    assert "data-s-judge-hidden" in page and "data-s-judge>" not in page
    assert "query-r3" in page and "results of r3" in page and "Old Town" in page
    assert 'data-key="p"' in page and 'data-key="f"' in page
    assert 'data-decided-by="judge"' not in page and "not passed" not in page
    assert "search not satisfied" not in page  # nor in the suggested failure modes
    response = clients["reviewer"].post(
        f"/runs/agent-runs/{run.pk}/search/",
        {"checkpoint": "S1", "passed": "pass", "seen": "0"},
        headers={"HX-Request": "true", "HX-Target": "run-checks"},
    )
    body = response.content.decode()
    assert response.status_code == 200 and 'id="run-checks"' in body
    assert "data-s-judge>" in body and "<strong>FAIL</strong>" in body
    assert "Answered <strong>PASS</strong> by reviewer-user" in body
    page = clients["reviewer"].get(f"/runs/agent-runs/{run.pk}/").content.decode()
    assert "S1: search not satisfied" in page and "not passed" in page
    # Another reviewer has not answered: still blind to the judge.
    other = clients["admin"].get(f"/runs/agent-runs/{run.pk}/").content.decode()
    assert "data-s-judge-hidden" in other
    stale = clients["admin"].post(
        f"/runs/agent-runs/{run.pk}/search/",
        {"checkpoint": "S1", "passed": "fail", "seen": "0"},
        headers={"HX-Request": "true", "HX-Target": "run-checks"},
    )
    assert stale.status_code == 409 and "answered S1 with PASS" in stale.content.decode()
    bad = clients["reviewer"].post(
        f"/runs/agent-runs/{run.pk}/search/", {"checkpoint": "S1", "passed": "maybe"}
    )
    assert bad.status_code == 400 and "Answer PASS or FAIL" in bad.content.decode()
    assert (
        clients["annotator"]
        .post(f"/runs/agent-runs/{run.pk}/search/", {"checkpoint": "S1", "passed": "pass"})
        .status_code
        == 403
    )


def column_trust_cells(html: str) -> dict[str, str]:
    row = html[html.index('id="judge-trust"') :]
    row = row[: row.index("</tr>")]
    cells = {}
    for part in row.split("data-column-trust=")[1:]:
        label, _, rest = part[1:].partition('"')
        cells[label] = rest.split("</td>")[0]
    return cells


def test_leaderboard_trust_row_under_s_and_v_is_cached(
    answered: RunSet,
    users: dict[str, Any],
    clients: dict[str, Client],
    monkeypatch: pytest.MonkeyPatch,
    django_assert_max_num_queries: Any,
) -> None:
    from django.core.cache import cache
    from django.urls import reverse
    from django.utils import timezone

    from tests.factories import EvaluationRunFactory

    cache.clear()
    project = answered.project
    EvaluationRunFactory(project=project, model="alpha", finished_at=timezone.now(), summary={})
    computed: list[str] = []
    real = run_selectors._check_trust_compute

    def counting(*, judge: Any, project: Project, threshold: float) -> Any:
        computed.append(judge.key)
        return real(judge=judge, project=project, threshold=threshold)

    monkeypatch.setattr(run_selectors, "_check_trust_compute", counting)
    url = reverse("review:leaderboard", args=[project.pk])
    cells = column_trust_cells(clients["reviewer"].get(url).content.decode())
    s_cell = cells[run_selectors.S_CHECKS.label]
    assert "0.17" in s_cell and "below 0.6" in s_cell  # kappa 1/6, as by hand above
    assert "no human ratings yet" in cells[run_selectors.V_CHECKS.label]
    assert sorted(computed) == ["s-judge", "v-judge"]
    with django_assert_max_num_queries(20):
        again = clients["reviewer"].get(url).content.decode()
    assert column_trust_cells(again) == cells and len(computed) == 2  # from the cache
    # A new answer changes the key: r7 (judge PASS) answered PASS.
    answer(AgentRun.objects.get(run_set=answered, folder="r7"), users["reviewer"], True)
    cells = column_trust_cells(clients["reviewer"].get(url).content.decode())
    assert computed[2:] == ["s-judge"]
    # (1,1) x3 (1,0) (0,0) (0,1): po 4/6, pe (4*4 + 2*2)/36 = 20/36, kappa (24-20)/(36-20).
    assert "0.25" in cells[run_selectors.S_CHECKS.label]
