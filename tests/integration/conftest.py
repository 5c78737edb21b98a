"""A real Celery worker for integration tests: Redis as the broker, the PostgreSQL test
database shared with the worker process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from benchmark.celery import app as celery_app
from benchmark.models import Job

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


#: Where test runs on this machine take turns for the Redis databases they empty: a test that
#: empties one (``flushdb``) holds this lock while it runs, so two suites run side by side (say
#: SQLite and PostgreSQL) never empty each other's database mid-test. A run that dies leaves the
#: lock to expire.
TURN_LOCK_URL = os.environ.get("BENCHWRIGHT_TEST_LOCK_REDIS", "redis://127.0.0.1:6379/15")
TURN_SECONDS = 900


@contextmanager
def redis_turn(what: str) -> Iterator[None]:
    """Holds the machine-wide turn for the Redis databases tests empty (see TURN_LOCK_URL),
    waiting for another run's test to finish with them; ``what`` names the test in the error
    when the wait is longer than TURN_SECONDS."""
    import redis

    client = redis.Redis.from_url(TURN_LOCK_URL, socket_connect_timeout=2)
    lock = client.lock("benchwright-tests:redis-turn", timeout=TURN_SECONDS)
    try:
        if not lock.acquire(blocking=True, blocking_timeout=TURN_SECONDS):
            pytest.fail(f"{what}: another test run held the Redis databases for {TURN_SECONDS} s")
    except redis.RedisError as exc:
        client.close()
        _require(f"Redis is not answering at {TURN_LOCK_URL}: {exc}")
    try:
        yield
    finally:
        try:
            lock.release()
        except redis.exceptions.LockError:
            pass  # expired while held: the other run has it now
        client.close()


def _db_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


class Worker:
    """A worker subprocess on its own queue; ``run(task, job)`` enqueues on the real broker and
    waits (up to 90 s) until the job is done or the worker exits, then returns its output."""

    def __init__(self, settings: Any) -> None:
        self.queue = f"bw-test-{uuid.uuid4().hex[:8]}"
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("BENCHWRIGHT_MODEL_")},
            "DATABASE_URL": _db_url(),
            "CELERY_BROKER_URL": BROKER,
            "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "benchmark", "worker", "-P", "solo",
             "-Q", self.queue, "-l", "warning", "--without-gossip", "--without-mingle"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self.output = ""

    def run(self, task: Any, job: Job) -> Job:
        eager = celery_app.conf.task_always_eager
        celery_app.conf.task_always_eager = False
        try:
            with celery_app.connection_for_write(url=BROKER) as conn:
                task.apply_async(args=[job.pk], connection=conn, queue=self.queue)
        finally:
            celery_app.conf.task_always_eager = eager
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            job.refresh_from_db()
            if job.done or self.process.poll() is not None:
                break
            time.sleep(0.2)
        return job

    def stop(self) -> None:
        if self.process.returncode is not None and self.output:
            return  # already stopped
        self.process.terminate()
        try:
            self.output = self.process.communicate(timeout=20)[0]
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.output = self.process.communicate()[0]
        self.output = self.output or "(no output)"


@pytest.fixture
def celery_worker_process(settings: Any) -> Iterator[Callable[[], Worker]]:
    """Starts a real worker (PostgreSQL and Redis required); stopped after the test."""
    if connection.vendor != "postgresql":
        pytest.skip("the worker shares the test database only on PostgreSQL")
    if not _redis_up():
        _require("Redis is not answering on 127.0.0.1:6379")
    workers: list[Worker] = []

    def start() -> Worker:
        workers.append(Worker(settings))
        return workers[-1]

    yield start
    for worker in workers:
        worker.stop()
