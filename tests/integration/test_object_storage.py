"""Media on S3-compatible object storage (django-storages' S3Storage), end to end.

The S3 server is moto's in-process server mode (``moto.server.ThreadedMotoServer``), started
by the test on a free port on 127.0.0.1: no network beyond localhost, no credentials. It
speaks the S3 HTTP API, so boto3 and django-storages talk to it exactly as they would to
MinIO, Ceph or AWS S3. The test overrides STORAGES["default"] the way settings.py does when
AWS_STORAGE_BUCKET_NAME is set (with an AWS_LOCATION prefix), then: imports a zipped dataset
with images through the web import job, downloaded by the "worker" into a different
MEDIA_ROOT (as on another machine); serves the images and a derived crop from the bucket
through the permission-checked image views; writes a release, verifies it (and catches a
tampered object) and downloads it as a .zip, all read back from the bucket."""

from __future__ import annotations

import io
import json
import logging
import socket
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import FileSystemStorage, default_storage
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from benchmark.exceptions import ValidationFailed
from benchmark.jobs import kinds
from benchmark.jobs import services as job_services
from benchmark.models import Image, ItemStatus, Job, JobStatus, Project
from benchmark.storage import storage_files, storage_is_local
from review.releases.services import release_create
from tests.factories import ItemFactory, png_bytes
from tests.zips import zip_bytes

moto_server = pytest.importorskip("moto.server", reason="moto[server] is a dev dependency")
boto3 = pytest.importorskip("boto3")

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

BUCKET = "benchwright-test"
PREFIX = "bw"  # AWS_LOCATION: every object lives under bw/


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server in a thread of this process, on localhost only."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's request log
    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def bucket(s3_endpoint: str, settings: Any) -> Any:
    """A fresh bucket, and the default storage pointed at it (as settings.py does)."""
    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    existing = client.list_objects_v2(Bucket=BUCKET) if _exists(client) else None
    if existing is None:
        client.create_bucket(Bucket=BUCKET)
    else:
        for obj in existing.get("Contents", []):
            client.delete_object(Bucket=BUCKET, Key=obj["Key"])
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": BUCKET,
                "endpoint_url": s3_endpoint,
                "region_name": "us-east-1",
                "access_key": "test",
                "secret_key": "test",
                "location": PREFIX,
                "querystring_auth": False,
                "default_acl": None,
                "file_overwrite": True,
            },
        },
    }
    assert not isinstance(default_storage, FileSystemStorage)
    assert not storage_is_local()
    return client


def _exists(client: Any) -> bool:
    return any(b["Name"] == BUCKET for b in client.list_buckets().get("Buckets", []))


def keys(client: Any, under: str = "") -> list[str]:
    """Every object key in the bucket below ``PREFIX/under``."""
    found: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(
        Bucket=BUCKET, Prefix=f"{PREFIX}/{under}"
    ):
        found.extend(o["Key"] for o in page.get("Contents", []))
    return sorted(found)


def body(client: Any, key: str) -> bytes:
    return bytes(client.get_object(Bucket=BUCKET, Key=key)["Body"].read())


def atp_row(i: int) -> dict[str, Any]:
    image = f"images/web_{i:04d}_0.png"
    return {
        "trace_id": f"web_{i:04d}",
        "query": f"How does gadget {i} work?",
        "image_query": None,
        "doc": [{"text": f"Gadget {i} manual.", "images": [image]}],
        "images": [image],
        "gt": f"Gadget {i} works like this.",
        "category": "Manual",
        "intent": "Function",
    }


