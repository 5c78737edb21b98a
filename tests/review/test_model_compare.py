"""Model vs model in both orders (issue 26): the pairwise judge on every item two models both
answered (or a human evaluation's pairs of the two), each pair asked with A's answer first and
then B's; a verdict that flips is a tie. Figures hand-computed on a scripted judge that flips on
one query, ties on another and prefers the answer holding GOOD; people's agreement (kappa) on
the pairs they rated; self-preference when the judge model is model B."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.judgment_tasks.models import Judgment, JudgmentTask
from benchmark.judge_prompts.pairwise import wilson_share
from benchmark.models import JobStatus, Origin, Project, Response, Role
from review.judges import services as judge_services
from review.judges.models import JudgeRun
from review.model_compare.services import model_comparison_start
from tests.factories import (
    AssignmentFactory,
    ItemFactory,
    MembershipFactory,
    ProjectFactory,
    ResponseFactory,
)
from tests.judge_server import TEXTS, ScriptedServer, prefer
from tests.llm_server import MODEL, point_at

pytestmark = pytest.mark.django_db

ALPHA = "alpha"
Z = 1.959963984540054


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
def project(server: ScriptedServer, users: dict[str, Any]) -> Project:
    project = ProjectFactory(name="Two models", data_format="atp")
    for role in (Role.ADMIN, Role.REVIEWER, Role.ANNOTATOR):
        MembershipFactory(project=project, user=users[str(role)], role=role)
    point_at(project, server)
    for n, (ext, (alpha, own)) in enumerate(TEXTS.items()):
        query = "Explain it. POSITION" if ext == "q3" else "Explain it."
        item = ItemFactory(project=project, external_id=ext, query=query, position=n)
        ResponseFactory(item=item, key="gt", origin=Origin.GROUND_TRUTH, text="reference")
        ResponseFactory(
            item=item, key="model:alpha", origin=Origin.MODEL, model_name=ALPHA, text=alpha
        )
        if own is not None:
            ResponseFactory(
                item=item, key=f"model:{MODEL}", origin=Origin.MODEL, model_name=MODEL, text=own
            )
    return project


def answer(project: Project, ext: str, model: str) -> Response:
    return Response.objects.get(item__project=project, item__external_id=ext, model_name=model)


def wilson(k: float, n: int) -> tuple[float, float]:
    """The 95 % Wilson score interval by its formula, in percent."""
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return 100 * (centre - half), 100 * (centre + half)


def compare(project: Project, **kwargs: Any) -> tuple[JudgeRun, dict[str, Any]]:
    run, job = model_comparison_start(
        project=project, user=None, model_a=ALPHA, model_b=MODEL, enqueue=False, **kwargs
    )
    job = judge_services.judge_run_execute(job=job)
    assert job.status == JobStatus.SUCCEEDED, job.error
    return run, job.result["summary"]


def pair_task(project: Project, users: dict[str, Any]) -> JudgmentTask:
    """A human evaluation of q1-q4's pairs, shown alpha first on q1 and q3, the judge model's
    answer first on q2 and q4, with two people's preferences each."""
    shown = {
        "q1": (ALPHA, MODEL, ["a", "a"]),  # A, A
        "q2": (MODEL, ALPHA, ["a", "a"]),  # B, B
        "q3": (ALPHA, MODEL, ["b", "b"]),  # B, B
        "q4": (MODEL, ALPHA, ["b", "tie"]),  # A, tie: no majority
    }
    pairs = []
    for ext, (first, second, _) in shown.items():
        pairs.append([answer(project, ext, first).pk, answer(project, ext, second).pk])
    task = JudgmentTask.objects.create(
        project=project,
        name="Which is better?",
        question="Which answer is better?",
        scheme="nominal",
        labels=[{"value": "a"}, {"value": "b"}, {"value": "tie"}],
        unit_kind="answer-pair",
        unit_params={"pairs": pairs, "models": [ALPHA, MODEL], "scale": "pair"},
        overlap=2,
    )
    people = [users["annotator"], users["reviewer"]]
    for (ext, (_, _, values)), (a, b) in zip(shown.items(), pairs, strict=True):
        item = answer(project, ext, ALPHA).item
        for person, value in zip(people, values, strict=True):
            lease = AssignmentFactory(
                task=task, item=item, user=person, unit=f"pair:{a}:{b}", status="submitted"
            )
            Judgment.objects.create(
                task=task,
                item=item,
                user=person,
                assignment=lease,
                unit=f"pair:{a}:{b}",
                value=value,
            )
    return task


