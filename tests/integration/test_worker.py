"""A real Celery worker, with Redis as the broker, runs an import job against PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark.jobs import services
from benchmark.jobs.tasks import job_task
from benchmark.models import Job, JobStatus, Project, Toolset

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_import_job_runs_on_a_real_worker(tmp_path: Path, celery_worker_process) -> None:  # type: ignore[no-untyped-def]
    worker = celery_worker_process()

    data = tmp_path / "data.jsonl"
    rows = [
        {
            "trace_id": f"w{i}",
            "query": f"question {i}",
            "image_query": None,
            "doc": [],
            "images": [],
            "gt": "An answer.",
            "category": "Academic",
            "intent": "Framework",
        }
        for i in range(3)
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    toolset = Toolset.objects.create(name="atp-worker-test")
    project = Project.objects.create(
        name="worker", kind="interleaved", tag_syntax="atp", data_format="atp", toolset=toolset
    )
    job = services.job_create(
        kind="import", project=project, params={"project_id": project.pk, "path": str(data)}
    )

    job = worker.run(job_task, job)
    worker.stop()

    assert job.status == JobStatus.SUCCEEDED, (job.status, job.error, worker.output[-2000:])
    assert job.result["items_created"] == 3
    assert sorted(project.items.values_list("external_id", flat=True)) == ["w0", "w1", "w2"]
    assert Job.objects.get(pk=job.pk).progress == 3