def test_import_job_images_and_crops_live_in_the_bucket(
    project: Project,
    users: dict[str, Any],
    clients: dict[str, Client],
    bucket: Any,
    settings: Any,
    tmp_path: Path,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = zip_bytes(
        {
            "atp/data.jsonl": "".join(json.dumps(atp_row(i)) + "\n" for i in (1, 2)).encode(),
            "atp/images/web_0001_0.png": png_bytes(101, (64, 48)),
            "atp/images/web_0002_0.png": png_bytes(102, (64, 48)),
        }
    )
    seen_by_worker: list[str] = []
    fetch = job_services.storage_get_tree

    def spying_fetch(prefix: str, local: Path) -> Path:
        seen_by_worker.extend(storage_files(prefix))
        return fetch(prefix, local)

    monkeypatch.setattr(job_services, "storage_get_tree", spying_fetch)
    web_media = Path(settings.MEDIA_ROOT)
    upload = io.BytesIO(data)
    upload.name = "atp.zip"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = clients["admin"].post(
            f"/projects/{project.pk}/datasets/import/", {"file": upload}
        )
    assert response.status_code == 302
    job = Job.objects.get(project=project)
    # The web process uploaded the job's files to the bucket and kept no local copy.
    assert keys(bucket, f"imports/{job.pk}/") == [
        f"{PREFIX}/imports/{job.pk}/atp/data.jsonl",
        f"{PREFIX}/imports/{job.pk}/atp/images/web_0001_0.png",
        f"{PREFIX}/imports/{job.pk}/atp/images/web_0002_0.png",
    ]
    assert not (web_media / "imports" / str(job.pk)).exists()

    # The worker runs on "another machine": its own local folder.
    settings.MEDIA_ROOT = tmp_path / "worker-media"
    for callback in callbacks:
        callback()
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.result["images_stored"] == 2
    assert "atp/data.jsonl" in seen_by_worker
    # Once the job ended its uploads are gone from the bucket and from the worker's disk.
    assert keys(bucket, "imports/") == []
    assert not (tmp_path / "worker-media" / "imports" / str(job.pk)).exists()

    item = project.items.get(external_id="web_0001")
    image = Image.objects.get(sha256=item.image_refs[0]["sha256"])
    assert f"{PREFIX}/{image.file.name}" in keys(bucket, "")
    assert f"{PREFIX}/{image.thumbnail.name}" in keys(bucket, "")
    served = clients["annotator"].get(f"/images/{image.sha256}/")
    assert served.status_code == 200 and served["Content-Type"] == "image/png"
    assert b"".join(served.streaming_content) == png_bytes(101, (64, 48))
    thumb = clients["annotator"].get(f"/images/{image.sha256}/thumb/")
    assert b"".join(thumb.streaming_content) == body(bucket, f"{PREFIX}/{image.thumbnail.name}")
    assert clients["outsider"].get(f"/images/{image.sha256}/").status_code == 404

    # A derived crop is stored in the bucket and served from it.
    recipe = {
        "version": 1,
        "source_sha256": image.sha256,
        "steps": [{"op": "crop", "params": {"bbox_2d": [0, 0, 500, 500]}}],
    }
    derived = clients["annotator"].post(
        f"/projects/{project.pk}/images/derive/",
        json.dumps(recipe),
        content_type="application/json",
    )
    assert derived.status_code == 200, derived.content
    crop = Image.objects.get(sha256=derived.json()["sha256"])
    assert (crop.width, crop.height) == (32, 24) and crop.source == image
    stored = body(bucket, f"{PREFIX}/{crop.file.name}")
    served = clients["annotator"].get(derived.json()["url"])
    assert b"".join(served.streaming_content) == stored
    assert not (tmp_path / "worker-media" / crop.file.name).exists()  # nothing on local disk

    # A release of these items carries their images, copied out of the bucket into it.
    release = release_create(project=project, user=users["admin"], name="Imgs", status=None)
    [copied] = [k for k in keys(bucket, release.path) if k.endswith("/web_0001_0.png")]
    assert body(bucket, copied) == png_bytes(101, (64, 48))


def test_release_written_verified_and_downloaded_from_the_bucket(
    project: Project, users: dict[str, Any], clients: dict[str, Client], bucket: Any
) -> None:
    for category in ("Academic", "Travel"):
        ItemFactory(project=project, status=ItemStatus.VERIFIED, category=category)
    release = release_create(project=project, user=users["admin"], name="On S3")
    assert release.path == f"releases/{project.pk}/1"  # a storage prefix, not a local folder
    stored = keys(bucket, f"releases/{project.pk}/1/")
    names = {k.removeprefix(f"{PREFIX}/releases/{project.pk}/1/") for k in stored}
    assert {"manifest.json", "provenance.jsonl", "README.md"} <= names
    assert names - {"manifest.json"} == {f["path"] for f in release.manifest["files"]}

    kwargs = {"project_id": project.pk, "pk": release.pk}
    verify = reverse("review:release_verify", kwargs=kwargs)
    assert "data-verify-ok" in clients["reviewer"].post(verify).content.decode()

    download = clients["reviewer"].get(reverse("review:release_download", kwargs=kwargs))
    assert download.status_code == 200
    archive = zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content)))
    readme_key = f"{PREFIX}/releases/{project.pk}/1/README.md"
    [readme] = [n for n in archive.namelist() if n.endswith("/README.md")]
    assert archive.read(readme) == body(bucket, readme_key)
    assert len(archive.namelist()) == len(stored)

    bucket.put_object(Bucket=BUCKET, Key=readme_key, Body=b"tampered")
    failed = clients["reviewer"].post(verify).content.decode()
    assert "README.md: size" in failed and "data-verify-failed" in failed

    # A second release gets the next prefix; the first one's objects are untouched.
    ItemFactory(project=project, status=ItemStatus.VERIFIED)
    second = release_create(project=project, user=users["admin"], name="Second")
    assert second.path == f"releases/{project.pk}/2" and second.item_count == 3
    assert body(bucket, readme_key) == b"tampered"


