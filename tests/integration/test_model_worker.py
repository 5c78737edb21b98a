"""A real Celery worker, with Redis as the broker, runs a model-call job against PostgreSQL
and a real OpenAI-compatible server (in this test process, reached over 127.0.0.1)."""

from __future__ import annotations

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
from benchmark.llm import services as llm
from benchmark.llm.tasks import model_call_task
from benchmark.models import JobStatus, ModelCall, Project, Toolset
from tests.benchmark.llm.fake_server import FakeModelServer

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


def test_model_call_job_runs_on_a_real_worker(settings) -> None:  # type: ignore[no-untyped-def]
    if connection.vendor != "postgresql":
        pytest.skip("the worker shares the test database only on PostgreSQL")
    if not _redis_up():
        _require("Redis is not answering on 127.0.0.1:6379")

    server = FakeModelServer(answer="A worker answered.").start()
    toolset = Toolset.objects.create(name="model-worker-test")
    project = Project.objects.create(
        name="model worker",
        kind="interleaved",
        tag_syntax="atp",
        data_format="atp",
        toolset=toolset,
        # The worker reads the endpoint from the project, not from its environment.
        settings={"model": {"base_url": server.url, "model": "worker-vl", "backoff_base": 0}},
    )
    server.fail_next(500)  # the worker retries it
    # Created without its on-commit enqueue (eager here); the test enqueues on the real broker.
    job = services.job_create(
        kind=llm.MODEL_CALL_KIND,
        project=project,
        total=1,
        params={"project_id": project.pk, "item_id": None, "purpose": "ask", "prompt": "Hi?"},
    )

    queue = f"bw-test-{uuid.uuid4().hex[:8]}"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("BENCHWRIGHT_MODEL_")},
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
                model_call_task.apply_async(args=[job.pk], connection=conn, queue=queue)
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
        server.stop()

    assert job.status == JobStatus.SUCCEEDED, (job.status, job.error, output[-2000:])
    assert job.result["answer"] == "A worker answered."
    assert job.result["attempts"] == 2
    call = ModelCall.objects.get(job=job)
    assert (call.model, call.answer, call.prompt_tokens) == ("worker-vl", "A worker answered.", 17)
    assert [r.body["model"] for r in server.requests] == ["worker-vl", "worker-vl"]