# --------------------------------------------------------------------------- figures


def test_wilson_share_is_the_wilson_formula() -> None:
    share = wilson_share(2, 5)
    assert share.value == pytest.approx(40.0)
    assert (share.low, share.high) == pytest.approx(wilson(2, 5))
    assert wilson_share(0, 0).value is None


def test_every_pair_in_both_orders_with_hand_computed_figures(project: Project) -> None:
    run, summary = compare(project)
    # q1..q5 both answered (q6 only alpha): 5 pairs, 2 calls each, A's answer first then B's.
    assert run.judge == "pairwise-models" and run.selection["models"] == [ALPHA, MODEL]
    assert len(run.selection["pairs"]) == 5 and run.calls.count() == 10
    c = summary["comparison"]
    assert (c["n"], c["excluded"], c["a_wins"], c["ties"], c["b_wins"]) == (5, 0, 2, 2, 1)
    assert c["a_win"]["value"] == pytest.approx(40.0)
    assert (c["a_win"]["low"], c["a_win"]["high"]) == pytest.approx(wilson(2, 5))
    assert c["tie"]["value"] == pytest.approx(40.0)
    assert c["b_win"]["value"] == pytest.approx(20.0)
    assert (c["b_win"]["low"], c["b_win"]["high"]) == pytest.approx(wilson(1, 5))
    # A's win share: (2 wins + 2 ties / 2) / 5.
    assert c["win_share"]["value"] == pytest.approx(60.0)
    assert (c["win_share"]["low"], c["win_share"]["high"]) == pytest.approx(wilson(3, 5))
    # q3 flipped (each order chose the first answer).
    assert c["flip"]["value"] == pytest.approx(20.0)
    # Decided with different lengths: q1 (longer won), q2 (longer won), q5 (shorter won).
    assert (c["longer_wins"]["k"], c["longer_wins"]["n"]) == (2, 3)
    assert c["longer_wins"]["value"] == pytest.approx(200 / 3)
    key = {
        ext: f"{answer(project, ext, ALPHA).pk}:{answer(project, ext, MODEL).pk}"
        for ext in TEXTS
        if ext != "q6"
    }
    assert summary["verdicts"] == {
        key["q1"]: "A",
        key["q2"]: "B",
        key["q3"]: "tie",
        key["q4"]: "tie",
        key["q5"]: "A",
    }
    # The run's figures table has the one source "alpha vs <model>".
    assert list(summary["models"]) == [f"{ALPHA} vs {MODEL}"]


def test_a_flip_is_a_tie_and_the_raw_verdicts_are_on_the_page(
    project: Project, clients: dict[str, Client], django_assert_max_num_queries: Any
) -> None:
    run, _ = compare(project)
    url = reverse("review:judge_run", args=[run.pk])
    with django_assert_max_num_queries(16):
        html = clients["reviewer"].get(url).content.decode()
    q3 = answer(project, "q3", ALPHA).pk
    article = html[html.index(f'data-pair="{q3}:') :]
    article = article[: article.index("</article>")]
    assert 'data-winner="tie"' in article and "flipped with the order" in article
    assert re.search(r'data-order="a-first">A<', article)
    assert re.search(r'data-order="b-first">A<', article)
    assert "The first one reads better." in article  # the raw output of each order
    assert 'data-figure="a_win">40.0%' in html and 'data-figure="flip">20.0%' in html
    assert 'data-figure="longer_wins">66.7%' in html
    assert "No human ratings yet" in html


