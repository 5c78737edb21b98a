"""Scale-out on one machine: two web processes (gunicorn, different ports) and two Celery
workers share one PostgreSQL database, one Redis broker and one store for media. An upload
through web A is imported by whichever worker takes it, its progress is polled through web B
(the session made on A is valid on B: sessions live in the database) and B serves its images.

The shared store is a shared MEDIA_ROOT folder (what processes on one machine share) or, once
the app stores media through django-storages S3 (``benchmark.storage`` exists, or
BENCHWRIGHT_TEST_S3=1), a moto S3 server whose bucket all four processes use, each with a
MEDIA_ROOT of its own as separate machines would have: the one switch is the
``shared_store`` fixture.

The webs run gunicorn as ``bin/serve web`` does, without its collectstatic (about a minute of
CPU to compress every static file), so the test touches no page that names a static file: it
logs in and uploads by POST (Django accepts a CSRF secret the client chose, sent as cookie and
field) and reads JSON and image bytes."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import re
import secrets
import signal
import socket
import string
import subprocess
import sys
import time
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
from django.conf import settings as django_settings

from benchmark.jobs.tasks import job_task
from tests.factories import png_bytes
from tests.integration.conftest import redis_turn

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("BENCHWRIGHT_SCALE_OUT_BROKER", "redis://127.0.0.1:6379/9")
TIMEOUT = 120  # seconds for the processes to start, and again for the import to finish
COMMAND_TIMEOUT = 600  # seconds for a one-off command (migrate on a busy machine)
PASSWORD = "scale-out-password-1"


def _require(reason: str) -> None:
    if os.environ.get("BENCHWRIGHT_REQUIRE_SERVICES"):
        pytest.fail(f"{reason} (required in CI)")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


# --------------------------------------------------------------------------- services


@pytest.fixture
def scale_db() -> Iterator[str]:
    """A fresh PostgreSQL database on the test database's server (dropped afterwards); its URL."""
    db = django_settings.DATABASES["default"]
    if "postgresql" not in db["ENGINE"]:
        pytest.skip("scale-out needs PostgreSQL: it runs in the PostgreSQL pass of bin/test")
    import psycopg

    host: str = db.get("HOST") or "127.0.0.1"
    port = int(db.get("PORT") or 5432)
    user: str = db.get("USER") or "postgres"
    password: str = db.get("PASSWORD") or ""
    name = f"bw_scale_{uuid.uuid4().hex[:10]}"
    try:
        admin = psycopg.connect(
            host=host, port=port, user=user, password=password or None, dbname="postgres",
            autocommit=True, connect_timeout=5,
        )  # fmt: skip
    except psycopg.Error as exc:
        _require(f"PostgreSQL is not answering at {host}:{port}: {exc}")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            auth = user + (f":{password}" if password else "")
            yield f"postgres://{auth}@{host}:{port}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def broker() -> Iterator[str]:
    """The Redis database the processes share as broker, emptied first; held for this test
    alone on the machine (``redis_turn``: another suite run beside this one waits)."""
    import redis

    with redis_turn("the scale-out test"):
        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
        try:
            client.flushdb()
        except redis.RedisError as exc:
            _require(f"Redis is not answering at {REDIS_URL}: {exc}")
        finally:
            client.close()
        yield REDIS_URL


def _s3_supported() -> bool:
    return bool(os.environ.get("BENCHWRIGHT_TEST_S3")) or (
        importlib.util.find_spec("benchmark.storage") is not None
    )


@dataclass
class Store:
    """What the processes share for media: ``env`` for each of them, ``media`` the folder
    MEDIA_ROOT is in (one per process when the bucket is what they share); ``objects()`` lists
    the object store's keys (None for a plain folder)."""

    env: dict[str, str]
    media: Path
    bucket: str = ""
    endpoint: str = ""

    def env_for(self, name: str) -> dict[str, str]:
        media = self.media / name if self.bucket else self.media
        media.mkdir(exist_ok=True)
        return {**self.env, "MEDIA_ROOT": str(media)}

    def objects(self) -> list[str] | None:
        if not self.bucket:
            return None
        s3 = _s3_client(self.endpoint)
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket)
        return [obj["Key"] for page in pages for obj in page.get("Contents", [])]


def _s3_client(endpoint: str) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )


@pytest.fixture
def shared_store(tmp_path: Path) -> Iterator[Store]:
    """The one switch: a shared MEDIA_ROOT folder, or an S3 bucket on a moto server when the
    app stores media through django-storages (MEDIA_ROOT is then each process's scratch)."""
    media = tmp_path / "media"
    media.mkdir()
    env: dict[str, str] = {}
    if not _s3_supported():
        yield Store(env, media)
        return
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        bucket = f"bw-scale-{uuid.uuid4().hex[:8]}"
        _s3_client(endpoint).create_bucket(Bucket=bucket)
        env |= {
            "AWS_STORAGE_BUCKET_NAME": bucket,
            "AWS_S3_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_S3_REGION_NAME": "us-east-1",
        }
        yield Store(env, media, bucket=bucket, endpoint=endpoint)
    finally:
        server.stop()


