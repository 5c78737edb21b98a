"""Corrections become worked examples for the Agentic-MME S and V judges (issue 26): ticked
correction cases of an upload become a new version of the judge's template (nothing
overwritten), scoring reads it, and the held-back comparison is a job that re-asks the judge
on the held-back checks only (never an example), its figures equal to hand-computed ones.
The judge is the scripted server (tests/llm_server.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from benchmark.exceptions import ValidationFailed
from benchmark.judge_prompts.examples import BEGIN
from benchmark.models import JobStatus, Project
from review.agreement.judge_examples.models import ExampleSet
from review.judges.models import JudgeTemplateVersion
from review.runs import services as runs
from review.runs.examples import selectors, services
from review.runs.models import AgentRun, RunSet
from tests.llm_server import FakeModelServer
from tests.review.test_s_judge import JUDGE_PASSES, answered, s_project, s_runs, s_server

__all__ = ["answered", "s_project", "s_runs", "s_server"]

pytestmark = pytest.mark.django_db


@pytest.fixture
def learning(s_server: FakeModelServer) -> FakeModelServer:
    """The scripted S judge, which answers r4's check PASS once its prompt has worked
    examples (the new version); every other answer as before."""

    def respond(body: dict[str, Any]) -> str:
        text = json.dumps(body["messages"][1:])  # the system text names the examples' queries
        run = next(r for r in ("r1", "r2", "r3", "r4", "r5", "r6", "r7") if f"query-{r}" in text)
        if run == "r4" and BEGIN in body["messages"][0]["content"]:
            return "PASS\nthe examples say so"
        return "PASS\nthe results name it" if run in JUDGE_PASSES else "FAIL\nnot found"

    s_server.respond = respond
    return s_server


def ids(run_set: RunSet) -> dict[str, int]:
    return dict(AgentRun.objects.filter(run_set=run_set).values_list("folder", "pk"))


def add_r2(answered: RunSet, user: Any) -> ExampleSet:
    return services.check_examples_add(
        user=user, run_set=answered, key="s-judge", units=[f"run:{ids(answered)['r2']}:S1"]
    )


def test_ticked_cases_become_a_new_template_version_that_scoring_reads(
    answered: RunSet, users: dict[str, Any], learning: FakeModelServer
) -> None:
    example_set = add_r2(answered, users["reviewer"])
    unit = f"run:{ids(answered)['r2']}:S1"
    (case,) = example_set.cases.all()
    assert (case.unit, case.people, case.judge_value, case.answer) == (unit, 0, 1, "FAIL")
    assert "Find the street's district." in case.summary and "query-r2" in case.summary
    assert example_set.task is None and example_set.run_set == answered
    (version,) = JudgeTemplateVersion.objects.filter(project=answered.project)
    assert version.template_id == "agentic_mme.s_judge" and version.number == 1
    assert BEGIN in version.system and "Correct answer: FAIL" in version.system
    assert "A judge answered: PASS" in version.system
    # A second set keeps the first version and carries both examples.
    second = services.check_examples_add(
        user=users["reviewer"],
        run_set=answered,
        key="s-judge",
        units=[f"run:{ids(answered)['r4']}:S1"],
    )
    assert second.pk != example_set.pk
    versions = list(
        JudgeTemplateVersion.objects.filter(project=answered.project).order_by("number")
    )
    assert [v.number for v in versions] == [1, 2]
    assert versions[1].system.count("Example ") == 2 and versions[0].system.count("Example ") == 1
    # Scoring reads the project's newest version (2): rescoring r4 now passes it.
    judge = runs.run_judge_for(project=answered.project)
    assert judge is not None and BEGIN in judge.templates["agentic_mme.s_judge"].system
    r4 = runs.run_rescore(run=AgentRun.objects.get(pk=ids(answered)["r4"]), judge=judge)
    assert next(c for c in r4.score["checkpoints"] if c["id"] == "S1")["passed"] is True


def test_bad_choices_are_refused_with_what_and_where(
    answered: RunSet, users: dict[str, Any]
) -> None:
    folder = ids(answered)
    with pytest.raises(ValidationFailed, match="tick at least one search check"):
        services.check_examples_add(
            user=users["reviewer"], run_set=answered, key="s-judge", units=[]
        )
    with pytest.raises(ValidationFailed, match="is not a correction case of the S judge"):
        services.check_examples_add(
            user=users["reviewer"],
            run_set=answered,
            key="s-judge",
            units=[f"run:{folder['r1']}:S1"],
        )
    with pytest.raises(ValidationFailed, match="'x-judge' is not a check judge"):
        services.check_examples_add(
            user=users["reviewer"], run_set=answered, key="x-judge", units=["run:1:S1"]
        )
    add_r2(answered, users["reviewer"])
    with pytest.raises(ValidationFailed, match="is a worked example already"):
        add_r2(answered, users["reviewer"])
    assert JudgeTemplateVersion.objects.filter(project=answered.project).count() == 1


def test_the_held_back_comparison_hand_computed_and_never_an_example(
    answered: RunSet,
    users: dict[str, Any],
    learning: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    folder = ids(answered)
    example_set = add_r2(answered, users["reviewer"])
    # Reviewers answered r1..r6; r2 is the example; r7 nobody answered.
    held = [f"run:{folder[r]}:S1" for r in ("r1", "r3", "r4", "r5", "r6")]
    assert sorted(example_set.held_back) == sorted(held)
    assert f"run:{folder['r2']}:S1" not in example_set.held_back
    asked_before = learning.count
    with django_capture_on_commit_callbacks(execute=True):
        job = services.held_back_checks_start(user=users["reviewer"], example_set=example_set)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    # Only the held-back checks were asked, each once, with the new version's prompt.
    new = learning.requests[asked_before:]
    assert len(new) == 5
    assert all(BEGIN in r.messages[0]["content"] for r in new)
    assert not any("query-r2" in json.dumps(r.messages[1:]) for r in new)
    example_set.refresh_from_db()
    assert example_set.held_back_values["after"] == {
        f"run:{folder['r1']}:S1": 1,
        f"run:{folder['r3']}:S1": 0,
        f"run:{folder['r4']}:S1": 1,
        f"run:{folder['r5']}:S1": 1,
        f"run:{folder['r6']}:S1": 1,
    }
    # The runs' scores did not change (r4's stored answer is still FAIL).
    r4 = AgentRun.objects.get(pk=folder["r4"])
    assert next(c for c in r4.score["checkpoints"] if c["id"] == "S1")["passed"] is False
    report = selectors.held_back_comparison(user=users["reviewer"], example_set=example_set)
    assert report is not None
    # Majority: r1 P, r3 F, r4 P, r6 P (r5 tied, left out). Before: r1 P, r3 F, r4 F, r6 P.
    # po = 3/4; judge yes 2/4, people yes 3/4: pe = 2/4*3/4 + 2/4*1/4 = 1/2; kappa = 1/2.
    # After: every one agrees: po = 1, kappa = 1. TPR before 2/3, after 1; FPR 0 both.
    before, after = report["before"], report["after"]
    assert report["n_units"] == 4
    assert before["percent_agreement"] == pytest.approx(0.75)
    assert after["percent_agreement"] == pytest.approx(1.0)
    assert before["kappa"]["value"] == pytest.approx(0.5)
    assert after["kappa"]["value"] == pytest.approx(1.0)
    assert before["true_positive_rate"]["value"] == pytest.approx(2 / 3)
    assert after["true_positive_rate"]["value"] == pytest.approx(1.0)
    assert before["false_positive_rate"]["value"] == pytest.approx(0.0)
    assert report["difference"]["percent_agreement"] == pytest.approx(0.25)
    assert report["difference"]["kappa"] == pytest.approx(0.5)
    # Again: the same values, every model call from the cache.
    asked = learning.count
    with django_capture_on_commit_callbacks(execute=True):
        services.held_back_checks_start(user=users["reviewer"], example_set=example_set)
    example_set.refresh_from_db()
    assert learning.count == asked
    assert example_set.held_back_values["after"][f"run:{folder['r4']}:S1"] == 1


def test_on_the_pages(
    answered: RunSet,
    users: dict[str, Any],
    learning: FakeModelServer,
    client_for: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    reviewer: Client = client_for(users["reviewer"])
    folder = ids(answered)
    page = reviewer.get(f"/runs/{answered.pk}/").content.decode()
    assert 'id="s-judge-add-examples"' in page
    assert f'value="run:{folder["r2"]}:S1"' in page
    bad = reviewer.post(
        f"/runs/{answered.pk}/examples/add/",
        {"key": "s-judge", "units": [f"run:{folder['r1']}:S1"]},
    )
    assert bad.status_code == 400 and "is not a correction case" in bad.content.decode()
    made = reviewer.post(
        f"/runs/{answered.pk}/examples/add/",
        {"key": "s-judge", "units": [f"run:{folder['r2']}:S1"]},
    )
    example_set = ExampleSet.objects.get()
    assert made.status_code == 302 and made["Location"] == f"/runs/examples/{example_set.pk}/"
    # The agreement page of worked examples sends an upload's set to its own page.
    moved = reviewer.get(f"/agreement/judge-examples/{example_set.pk}/")
    assert moved.status_code == 302 and moved["Location"] == f"/runs/examples/{example_set.pk}/"
    page = reviewer.get(f"/runs/examples/{example_set.pk}/").content.decode()
    assert "Correct answer" not in page and "<code>FAIL</code>" in page
    assert 'id="held-back-start"' in page
    with django_capture_on_commit_callbacks(execute=True):
        started = reviewer.post(f"/runs/examples/{example_set.pk}/held-back/")
    assert started.status_code == 302
    page = reviewer.get(f"/runs/examples/{example_set.pk}/").content.decode()
    assert 'data-version="after"' in page and "1.000" in page
    run_page = reviewer.get(f"/runs/{answered.pk}/").content.decode()
    assert f'href="/runs/examples/{example_set.pk}/"' in run_page
    annotator: Client = client_for(users["annotator"])
    assert annotator.get(f"/runs/examples/{example_set.pk}/").status_code == 403
    outsider: Client = client_for(users["outsider"])
    assert outsider.get(f"/runs/examples/{example_set.pk}/").status_code == 404


def test_v_judge_examples_are_answers(
    answered: RunSet, users: dict[str, Any], s_project: Project
) -> None:
    from review.judges.specs.agentic_mme import V_JUDGE

    cp = {"id": "C1", "visual_check": {"question": "What sign?", "expected_answer": "STOP"}}
    assert V_JUDGE.check_example_answer(1, cp) == "Answer: STOP"
    no = V_JUDGE.check_example_answer(0, cp)
    assert no.startswith("Answer: ") and "stop" not in no.casefold()
    assert "What sign?" in V_JUDGE.check_example_input(cp, {})
    assert V_JUDGE.worked_examples_templates() == ("agentic_mme.v_judge",)
