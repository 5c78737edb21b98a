"""Cancelling a job in the one job pipeline (issue 10): a queued job never runs, a running job
stops at its next progress report (``JobCancelled``) and is recorded as cancelled, who may
cancel, the POST /jobs/<pk>/cancel/ route, the job card's Cancel button and "Cancelled" badge,
and the estimate of the time left."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from benchmark.exceptions import Conflict, Forbidden
from benchmark.jobs import kinds, presenters, services
from benchmark.jobs.uploads import upload_folder
from benchmark.models import Job, JobStatus, Project
from tests.factories import JobFactory, ProjectFactory

pytestmark = pytest.mark.django_db

KIND = "cancel_test"


@pytest.fixture
def steps() -> Iterator[dict[str, Any]]:
    """A kind whose runner reports progress ``n`` times (``steps["n"]``), calling
    ``steps["between"](job, i)`` before report i, and records the reports it got through."""
    state: dict[str, Any] = {"n": 3, "between": lambda job, i: None, "reached": []}

    def runner(*, job: Job, progress: Any) -> dict[str, Any]:
        for i in range(1, state["n"] + 1):
            state["between"](job, i)
            progress(progress=i, total=state["n"], message=f"step {i}")
            state["reached"].append(i)
        return {"steps": state["n"]}

    kinds.job_kind_register(
        kinds.JobKind(
            name=KIND,
            runner=runner,
            action="view",
            starter_sees=True,
            upload_area="cancel-test",
            unit="steps",
        )
    )
    yield state
    kinds._KINDS.pop(KIND, None)


def job_of(project: Project, user: Any, **kw: Any) -> Job:
    return JobFactory(kind=KIND, project=project, created_by=user, params={}, **kw)


# --------------------------------------------------------------------------- the service


def test_a_cancelled_queued_job_never_runs_and_its_upload_is_removed(
    steps: dict[str, Any], project: Project, users: dict[str, Any]
) -> None:
    job = job_of(project, users["annotator"])
    folder = upload_folder("cancel-test", job.pk)
    folder.mkdir(parents=True)
    (folder / "upload.bin").write_bytes(b"x")
    cancelled = services.job_cancel(job=job, user=users["annotator"])
    assert cancelled.status == JobStatus.FAILED and cancelled.cancelled and cancelled.done
    assert cancelled.error == "Cancelled by annotator-user before it started."
    assert cancelled.result == {"cancelled": True, "cancelled_by": "annotator-user"}
    assert cancelled.cancel_requested_by == users["annotator"]
    assert not Path(folder).exists()
    services.job_run(job_id=job.pk)  # the task arrives later: nothing happens
    assert steps["reached"] == []
    job.refresh_from_db()
    assert job.cancelled and job.started_at is None


def test_a_running_job_stops_at_its_next_progress_report(
    steps: dict[str, Any], project: Project, users: dict[str, Any]
) -> None:
    reviewer = users["reviewer"]
    job = job_of(project, users["annotator"])

    def cancel_before_the_second(job_row: Job, i: int) -> None:
        if i == 2:  # another request, while the runner works
            services.job_cancel(job=Job.objects.get(pk=job_row.pk), user=reviewer)
            asked = Job.objects.get(pk=job_row.pk)
            assert asked.status == JobStatus.RUNNING and asked.cancelling

    steps["between"] = cancel_before_the_second
    services.job_run(job_id=job.pk)
    assert steps["reached"] == [1]  # the second report raised
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.cancelled and not job.cancelling
    assert job.error == "Cancelled by reviewer-user."
    assert job.result == {"cancelled": True, "cancelled_by": "reviewer-user"}
    assert (job.progress, job.total) == (1, 3)  # how far it got
    assert job.finished_at is not None


def test_asking_twice_changes_nothing_and_a_finished_job_cannot_be_cancelled(
    steps: dict[str, Any], project: Project, users: dict[str, Any]
) -> None:
    running = job_of(project, users["admin"], status=JobStatus.RUNNING)
    first = services.job_cancel(job=running, user=users["admin"])
    asked_at = first.cancel_requested_at
    again = services.job_cancel(job=running, user=users["reviewer"])
    assert again.cancel_requested_at == asked_at and again.cancel_requested_by == users["admin"]
    for status in (JobStatus.SUCCEEDED, JobStatus.FAILED):
        done = job_of(project, users["admin"], status=status)
        with pytest.raises(Conflict, match=f"already {status}; there is nothing to cancel"):
            services.job_cancel(job=done, user=users["admin"])
        done.refresh_from_db()
        assert done.cancel_requested_at is None


def test_who_may_cancel(steps: dict[str, Any], project: Project, users: dict[str, Any]) -> None:
    job = job_of(project, users["annotator"], status=JobStatus.RUNNING)
    other = job_of(project, users["reviewer"], status=JobStatus.RUNNING)
    assert services.job_can_cancel(user=users["annotator"], job=job)  # started it
    assert services.job_can_cancel(user=users["reviewer"], job=job)
    assert services.job_can_cancel(user=users["admin"], job=job)
    assert not services.job_can_cancel(user=users["annotator"], job=other)
    with pytest.raises(Forbidden, match="only the user who started this job"):
        services.job_cancel(job=other, user=users["annotator"])
    other.refresh_from_db()
    assert other.cancel_requested_at is None


def test_a_job_without_a_project_only_its_starter_cancels(users: dict[str, Any]) -> None:
    job = JobFactory(kind="import", project=None, created_by=users["admin"], params={})
    assert services.job_can_cancel(user=users["admin"], job=job)
    assert not services.job_can_cancel(user=users["reviewer"], job=job)


@pytest.mark.django_db(transaction=True)
def test_a_runner_inside_a_transaction_is_stopped_and_its_writes_undone(
    steps: dict[str, Any],
) -> None:
    """On PostgreSQL a report inside the runner's transaction goes through a second
    connection; a cancel committed by another request stops it there too."""
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers: proven on PostgreSQL")
    job = services.job_create(kind=KIND, project=ProjectFactory(name="cancel in a transaction"))

    def cancel_from_another_connection(job_row: Job, i: int) -> None:
        if i == 2:
            other = connections.create_connection("default")
            try:
                with other.cursor() as cursor:
                    cursor.execute(
                        "UPDATE benchmark_job SET cancel_requested_at = now() WHERE id = %s",
                        [job_row.pk],
                    )
                other.commit()
            finally:
                other.close()

    steps["between"] = cancel_from_another_connection
    run = kinds.job_kind(KIND).runner  # type: ignore[union-attr]

    def in_a_transaction(*, job: Job, progress: Any) -> dict[str, Any]:
        with transaction.atomic():
            ProjectFactory(name="written by the runner")
            return run(job=job, progress=progress)  # type: ignore[operator]

    kinds.job_kind_register(
        kinds.JobKind(name=KIND, runner=in_a_transaction, action="view", unit="steps")
    )
    services.job_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.cancelled and job.error == "Cancelled by someone."
    assert steps["reached"] == [1]
    assert not Project.objects.filter(name="written by the runner").exists()


# --------------------------------------------------------------------------- the route


def url(job: Job) -> str:
    return reverse("benchmark:job_cancel", kwargs={"pk": job.pk})


HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "job-1"}


def test_the_route_answers_the_card_for_htmx_and_redirects_otherwise(
    steps: dict[str, Any], project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    running = job_of(project, users["annotator"], status=JobStatus.RUNNING, total=3, progress=1)
    response = clients["annotator"].post(url(running), **HX)
    assert response.status_code == 200
    body = response.content.decode()
    assert f'id="job-{running.pk}"' in body and "data-cancelling" in body
    assert "Cancel requested by annotator-user" in body and "data-job-cancel" not in body
    queued = job_of(project, users["annotator"])
    response = clients["annotator"].post(url(queued))
    assert response.status_code == 302
    assert response["Location"] == reverse("benchmark:job_detail", kwargs={"pk": queued.pk})
    page = clients["annotator"].get(response["Location"]).content.decode()
    assert "data-cancelled" in page and "Cancelled by annotator-user before it started." in page


def test_the_route_refuses_what_it_should(
    steps: dict[str, Any], project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    mine = job_of(project, users["reviewer"], status=JobStatus.RUNNING)
    assert clients["annotator"].post(url(mine)).status_code == 403  # sees it, did not start it
    assert clients["outsider"].post(url(mine)).status_code == 404
    assert clients["reviewer"].get(url(mine)).status_code == 405
    anonymous = Client().post(url(mine))
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    done = job_of(project, users["reviewer"], status=JobStatus.SUCCEEDED)
    response = clients["reviewer"].post(url(done))
    assert response.status_code == 409
    assert "already succeeded" in response.content.decode()
    mine.refresh_from_db()
    assert mine.cancel_requested_at is None


def test_the_route_wants_the_csrf_token(
    steps: dict[str, Any], project: Project, users: dict[str, Any]
) -> None:
    job = job_of(project, users["admin"], status=JobStatus.RUNNING)
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["admin"])
    assert client.post(url(job)).status_code == 403
    job.refresh_from_db()
    assert job.cancel_requested_at is None


# --------------------------------------------------------------------------- the card


def card(client: Client, job: Job) -> str:
    path = reverse("benchmark:job_detail", kwargs={"pk": job.pk})
    return client.get(path, **HX).content.decode()


def test_the_card_shows_cancel_to_whoever_may_and_cancelled_after(
    steps: dict[str, Any], project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    job = job_of(
        project,
        users["annotator"],
        status=JobStatus.RUNNING,
        total=10,
        progress=5,
        started_at=timezone.now() - timedelta(minutes=2),
    )
    mine = card(clients["annotator"], job)
    assert "data-job-cancel" in mine and 'name="csrfmiddlewaretoken"' in mine
    assert "about 2 min left" in mine
    assert "data-job-cancel" in card(clients["reviewer"], job)
    other = job_of(project, users["reviewer"], status=JobStatus.RUNNING)
    assert "data-job-cancel" not in card(clients["annotator"], other)
    services.job_cancel(job=job, user=users["annotator"])
    assert "data-cancelling" in card(clients["reviewer"], job)
    # The runner raises at its next report and job_run records it so:
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.FAILED, error="Cancelled by annotator-user.", result={"cancelled": True}
    )
    after = card(clients["annotator"], job)
    assert "data-cancelled" in after and ">Cancelled<" in after
    assert "was cancelled after 5 of 10 steps" in after
    assert "data-job-cancel" not in after and "min left" not in after


# --------------------------------------------------------------------------- the estimate


T0 = timezone.now().replace(microsecond=0)


def running(**kw: Any) -> Job:
    fields: dict[str, Any] = {"status": JobStatus.RUNNING, "total": 30, "started_at": T0}
    fields.update(kw)
    return Job(kind=KIND, **fields)


@pytest.mark.parametrize(
    ("job", "seconds_later", "expected"),
    [
        (running(progress=10), 60, 120),  # 6 s a step, 20 steps left
        (running(progress=15), 30, 30),
        (running(progress=29), 290, 10),
        (running(progress=0), 60, None),  # no progress yet
        (running(progress=30), 60, None),  # all done, finishing
        (running(progress=10), 1, None),  # too early to tell
        (running(progress=10, total=0), 60, None),  # nothing to count toward
        (running(progress=10, started_at=None), 60, None),
        (running(progress=10, status=JobStatus.QUEUED), 60, None),
        (running(progress=10, cancel_requested_at=T0), 60, None),  # stopping
    ],
)
def test_eta_seconds_from_progress_and_time_since_start(
    job: Job, seconds_later: int, expected: int | None
) -> None:
    now = T0 + timedelta(seconds=seconds_later)
    assert presenters.job_eta_seconds(job, now=now) == expected


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, ""),
        (0, "about 0 s left"),
        (45, "about 45 s left"),
        (60, "about 1 min left"),
        (120, "about 2 min left"),
        (150, "about 2 min left"),
        (89 * 60, "about 89 min left"),
        (90 * 60, "about 1 h 30 min left"),
        (3 * 3600, "about 3 h left"),
    ],
)
def test_eta_text(seconds: int | None, text: str) -> None:
    assert presenters.eta_text(seconds) == text


def test_eta_text_of_a_job() -> None:
    job = running(progress=10)
    assert presenters.job_eta_text(job, now=T0 + timedelta(seconds=60)) == "about 2 min left"
    assert presenters.job_eta_text(running(), now=T0 + timedelta(seconds=60)) == ""
