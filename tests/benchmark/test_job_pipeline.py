"""The one job pipeline: job_start (row, upload placement, enqueue by kind with the kind's time
limits) -> the one task (claim, runner, heartbeat, finish or fail, clean up) -> the sweep, which
also removes a dead job's upload (defect 11); and import progress that another connection can
read while the import is still writing (defect 11, PostgreSQL)."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import connection, connections
from django.template.loader import get_template
from django.test import Client
from django.utils import timezone

from benchmark.datasets import services as dataset_services
from benchmark.exceptions import ValidationFailed
from benchmark.jobs import kinds, services
from benchmark.jobs.tasks import job_task
from benchmark.jobs.uploads import upload_folder
from benchmark.models import Item, Job, JobStatus, Project
from tests.factories import JobFactory, ProjectFactory

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def test_kind() -> Iterator[dict[str, Any]]:
    """A kind whose runner does what the test says (``behaviour["run"]``)."""
    behaviour: dict[str, Any] = {}

    def runner(*, job: Job, progress: Any) -> dict[str, Any]:
        progress(progress=1, total=2, message="half way")
        return behaviour["run"](job)

    kinds.job_kind_register(
        kinds.JobKind(
            name="pipeline_test", runner=runner, action="view", upload_area="pipeline-test"
        )
    )
    yield behaviour
    kinds._KINDS.pop("pipeline_test", None)


@pytest.fixture
def capture(django_capture_on_commit_callbacks: Any) -> Any:
    return django_capture_on_commit_callbacks


def place_one_file(folder: Path) -> dict[str, Any]:
    folder.mkdir(parents=True)
    (folder / "upload.bin").write_bytes(b"x" * 1000)
    return {"path": str(folder / "upload.bin")}


# --------------------------------------------------------------------------- the registry


def test_every_kind_is_registered_with_a_runner_and_a_result_fragment() -> None:
    names = {k.name for k in kinds.job_kinds()}
    assert {
        "import",
        "model_call",
        "score_answers",
        "score_runs",
        "rescore_runs",
        "agreement",
    } <= names
    for kind in kinds.job_kinds():
        if kind.name == "pipeline_test":
            continue
        assert callable(kinds._resolve(kind.runner)), kind.name
        get_template(kind.result_template)  # raises when missing
    assert services.job_time_limit("model_call") == 31 * 60
    assert services.job_time_limit("import") == django_settings.CELERY_TASK_TIME_LIMIT


def test_one_celery_task_runs_every_kind() -> None:
    assert django_settings.CELERY_IMPORTS == ["benchmark.jobs.tasks"]
    assert job_task.acks_late is True


def test_no_view_creates_or_enqueues_a_job_itself() -> None:
    """Views call a service that calls job_start; they never write Job rows or enqueue."""
    pattern = re.compile(
        r"Job\.objects\.(create|update|bulk_create)|job_create\(|\.delay\(|apply_async|on_commit"
    )
    offenders = [
        str(path.relative_to(ROOT))
        for app in ("benchmark", "annotation", "review")
        for path in (ROOT / app).rglob("views.py")
        if pattern.search(path.read_text())
    ]
    assert offenders == []


# --------------------------------------------------------------------------- start and run


@pytest.mark.django_db
def test_job_start_places_uploads_and_enqueues_with_the_kinds_time_limits(
    project: Project,
    users: dict[str, Any],
    test_kind: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    sent: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(job_task, "apply_async", lambda args, **kw: sent.append((args, kw)))
    with django_capture_on_commit_callbacks(execute=True):
        job = services.job_start(
            kind="pipeline_test", user=users["admin"], project=project, uploads=place_one_file
        )
    folder = upload_folder("pipeline-test", job.pk)
    assert job.params["path"] == str(folder / "upload.bin") and folder.is_dir()
    assert job.status == JobStatus.QUEUED and job.message == "queued"
    limit = django_settings.CELERY_TASK_TIME_LIMIT
    assert sent == [((job.pk,), {"time_limit": limit, "soft_time_limit": limit - 60})]


@pytest.mark.django_db
def test_a_bad_upload_leaves_no_job_and_no_files(
    project: Project, users: dict[str, Any], test_kind: dict[str, Any], settings: Any
) -> None:
    def bad(folder: Path) -> dict[str, Any]:
        place_one_file(folder)
        raise ValidationFailed("upload.bin: not a dataset")

    with pytest.raises(ValidationFailed, match="not a dataset"):
        services.job_start(kind="pipeline_test", user=users["admin"], project=project, uploads=bad)
    assert not Job.objects.exists()
    assert list((Path(settings.MEDIA_ROOT) / "pipeline-test").iterdir()) == []


@pytest.mark.django_db
def test_the_task_runs_the_kind_records_progress_and_removes_the_upload(
    project: Project, users: dict[str, Any], test_kind: dict[str, Any], capture: Any
) -> None:
    test_kind["run"] = lambda job: {"read": Path(job.params["path"]).stat().st_size}
    with capture(execute=True):  # enqueued on commit; tasks run in-process in tests
        job = services.job_start(
            kind="pipeline_test", user=users["admin"], project=project, uploads=place_one_file
        )
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.result == {"read": 1000}
    assert (job.progress, job.total) == (2, 2) and job.heartbeat_at is not None
    assert not upload_folder("pipeline-test", job.pk).exists()
    job_task(job.pk)  # a repeated delivery does nothing
    assert Job.objects.get(pk=job.pk).result == {"read": 1000}


@pytest.mark.django_db
def test_a_domain_error_is_the_users_message(
    project: Project, users: dict[str, Any], test_kind: dict[str, Any], capture: Any
) -> None:
    def fail(job: Job) -> dict[str, Any]:
        raise ValidationFailed("runs.zip: run 0001 has no model_answer.txt")

    test_kind["run"] = fail
    with capture(execute=True):
        job = services.job_start(
            kind="pipeline_test", user=users["admin"], project=project, uploads=place_one_file
        )
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error == "runs.zip: run 0001 has no model_answer.txt"
    assert not upload_folder("pipeline-test", job.pk).exists()


@pytest.mark.django_db
def test_a_soft_time_limit_in_a_worker_says_so(
    project: Project, users: dict[str, Any], test_kind: dict[str, Any], capture: Any
) -> None:
    # A worker has Celery loaded; job_run names its soft time limit without importing Celery
    # itself (the command line never loads it).
    from celery.exceptions import SoftTimeLimitExceeded

    def stop(job: Job) -> dict[str, Any]:
        raise SoftTimeLimitExceeded()

    test_kind["run"] = stop
    with capture(execute=True):
        job = services.job_start(kind="pipeline_test", user=users["admin"], project=project)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error.startswith("The job ran into its 60-minute time limit and was stopped")


@pytest.mark.django_db
def test_an_unexpected_error_is_logged_and_the_user_gets_a_generic_message(
    project: Project,
    users: dict[str, Any],
    test_kind: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
    capture: Any,
) -> None:
    def crash(job: Job) -> dict[str, Any]:
        raise KeyError("/srv/secret/path")

    test_kind["run"] = crash
    with caplog.at_level(logging.ERROR, logger="benchmark.jobs.services"), capture(execute=True):
        job = services.job_start(
            kind="pipeline_test", user=users["admin"], project=project, uploads=place_one_file
        )
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "unexpected error (KeyError)" in job.error and f"job #{job.pk}" in job.error
    assert "/srv/secret" not in job.error
    record = next(r for r in caplog.records if r.name == "benchmark.jobs.services")
    assert record.exc_info is not None and "/srv/secret/path" in str(record.exc_info[1])
    assert not upload_folder("pipeline-test", job.pk).exists()


# --------------------------------------------------------------------------- the sweep


def _dead(job: Job, status: str = JobStatus.RUNNING, hours: int = 2) -> None:
    then = timezone.now() - timedelta(hours=hours)
    Job.objects.filter(pk=job.pk).update(
        status=status, started_at=then, heartbeat_at=then, created_at=then
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kind", "area"),
    [("import", "imports"), ("score_answers", "answers-upload"), ("score_runs", "runs-upload")],
)
def test_the_sweep_removes_the_upload_of_a_job_whose_worker_died(
    project: Project, kind: str, area: str
) -> None:
    job = JobFactory(kind=kind, project=project)
    folder = upload_folder(area, job.pk)
    place_one_file(folder)
    _dead(job)
    assert services.jobs_sweep() == [job.pk]
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.worker_lost
    assert not folder.exists()


@pytest.mark.django_db
def test_a_poll_of_a_dead_import_removes_its_upload(
    project: Project, users: dict[str, Any], clients: dict[str, Client], settings: Any
) -> None:
    job = JobFactory(kind="import", project=project, created_by=users["admin"])
    folder = upload_folder("imports", job.pk)
    place_one_file(folder)
    other = upload_folder("imports", job.pk + 1000)  # another job's: left alone
    place_one_file(other)
    _dead(job, status=JobStatus.QUEUED)  # queued, and no worker ever started it
    settings.CELERY_TASK_ALWAYS_EAGER = True
    poll = clients["admin"].get(
        f"/jobs/{job.pk}/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET=f"job-{job.pk}"
    )
    assert poll.status_code == 286 and "No worker started this job" in poll.content.decode()
    assert not folder.exists() and other.exists()


# --------------------------------------------------------------------------- import progress


def _atp_rows(n: int) -> str:
    return "".join(
        json.dumps(
            {
                "trace_id": f"p{i}",
                "query": f"question {i}",
                "image_query": None,
                "doc": [],
                "images": [],
                "gt": "An answer.",
                "category": "Academic",
                "intent": "Framework",
            }
        )
        + "\n"
        for i in range(n)
    )


@pytest.mark.django_db(transaction=True)
def test_import_progress_is_readable_from_another_connection_while_it_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The poll (another connection) sees the write phase advance, and no item yet: the
    import stays all or nothing. SQLite takes one writer at a time, so there the write
    phase's progress shows when it commits (``JobProgress``'s docstring)."""
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers: proven on PostgreSQL")
    project = ProjectFactory(name="progress")
    data = tmp_path / "data.jsonl"
    data.write_text(_atp_rows(1200))  # written in batches of 500
    job = services.job_create(
        kind="import", project=project, params={"project_id": project.pk, "path": str(data)}
    )
    seen: list[tuple[int, str, int]] = []
    insert = dataset_services._bulk_insert_items

    def insert_and_look(*args: Any, **kwargs: Any) -> Any:
        out = insert(*args, **kwargs)
        poller = connections.create_connection("default")
        try:
            with poller.cursor() as cursor:
                cursor.execute(
                    "SELECT progress, message FROM benchmark_job WHERE id = %s", [job.pk]
                )
                progress, message = cursor.fetchone()
                cursor.execute(
                    "SELECT count(*) FROM benchmark_item WHERE project_id = %s", [project.pk]
                )
                seen.append((progress, message, cursor.fetchone()[0]))
        finally:
            poller.close()
        return out

    monkeypatch.setattr(dataset_services, "_bulk_insert_items", insert_and_look)
    job_task(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert Item.objects.filter(project=project).count() == 1200
    assert [items for _, _, items in seen] == [0] * len(seen)  # nothing visible mid-import
    assert max(progress for progress, _, _ in seen) >= 500, seen
    assert all(message == "writing" for _, message, _ in seen)