def test_people_agreement_and_self_preference_on_the_run_page(
    project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    pair_task(project, users)
    run, _ = compare(project)
    html = clients["reviewer"].get(reverse("review:judge_run", args=[run.pk])).content.decode()
    # Pairs with a majority: q1 (people A, judge A), q2 (B, B), q3 (B, judge tie); q4 has
    # none. p_o = 2/3; p_e = 1/3 x 1/3 + 1/3 x 2/3 = 1/3; kappa = (2/3 - 1/3) / (2/3) = 0.5.
    assert 'data-figure="people_kappa">0.50<' in html
    assert "over 3 pairs" in html and "1 pair without a majority left out" in html
    assert "data-flagged" in html  # 0.5 is below the trust threshold 0.6
    # The judge model is model B: it gives its answers (1 win + 2 ties / 2) / 5 = 40 %; the
    # people's 8 ratings give them (4 wins + 1 tie / 2) / 8 = 56.25 %.
    assert 'data-figure="own_share">40.0%' in html
    assert 'data-figure="others_share">56.2%' in html or 'data-figure="others_share">56.3%' in html
    assert (
        'data-figure="self_preference">-16.2' in html
        or 'data-figure="self_preference">-16.3' in html
    )


def test_a_human_evaluations_pairs_in_the_comparisons_order(
    project: Project, users: dict[str, Any]
) -> None:
    task = pair_task(project, users)
    run, summary = compare(project, task=task)
    # The task's four pairs, each read with alpha's answer as A whatever side people saw it on.
    assert run.selection["human_eval_task"] == task.pk
    assert sorted(run.selection["pairs"]) == sorted(
        [answer(project, e, ALPHA).pk, answer(project, e, MODEL).pk]
        for e in ("q1", "q2", "q3", "q4")
    )
    c = summary["comparison"]
    assert (c["n"], c["a_wins"], c["ties"], c["b_wins"]) == (4, 1, 2, 1)


def test_other_judge_models_count_among_the_others(project: Project) -> None:
    other, _ = compare(project, model="another-judge")
    assert other.model == "another-judge"
    run, summary = compare(project)
    extra = run.spec.run_extra(run, summary)
    # Both judges gave the same verdicts: own 40 %, others 40 %, no self-preference.
    assert extra["self_preference"]["own"]["value"] == pytest.approx(40.0)
    assert extra["self_preference"]["others"]["value"] == pytest.approx(40.0)
    assert extra["self_preference"]["difference"] == pytest.approx(0.0)
    assert extra["people"] is None


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        (ALPHA, ALPHA, "choose two different models"),
        (ALPHA, "nobody", "have answered no item in common"),
    ],
)
def test_comparisons_that_cannot_be_made_say_why(
    project: Project, a: str, b: str, message: str
) -> None:
    from benchmark.exceptions import ValidationFailed

    with pytest.raises(ValidationFailed, match=message):
        model_comparison_start(project=project, user=None, model_a=a, model_b=b, enqueue=False)
    assert not JudgeRun.objects.filter(project=project).exists()


# --------------------------------------------------------------------------- the page


def test_the_page_starts_a_comparison_and_redirects_to_the_run(
    project: Project,
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
    django_assert_max_num_queries: Any,
) -> None:
    url = reverse("review:model_compare", args=[project.pk])
    with django_assert_max_num_queries(10):
        page = clients["reviewer"].get(url)
    assert page.status_code == 200 and "Compare in both orders" in page.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = clients["reviewer"].post(url, {"model_a": ALPHA, "model_b": MODEL, "workers": 2})
    run = JudgeRun.objects.get(project=project)
    assert response.status_code == 302 and response["Location"] == f"/judges/runs/{run.pk}/"
    assert run.job is not None
    run.job.refresh_from_db()
    assert run.job.status == JobStatus.SUCCEEDED
    html = clients["reviewer"].get(response["Location"]).content.decode()
    assert 'data-figure="a_win">40.0%' in html


def test_bad_input_answers_400_or_404_with_the_reason(
    project: Project, clients: dict[str, Client]
) -> None:
    url = reverse("review:model_compare", args=[project.pk])
    same = clients["reviewer"].post(url, {"model_a": ALPHA, "model_b": ALPHA, "workers": 2})
    assert same.status_code == 400 and "Choose a model other than model A." in same.content.decode()
    unknown = clients["reviewer"].post(url, {"model_a": ALPHA, "model_b": "nobody", "workers": 2})
    assert unknown.status_code == 400
    assert clients["reviewer"].get(url + "?task=abc").status_code == 400
    missing = clients["reviewer"].get(url + "?task=999999")
    assert (
        missing.status_code == 404 and "not a human evaluation of pairs" in missing.content.decode()
    )
    assert not JudgeRun.objects.filter(project=project).exists()