# --------------------------------------------------------------------------- processes


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    port: int = 0

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self) -> None:
        """Stops the whole process group (gunicorn's and Celery's children too)."""
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            if self.popen.poll() is not None:
                break
            try:
                os.killpg(self.popen.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.popen.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
        try:  # children left behind by a parent that exited first
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@dataclass
class Cluster:
    env: dict[str, str]
    store: Store
    logs: Path
    processes: list[Process] = field(default_factory=list)

    def run(self, name: str, args: list[str]) -> subprocess.CompletedProcess[str]:
        """A one-off command (migrate, a set-up script) in the shared environment."""
        return subprocess.run(
            args, cwd=ROOT, env=self.env | self.store.env_for(name), capture_output=True,
            text=True, timeout=COMMAND_TIMEOUT,
        )  # fmt: skip

    def start(self, name: str, args: list[str], port: int = 0) -> Process:
        log = self.logs / f"{name}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                args, cwd=ROOT, env=self.env | self.store.env_for(name), stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        process = Process(name, popen, log, port)
        self.processes.append(process)
        return process

    def web(self, name: str) -> Process:
        """gunicorn as ``bin/serve web`` starts it, one worker of two threads."""
        port = _free_port()
        return self.start(
            name,
            [sys.executable, "-m", "gunicorn", "benchmark.wsgi:application",
             "--bind", f"127.0.0.1:{port}", "--workers", "1", "--threads", "2",
             "--worker-class", "gthread", "--timeout", "120",
             "--forwarded-allow-ips", "127.0.0.1", "--access-logfile", "-"],
            port,
        )  # fmt: skip

    def worker(self, name: str) -> Process:
        """A Celery worker as ``bin/serve worker`` starts it, named, one process."""
        return self.start(
            name,
            [sys.executable, "-m", "celery", "-A", "benchmark", "worker", "-l", "info",
             "--concurrency", "1", "-n", f"{name}@%h", "--without-gossip", "--without-mingle"],
        )  # fmt: skip

    def report(self) -> str:
        return "\n".join(
            f"----- {p.name} (exit {p.popen.poll()}) -----\n{p.output()[-3000:]}"
            for p in self.processes
        )

    def fail(self, message: str) -> None:
        pytest.fail(f"{message}\n{self.report()}")

    def stop(self) -> None:
        for process in self.processes:
            process.stop()


@pytest.fixture
def cluster(scale_db: str, broker: str, shared_store: Store, tmp_path: Path) -> Iterator[Cluster]:
    """The environment every process shares (database, broker, store, secret key); processes
    started through it are stopped after the test."""
    alphabet = string.ascii_letters + string.digits
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("BENCHWRIGHT_MODEL_", "AWS_"))},
        "DJANGO_SETTINGS_MODULE": "benchmark.settings",
        "DEBUG": "false",
        "SECRET_KEY": "".join(secrets.choice(alphabet) for _ in range(60)),
        "DATABASE_URL": scale_db,
        "CELERY_BROKER_URL": broker,
        "PYTHONUNBUFFERED": "1",
    }
    logs = tmp_path / "logs"
    logs.mkdir()
    cluster = Cluster(env, shared_store, logs)
    try:
        yield cluster
    finally:
        cluster.stop()


SETUP = """
from django.contrib.auth import get_user_model
from benchmark.models import Membership, Project, Role, Toolset
user = get_user_model().objects.create_user("scale-admin", password={password!r})
toolset = Toolset.objects.create(name="scale-out")
project = Project.objects.create(
    name="Scale-out", kind="interleaved", tag_syntax="atp", data_format="atp", toolset=toolset
)
Membership.objects.create(project=project, user=user, role=Role.ADMIN)
print(project.pk)
"""