@pytest.fixture
def folder_kind() -> Iterator[dict[str, Any]]:
    """A kind taking uploads whose runner reads every file its params name (as the answers
    and run-folder scoring jobs do: lists of [name, path] pairs and a root folder)."""
    seen: dict[str, Any] = {}

    def runner(*, job: Job, progress: Any) -> dict[str, Any]:
        seen["params"] = job.params
        seen["read"] = {name: Path(path).read_bytes() for name, path in job.params["files"]}
        seen["root_listing"] = sorted(
            p.relative_to(job.params["path"]).as_posix()
            for p in Path(job.params["path"]).rglob("*")
            if p.is_file()
        )
        if seen.get("fail"):
            raise ValueError("the runner broke")
        return {"ok": True}

    kinds.job_kind_register(
        kinds.JobKind(name="storage_test", runner=runner, action="view", upload_area="st-upload")
    )
    yield seen
    kinds._KINDS.pop("storage_test", None)


def _place(folder: Path) -> dict[str, Any]:
    (folder / "runs" / "a").mkdir(parents=True)
    (folder / "0-answers.jsonl").write_bytes(b'{"id": 1}\n')
    (folder / "runs" / "a" / "trace.json").write_bytes(b"[]")
    return {
        "path": str(folder),
        "files": [
            ["answers.jsonl", str(folder / "0-answers.jsonl")],
            ["trace", str(folder / "runs" / "a" / "trace.json")],
        ],
    }


@pytest.mark.parametrize("fail", [False, True])
def test_any_worker_reads_a_jobs_uploads_and_they_go_when_it_ends(
    project: Project,
    users: dict[str, Any],
    folder_kind: dict[str, Any],
    bucket: Any,
    settings: Any,
    tmp_path: Path,
    django_capture_on_commit_callbacks: Any,
    fail: bool,
) -> None:
    folder_kind["fail"] = fail
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job = job_services.job_start(
            kind="storage_test", user=users["admin"], project=project, uploads=_place
        )
    assert keys(bucket, f"st-upload/{job.pk}/") == [
        f"{PREFIX}/st-upload/{job.pk}/0-answers.jsonl",
        f"{PREFIX}/st-upload/{job.pk}/runs/a/trace.json",
    ]
    settings.MEDIA_ROOT = tmp_path / "other-worker"
    for callback in callbacks:
        callback()
    job.refresh_from_db()
    assert job.status == (JobStatus.FAILED if fail else JobStatus.SUCCEEDED)
    local = tmp_path / "other-worker" / "st-upload" / str(job.pk)
    # The runner saw this worker's own copies, under its MEDIA_ROOT.
    assert folder_kind["params"]["path"] == str(local)
    assert folder_kind["read"] == {"answers.jsonl": b'{"id": 1}\n', "trace": b"[]"}
    assert folder_kind["root_listing"] == ["0-answers.jsonl", "runs/a/trace.json"]
    assert keys(bucket, "st-upload/") == [] and not local.exists()


def test_a_refused_upload_leaves_nothing_in_the_bucket(
    project: Project, users: dict[str, Any], folder_kind: dict[str, Any], bucket: Any
) -> None:
    def bad(folder: Path) -> dict[str, Any]:
        _place(folder)
        raise ValidationFailed("answers.jsonl: not JSON Lines")

    with pytest.raises(ValidationFailed, match="not JSON Lines"):
        job_services.job_start(
            kind="storage_test", user=users["admin"], project=project, uploads=bad
        )
    assert not Job.objects.exists() and keys(bucket, "st-upload/") == []


def test_release_verify_command_checks_a_release_in_the_bucket(
    project: Project, users: dict[str, Any], bucket: Any
) -> None:
    ItemFactory(project=project, status=ItemStatus.VERIFIED)
    release = release_create(project=project, user=users["admin"], name="CLI")
    out = io.StringIO()
    call_command("release_verify", release.path, stdout=out)
    assert out.getvalue().startswith("ok: ")
    bucket.delete_object(Bucket=BUCKET, Key=f"{PREFIX}/{release.path}/provenance.jsonl")
    with pytest.raises(CommandError, match="provenance.jsonl: missing"):
        call_command("release_verify", release.path, stdout=io.StringIO(), stderr=io.StringIO())