def test_the_leaderboard_and_the_human_evaluation_link_to_it(
    project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    task = pair_task(project, users)
    board = clients["reviewer"].get(reverse("review:leaderboard", args=[project.pk]))
    assert reverse("review:model_compare", args=[project.pk]) in board.content.decode()
    results = clients["reviewer"].get(reverse("review:human_eval_results", args=[task.pk]))
    assert f"?task={task.pk}" in results.content.decode()
    form = clients["reviewer"].get(
        reverse("review:model_compare", args=[project.pk]) + f"?task={task.pk}"
    )
    assert form.status_code == 200 and "Which is better?" in form.content.decode()


# --------------------------------------------------------------------------- identical answers


def test_identical_answers_are_a_tie_without_asking_the_judge(
    project: Project, clients: dict[str, Client]
) -> None:
    # q7: both models give the very same text. Both orders would be the same prompt (so one
    # call key): the pair is a tie by definition, and the judge is not asked. Its query says
    # POSITION, so a judge asked anyway would prefer the first answer (a flip, or A winning
    # when only one order were read back).
    item = ItemFactory(project=project, external_id="q7", query="Explain it. POSITION", position=7)
    for model in (ALPHA, MODEL):
        ResponseFactory(
            item=item, key=f"model:{model}", origin=Origin.MODEL, model_name=model, text="same"
        )
    run, summary = compare(project)
    alpha = answer(project, "q7", ALPHA)
    assert not run.calls.filter(response=alpha).exists()
    assert run.calls.count() == 10  # q1-q5's two orders, nothing for q7
    c = summary["comparison"]
    # q1-q5 as before (2 A wins, 2 ties, 1 B win, q3 flipped) plus q7's tie, nothing excluded.
    assert (c["n"], c["excluded"], c["a_wins"], c["ties"], c["b_wins"]) == (6, 0, 2, 3, 1)
    assert c["flip"]["value"] == pytest.approx(100 / 6)
    assert summary["verdicts"][f"{alpha.pk}:{answer(project, 'q7', MODEL).pk}"] == "tie"
    html = clients["reviewer"].get(reverse("review:judge_run", args=[run.pk])).content.decode()
    article = html[html.index(f'data-pair="{alpha.pk}:') :]
    article = article[: article.index("</article>")]
    assert 'data-winner="tie"' in article and "identical answers" in article


# --------------------------------------------------------------------------- the run page's cost


def test_the_run_page_keeps_people_agreement_until_a_rating_changes(
    project: Project,
    users: dict[str, Any],
    clients: dict[str, Client],
    django_assert_max_num_queries: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    task = pair_task(project, users)
    compare(project, model="another-judge")
    run, _ = compare(project)
    url = reverse("review:judge_run", args=[run.pk])
    with django_assert_max_num_queries(16):
        first = clients["reviewer"].get(url).content.decode()
    assert 'data-figure="people_kappa">0.50<' in first and "over 3 pairs" in first

    # Later views read the agreement (a bootstrap over every rating) and self-preference from
    # the cache: nothing is computed again, and fewer queries are made.
    from benchmark.metrics import judge_rater

    def computed_again(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the agreement was computed again")

    monkeypatch.setattr(judge_rater, "judge_calibration", computed_again)
    with django_assert_max_num_queries(14):
        again = clients["reviewer"].get(url).content.decode()
    assert 'data-figure="people_kappa">0.50<' in again and 'data-figure="own_share">' in again

    # A new rating moves the key: q4 gets a majority (a third person says "b": alpha's answer,
    # shown second there, i.e. A), and the page counts it.
    monkeypatch.undo()
    q4 = answer(project, "q4", ALPHA)
    a, b = answer(project, "q4", MODEL).pk, q4.pk
    lease = AssignmentFactory(
        task=task, item=q4.item, user=users["admin"], unit=f"pair:{a}:{b}", status="submitted"
    )
    Judgment.objects.create(
        task=task,
        item=q4.item,
        user=users["admin"],
        assignment=lease,
        unit=f"pair:{a}:{b}",
        value="b",
    )
    after = clients["reviewer"].get(url).content.decode()
    assert "over 4 pairs" in after
