"""Rescoring a stored upload of agent runs against the items' current reference (a job with a
progress bar), keeping people's visual answers and failure labels; and the run page refreshing
the failure-mode suggestion after a visual answer."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from benchmark.models import Item, Job, JobStatus, Project, Trajectory
from review.runs import services as runs
from review.runs.models import AgentRun, FailureLabel, RunSet, VisualVerdict
from tests.review import test_runs as base

# The run-scoring tests' fixtures and helpers, shared by name.
mme_project = base.mme_project
people = base.people
reviewer = base.reviewer
failed_run = base.failed_run
MME, upload, zip_folder, zip_upload, last_job = (
    base.MME,
    base.upload,
    base.zip_folder,
    base.zip_upload,
    base.last_job,
)

pytestmark = [pytest.mark.django_db, base.needs_samples]


def rescore(client: Client, run_set_id: int, capture: Any, **headers: Any) -> Any:
    """POST "Rescore this upload"; the job runs eagerly once the transaction commits."""
    with capture(execute=True):
        return client.post(f"/runs/{run_set_id}/rescore/", **headers)


def rescore_job() -> Job:
    job = Job.objects.filter(kind=runs.RESCORE_KIND).order_by("-id").first()
    assert job is not None
    return job


def test_rescore_follows_an_edited_item_and_keeps_peoples_work(
    failed_run: AgentRun,
    reviewer: Client,
    people: dict[str, Any],
    django_capture_on_commit_callbacks: Any,
) -> None:
    run = failed_run
    assert (run.acc, run.score["penalty"]) == (False, pytest.approx(0.1))  # 2 calls against 1
    reviewer.post(
        f"/runs/agent-runs/{run.pk}/visual/", {"checkpoint": "C1", "passed": "yes", "seen": 0}
    )
    reviewer.post(f"/runs/agent-runs/{run.pk}/label/", {"mode": "postvisual_perception_deficit"})
    # The item is edited: the golden answer becomes the run's, the reference takes two calls.
    item = Item.objects.get(pk=run.item_id)
    item.expected_answer = "Maple Ave"
    item.save()
    reference = Trajectory.objects.get(item=item, key="reference")
    reference.efficiency = {**reference.efficiency, "reference_tool_calls": 2}
    reference.save()

    response = rescore(reviewer, run.run_set_id, django_capture_on_commit_callbacks)
    job = rescore_job()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.result == {"run_set_id": run.run_set_id, "runs": 1, "changed": 1, "acc_changed": 1}
    assert (job.progress, job.total) == (1, 1)
    page = reviewer.get(response["Location"]).content.decode()
    assert "Done: 1 run rescored, 1 with new figures, 1 now judged differently" in page
    assert f'href="/runs/{run.run_set_id}/"' in page

    run.refresh_from_db()
    assert (run.acc, run.score["golden"], run.score["penalty"]) == (True, "Maple Ave", 0.0)
    # The person's answer still decides V_true; every answer and label is kept.
    assert (run.score["V_true"], run.score["visual_by_person"]) == (1.0, 1)
    assert VisualVerdict.objects.count() == 1 and FailureLabel.objects.count() == 1
    # Nothing new, nothing changes: rescoring is idempotent.
    rescore(reviewer, run.run_set_id, django_capture_on_commit_callbacks)
    assert rescore_job().result["changed"] == 0


def test_rescoring_an_unedited_upload_reproduces_the_uploads_scores(
    mme_project: Project, reviewer: Client, django_capture_on_commit_callbacks: Any
) -> None:
    """The run's stored images stand in for its folder, so image-dependent checks agree."""
    upload(
        reviewer,
        mme_project,
        django_capture_on_commit_callbacks,
        [zip_upload("runs.zip", zip_folder(MME / "runs"))],
    )
    run_set = RunSet.objects.get(pk=last_job().result["run_set_id"])
    before = {r.pk: r.score for r in run_set.runs.all()}
    assert any(r.images for r in run_set.runs.all())
    rescore(reviewer, run_set.pk, django_capture_on_commit_callbacks)
    assert rescore_job().result == {
        "run_set_id": run_set.pk,
        "runs": 2,
        "changed": 0,
        "acc_changed": 0,
    }
    assert {r.pk: r.score for r in run_set.runs.all()} == before


def test_a_check_that_counts_produced_images_agrees_after_rescore(
    mme_project: Project, reviewer: Client, django_capture_on_commit_callbacks: Any
) -> None:
    """A reference step checked by "require_images:2" passes for a run that stored two
    images, before and after a rescore (the stored images stand in for the run folder)."""
    item = Item.objects.get(project=mme_project, external_id="0003")
    reference = Trajectory.objects.get(item=item, key="reference")
    checkpoints = [dict(c) for c in reference.checkpoints]
    v_step = next(c for c in checkpoints if c.get("code_check"))
    v_step["code_check"] = {"verifier": "require_images:2"}
    v_step["tools"] = []
    reference.checkpoints = checkpoints
    reference.save()
    upload(
        reviewer,
        mme_project,
        django_capture_on_commit_callbacks,
        [zip_upload("runs.zip", zip_folder(MME / "runs"))],
    )
    run = AgentRun.objects.get(item=item)
    assert len(run.images) == 8

    def step(score: dict[str, Any]) -> dict[str, Any]:
        return next(c for c in score["checkpoints"] if c["id"] == v_step["id"])

    assert step(run.score)["tool_passed"] is True
    rescore(reviewer, run.run_set_id, django_capture_on_commit_callbacks)
    assert rescore_job().result["changed"] == 0
    run.refresh_from_db()
    assert step(run.score)["tool_passed"] is True


