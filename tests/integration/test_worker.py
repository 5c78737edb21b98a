"""A real Celery worker, with Redis as the broker, runs an import job against PostgreSQL."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.db import connection

from benchmark import services
from benchmark.celery import app as celery_app
from benchmark.models import Job, JobStatus, Project, Toolset
from benchmark.tasks import dataset_import_task

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
BROKER = os.environ.get("BENCHWRIGHT_TEST_BROKER", "redis://127.0.0.1:6379/14")


def _require(reason: str) -> None:
    if os.environ.get("BENCHWRIGHT_REQUIRE_SERVICES"):
        pytest.fail(f"{reason} (required in CI)")
    pytest.skip(reason)


def _redis_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _db_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def test_import_job_runs_on_a_real_worker(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    if connection.vendor != "postgresql":
        pytest.skip("the worker shares the test database only on PostgreSQL")
    if not _redis_up():
        _require("Redis is not answering on 127.0.0.1:6379")

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

    queue = f"bw-test-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DATABASE_URL": _db_url(),
        "CELERY_BROKER_URL": BROKER,
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
    }
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "benchmark",
            "worker",
            "-P",
            "solo",
            "-Q",
            queue,
            "-l",
            "warning",
            "--without-gossip",
            "--without-mingle",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        eager = celery_app.conf.task_always_eager
        celery_app.conf.task_always_eager = False
        try:
            with celery_app.connection_for_write(url=BROKER) as conn:
                dataset_import_task.apply_async(args=[job.pk], connection=conn, queue=queue)
        finally:
            celery_app.conf.task_always_eager = eager
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            job.refresh_from_db()
            if job.done or worker.poll() is not None:
                break
            time.sleep(0.2)
    finally:
        worker.terminate()
        try:
            output = worker.communicate(timeout=20)[0]
        except subprocess.TimeoutExpired:
            worker.kill()
            output = worker.communicate()[0]

    assert job.status == JobStatus.SUCCEEDED, (job.status, job.error, output[-2000:])
    assert job.result["items_created"] == 3
    assert sorted(project.items.values_list("external_id", flat=True)) == ["w0", "w1", "w2"]
    assert Job.objects.get(pk=job.pk).progress == 3
