"""The V judge's worked examples on a stored run (issue 26): a reviewer's answer that differs
from the judge's becomes ``Answer: <expected>`` in a new version of the V template, and the
judge is re-asked on that checkpoint only, with the run's stored images (the any-pass rule),
through the call lifecycle; the run's score does not change. Scripted judge server."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from benchmark.exceptions import ValidationFailed
from benchmark.judge_prompts.examples import BEGIN
from benchmark.models import Project
from review.judges.models import JudgeTemplateVersion
from review.runs import services as runs
from review.runs.examples import services
from tests.llm_server import point_at
from tests.review import test_runs_judge as base

mme_project = base.mme_project
people = base.people
reviewer = base.reviewer
judge_server = base.judge_server

pytestmark = [pytest.mark.django_db, base.base.needs_samples]


def test_a_visual_correction_becomes_an_answer_and_only_its_checkpoint_is_asked_again(
    mme_project: Project,
    reviewer: Client,
    people: dict[str, Any],
    judge_server: base.ScriptedServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    point_at(mme_project, judge_server)
    judge_server.script = lambda body: "Answer: no sign visible"  # type: ignore[method-assign]
    run = base.upload_0001(reviewer, mme_project, django_capture_on_commit_callbacks)
    reviewer.post(
        f"/runs/agent-runs/{run.pk}/visual/", {"checkpoint": "C1", "passed": "yes", "seen": 0}
    )
    run.refresh_from_db()
    c1 = next(c for c in run.score["checkpoints"] if c["id"] == "C1")
    expected = runs.run_task_checkpoints(run=run)["C1"]["visual_check"]["expected_answer"]
    made = reviewer.post(
        f"/runs/{run.run_set_id}/examples/add/", {"key": "v-judge", "units": [f"run:{run.pk}:C1"]}
    )
    assert made.status_code == 302, made.content.decode()[:500]
    version = JudgeTemplateVersion.objects.get(project=mme_project)
    assert version.template_id == "agentic_mme.v_judge"
    assert f"Correct answer: Answer: {expected}" in version.system.replace("{{", "{")
    assert "A judge answered: Answer: the image does not show it" in version.system
    # The only answered check is the example: nothing is held back, and that is said.
    from review.agreement.judge_examples.models import ExampleSet

    example_set = ExampleSet.objects.get()
    assert example_set.held_back == []
    with pytest.raises(ValidationFailed, match="no held-back check"):
        services.held_back_checks_start(user=people["reviewer"], example_set=example_set)
    # Re-asked with the new version on C1 alone: one call per image from the match, with the
    # image attached; the answer showing the expected one passes. The score stays.
    asked = judge_server.count
    seen: list[str] = []

    def script(body: dict[str, Any]) -> str:
        seen.append(body["messages"][0]["content"])
        return f"Answer: {expected}"

    judge_server.script = script  # type: ignore[method-assign]
    judge = runs.run_judge_for(project=mme_project)
    assert judge is not None
    found = runs.run_checkpoints_rejudge(run=run, judge=judge, kind="visual", ids=["C1"])
    assert found == {"C1": 1}
    assert judge_server.count - asked == 1 and BEGIN in seen[0]
    assert all(len(r.image_urls) == 1 for r in judge_server.requests[asked:])
    run.refresh_from_db()
    assert next(c for c in run.score["checkpoints"] if c["id"] == "C1") == c1
    # Asked again: the recorded reply is reused.
    assert runs.run_checkpoints_rejudge(run=run, judge=judge, kind="visual", ids=["C1"]) == {
        "C1": 1
    }
    assert judge_server.count - asked == 1
    # A kind that is not a checkpoint kind is refused, naming the kinds, and asks nothing.
    with pytest.raises(ValueError, match="'visul' is not a checkpoint kind \\(search, visual\\)"):
        runs.run_checkpoints_rejudge(run=run, judge=judge, kind="visul", ids=["C1"])
    assert judge_server.count - asked == 1