def test_the_results_page_offers_rescore_and_a_second_one_answers_409(
    failed_run: AgentRun, reviewer: Client, django_capture_on_commit_callbacks: Any
) -> None:
    set_id = failed_run.run_set_id
    page = reviewer.get(f"/runs/{set_id}/").content.decode()
    assert f'hx-post="/runs/{set_id}/rescore/"' in page and "Rescore this upload" in page
    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "run-rescore"}
    with django_capture_on_commit_callbacks(execute=False):
        first = reviewer.post(f"/runs/{set_id}/rescore/", **htmx)
    job = rescore_job()
    html = first.content.decode()
    assert first.status_code == 200 and html.lstrip().startswith('<section class="card rescore"')
    assert f'id="job-{job.pk}"' in html and 'hx-trigger="every 1s"' in html
    # While it is queued, a second rescore is refused and shows the first one's progress.
    second = reviewer.post(f"/runs/{set_id}/rescore/", **htmx)
    assert second.status_code == 409
    assert f"being rescored already (job #{job.pk})" in second.content.decode()
    assert f'id="job-{job.pk}"' in second.content.decode()
    assert Job.objects.filter(kind=runs.RESCORE_KIND).count() == 1


def test_a_failed_rescore_offers_retry(
    failed_run: AgentRun, reviewer: Client, django_capture_on_commit_callbacks: Any
) -> None:
    job = Job.objects.create(
        kind=runs.RESCORE_KIND,
        project=failed_run.run_set.project,
        status=JobStatus.FAILED,
        error="The worker stopped while running this job; retry.",
        result={"worker_lost": True},
        params={"run_set_id": failed_run.run_set_id, "name": "wrong.zip"},
    )
    page = reviewer.get(f"/jobs/{job.pk}/").content.decode()
    assert "The rescoring did not finish." in page and "data-retry" in page
    response = rescore(
        reviewer,
        failed_run.run_set_id,
        django_capture_on_commit_callbacks,
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET=f"job-{job.pk}",
    )
    new = rescore_job()
    assert new.pk != job.pk and new.status == JobStatus.SUCCEEDED
    assert response.content.decode().lstrip().startswith(f'<div id="job-{new.pk}"')


def label_section(html: str) -> str:
    match = re.search(r'<section class="card" id="run-label"[^>]*>.*?</section>', html, re.S)
    assert match, "no failure-mode section"
    return match.group(0)


def checked(section: str) -> str | None:
    match = re.search(r'name="mode" value="([a-z_]+)" checked', section)
    return match.group(1) if match else None


def test_a_visual_answer_refreshes_the_failure_mode_suggestion(
    failed_run: AgentRun, reviewer: Client
) -> None:
    page = reviewer.get(f"/runs/agent-runs/{failed_run.pk}/").content.decode()
    before = label_section(page)
    assert checked(before) == "unfaithful_visual_tool_use"
    assert 'hx-include="[data-label-form]"' in page
    response = reviewer.post(
        f"/runs/agent-runs/{failed_run.pk}/visual/",
        {
            "checkpoint": "C1",
            "passed": "yes",
            "seen": 0,
            # the label form, posted along: untouched, with a note typed but not saved
            "mode": "unfaithful_visual_tool_use",
            "suggested_shown": "unfaithful_visual_tool_use",
            "note": "looked at the crops",
        },
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="run-checks",
    )
    html = response.content.decode()
    assert response.status_code == 200 and 'id="run-checks"' in html
    after = label_section(html)
    assert 'hx-swap-oob="true"' in after
    # The person saw the detail in a produced image: the crop was faithful after all.
    assert checked(after) not in (None, "unfaithful_visual_tool_use")
    checks = html.split('id="run-checks"')[1].split("</section>")[0]
    assert f'hx-vals=\'{{"suggested_shown": "{checked(after)}"}}\'' in checks
    assert "looked at the crops" in after  # the unsaved note survives
    assert FailureLabel.objects.count() == 0  # nothing is saved by the refresh


def test_a_choice_the_person_made_survives_the_refresh(
    failed_run: AgentRun, reviewer: Client
) -> None:
    response = reviewer.post(
        f"/runs/agent-runs/{failed_run.pk}/visual/",
        {
            "checkpoint": "C1",
            "passed": "yes",
            "seen": 0,
            "mode": "bad_search_query",
            "suggested_shown": "unfaithful_visual_tool_use",
            "note": "",
        },
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="run-checks",
    )
    assert checked(label_section(response.content.decode())) == "bad_search_query"