def _atp_zip(images: dict[str, bytes]) -> bytes:
    rows = [
        {
            "trace_id": Path(name).stem,
            "query": f"What does picture {i} show?",
            "image_query": None,
            "doc": [{"text": f"Picture {i}.", "images": [name]}],
            "images": [name],
            "gt": f"It shows colour {i}.",
            "category": "Manual",
            "intent": "Function",
        }
        for i, name in enumerate(images)
    ]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("atp/data.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
        for name, data in images.items():
            zf.writestr(f"atp/{name}", data)
    return buf.getvalue()


# --------------------------------------------------------------------------- the test


def test_upload_on_web_a_is_imported_by_a_worker_and_served_by_web_b(
    cluster: Cluster, shared_store: Store
) -> None:
    started = time.monotonic()
    # The processes start while the deploy's one-off steps run: neither needs the other.
    workers = [cluster.worker("worker1"), cluster.worker("worker2")]
    web_a, web_b = cluster.web("web-a"), cluster.web("web-b")
    migrate = cluster.run("migrate", [sys.executable, "manage.py", "migrate", "--noinput"])
    if migrate.returncode:
        cluster.fail(f"migrate failed:\n{migrate.stdout}\n{migrate.stderr}")
    setup = cluster.run(
        "setup", [sys.executable, "manage.py", "shell", "-c", SETUP.format(password=PASSWORD)]
    )
    if setup.returncode:
        cluster.fail(f"setting up the project failed:\n{setup.stderr}")
    project_id = int(setup.stdout.split()[-1])

    deadline = started + TIMEOUT
    waiting = [*workers, web_a, web_b]
    while waiting:
        for p in [p for p in waiting if p.popen.poll() is not None]:
            cluster.fail(f"{p.name} stopped while starting")
        waiting = [
            p for p in waiting if not (_answers(p.port) if p.port else " ready." in p.output())
        ]
        if waiting and time.monotonic() > deadline:
            cluster.fail(f"not ready after {TIMEOUT} s: {', '.join(p.name for p in waiting)}")
        time.sleep(0.3)
    ready = time.monotonic()
    a = f"http://127.0.0.1:{web_a.port}"
    b = f"http://127.0.0.1:{web_b.port}"

    # DEBUG is off, so the cookies are Secure: this plain-http client sends them itself.
    csrf = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))
    login = requests.post(
        f"{a}/accounts/login/",
        data={"username": "scale-admin", "password": PASSWORD, "csrfmiddlewaretoken": csrf},
        cookies={"csrftoken": csrf},
        allow_redirects=False,
        timeout=30,
    )
    if login.status_code != 302 or "sessionid" not in login.cookies:
        cluster.fail(f"logging in on web A answered {login.status_code}")
    cookies = {"csrftoken": csrf, "sessionid": login.cookies.get("sessionid") or ""}

    images = {f"images/scale_{i}.png": png_bytes(700 + i) for i in range(2)}
    upload = requests.post(
        f"{a}/projects/{project_id}/datasets/import/",
        data={"csrfmiddlewaretoken": csrf},
        files={"file": ("atp.zip", _atp_zip(images), "application/zip")},
        cookies=cookies,
        allow_redirects=False,
        timeout=60,
    )
    if upload.status_code != 302 or not upload.headers["Location"].startswith("/jobs/"):
        cluster.fail(f"the upload on web A answered {upload.status_code}: {upload.text[:500]}")
    job_id = int(upload.headers["Location"].rstrip("/").rsplit("/", 1)[-1])
    uploaded = time.monotonic()

    # Progress through web B, with the session web A made.
    seen: list[str] = []
    job: dict[str, Any] = {}
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        poll = requests.get(f"{b}/api/jobs/{job_id}/", cookies=cookies, timeout=30)
        if poll.status_code != 200:
            cluster.fail(f"polling job {job_id} on web B answered {poll.status_code}")
        job = poll.json()
        if not seen or seen[-1] != job["status"]:
            seen.append(job["status"])
        if job["done"]:
            finished = time.monotonic()
            break
        time.sleep(0.3)
    else:
        cluster.fail(f"job {job_id} not done after {TIMEOUT} s (statuses seen: {seen}): {job}")
    assert job["status"] == "succeeded", (job, cluster.report())
    assert job["result"]["items_created"] == 2, job
    assert job["result"]["images_stored"] == 2, job

    # Exactly one of the two workers ran it.
    ran = [w for w in workers if f"{job_task.name}[" in w.output()]
    assert len(ran) == 1, ([w.name for w in ran], cluster.report())
    assert re.search(rf"{re.escape(job_task.name)}\[[-0-9a-f]+\] succeeded", ran[0].output()), (
        cluster.report()
    )

    # Web B serves the imported images, byte for byte the uploaded ones.
    listing = requests.get(f"{b}/api/images/", cookies=cookies, timeout=30)
    assert listing.status_code == 200, listing.text[:500]
    served = {row["sha256"]: row for row in listing.json()["results"]}
    for name, data in images.items():
        sha = hashlib.sha256(data).hexdigest()
        assert sha in served, (name, sorted(served))
        image = requests.get(f"{b}/images/{sha}/", cookies=cookies, timeout=30)
        assert image.status_code == 200, (name, image.status_code)
        assert image.content == data, name

    keys = shared_store.objects()
    if keys is not None:  # the images live in the bucket, not only in a folder
        assert any(hashlib.sha256(d).hexdigest() in k for d in images.values() for k in keys), keys

    print(
        f"migrated, 4 processes ready in {ready - started:.1f} s; job {job_id} ({' -> '.join(seen)}) done"
        f" {finished - uploaded:.1f} s after the upload on web A, ran on {ran[0].name};"
        f" polled and served by web B ({'S3 bucket' if keys is not None else 'shared folder'})"
    )
