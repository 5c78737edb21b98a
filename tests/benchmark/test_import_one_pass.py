"""Import in one pass (each record read once, queries per chunk, not per record), still all or
nothing; the web export streamed, byte for byte what the export writes to a file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.http import FileResponse, StreamingHttpResponse
from django.test import Client
from django.test.utils import CaptureQueriesContext
from PIL import Image as PILImage

from benchmark.datasets import services as dataset_services
from benchmark.formats import atp
from benchmark.jobs import services as job_services
from benchmark.jobs.tasks import job_task
from benchmark.models import Item, JobStatus, Project, Response, Role, Toolset
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"


def _project(name: str = "p") -> Project:
    toolset, _ = Toolset.objects.get_or_create(name="atp-one-pass")
    return Project.objects.create(
        name=name, kind="interleaved", tag_syntax="atp", data_format="atp", toolset=toolset
    )


def _row(i: int, **over: object) -> dict[str, object]:
    row: dict[str, object] = {
        "trace_id": f"t{i}",
        "query": f"How does thing {i} work? " + "long words " * 20,
        "image_query": None,
        "doc": [{"text": f"Text {i} " + "of a document " * 30, "images": ["images/a.png"]}],
        "images": ["images/a.png"],
        "gt": f"It works {i}.\n\n" + "an answer " * 40,
        "category": "Academic",
        "intent": "Framework",
        "extra": {"kept": [1, None, "x"]},
    }
    row.update(over)
    return row


def _write(folder: Path, rows: list[dict[str, object]], tail: str = "") -> Path:
    (folder / "images").mkdir(parents=True, exist_ok=True)
    PILImage.new("RGB", (8, 6), "red").save(folder / "images" / "a.png")
    path = folder / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + tail)
    return path


def _run_job(project: Project, path: Path) -> Any:
    job = job_services.job_create(
        kind="import", project=project, params={"project_id": project.pk, "path": str(path)}
    )
    job_task(job.pk)
    job.refresh_from_db()
    return job


def test_the_import_job_reads_each_record_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    parse = atp._item

    def counting(value: Any, *args: Any) -> Any:
        calls.append(value["trace_id"])
        return parse(value, *args)

    monkeypatch.setattr(atp, "_item", counting)
    project = _project()
    job = _run_job(project, _write(tmp_path / "d", [_row(i) for i in range(7)]))
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert sorted(calls) == sorted(f"t{i}" for i in range(7))  # once each, not twice
    assert (job.progress, job.total) == (7, 7)
    assert Item.objects.filter(project=project).count() == 7


def test_queries_do_not_grow_with_the_records_in_a_chunk(tmp_path: Path) -> None:
    counts = []
    warm = _project("warm")  # the image is stored once, by the first import
    dataset_services.dataset_import(project=warm, path=_write(tmp_path / "w", [_row(0)]))
    for n in (5, 15):
        project = _project(f"p{n}")
        path = _write(tmp_path / f"d{n}", [_row(i) for i in range(n)])
        with CaptureQueriesContext(connection) as queries:
            result = dataset_services.dataset_import(project=project, path=path)
        assert result.items_created == n
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


def test_a_bad_last_record_writes_nothing_and_names_the_record_and_field(
    tmp_path: Path,
) -> None:
    project = _project()
    rows = [_row(i) for i in range(30)] + [_row(30, query=5)]
    job = _run_job(project, _write(tmp_path / "d", rows))
    assert job.status == JobStatus.FAILED
    assert job.error == "data.jsonl, record t30, field 'query': must be a string, got a number"
    assert Item.objects.count() == 0
    assert Response.objects.count() == 0


def _admin_of(project: Project) -> tuple[Any, Client]:
    user = UserFactory()
    MembershipFactory(project=project, user=user, role=Role.ADMIN)
    client = Client()
    client.force_login(user)
    return user, client


def _file_export(project: Project, user: Any, **kwargs: Any) -> tuple[str, bytes]:
    export = dataset_services.dataset_export_file(project=project, user=user, **kwargs)
    assert export.handle is not None
    with export.handle as fh:
        return export.filename, fh.read()


def test_the_web_export_is_streamed_and_byte_identical(tmp_path: Path) -> None:
    project = _project()
    user, admin_client = _admin_of(project)
    path = _write(tmp_path / "d", [_row(i) for i in range(12)])
    dataset_services.dataset_import(project=project, path=path)
    Item.objects.filter(external_id="t3").update(query="An edited question?", status="verified")
    Item.objects.filter(external_id="t7").update(status="verified")

    response = admin_client.get(f"/projects/{project.pk}/datasets/export/")
    assert response.status_code == 200
    assert isinstance(response, StreamingHttpResponse)
    assert not isinstance(response, FileResponse)  # a generator, no file
    body = b"".join(response.streaming_content)
    filename, written = _file_export(project, user)
    assert body == written
    assert f'filename="{filename}"' in response["Content-Disposition"]
    assert body.splitlines()[0] == path.read_bytes().splitlines()[0]  # unchanged: the source
    assert b"An edited question?" in body.splitlines()[3]

    only = admin_client.get(f"/projects/{project.pk}/datasets/export/?status=verified")
    assert isinstance(only, StreamingHttpResponse)
    assert b"".join(only.streaming_content) == _file_export(project, user, status="verified")[1]


def test_an_export_of_several_files_still_comes_as_a_file(tmp_path: Path) -> None:
    project = _project()
    _, admin_client = _admin_of(project)
    dataset_services.dataset_import(
        project=project, path=_write(tmp_path / "d", [_row(i) for i in range(3)])
    )
    Item.objects.filter(external_id="t1").update(source_file="other.jsonl")
    response = admin_client.get(f"/projects/{project.pk}/datasets/export/")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert isinstance(response, FileResponse)


def test_a_streamed_selection_is_the_file_export_of_the_same_items(tmp_path: Path) -> None:
    project = _project()
    user, _ = _admin_of(project)
    dataset_services.dataset_import(
        project=project, path=_write(tmp_path / "d", [_row(i) for i in range(6)])
    )
    ids = set(Item.objects.filter(external_id__in=["t1", "t4"]).values_list("id", flat=True))
    streamed = dataset_services.dataset_export_file(
        project=project, user=user, item_ids=ids, name_suffix="selection", stream=True
    )
    assert streamed.handle is None and streamed.chunks is not None
    filename, written = _file_export(project, user, item_ids=ids, name_suffix="selection")
    assert (streamed.filename, b"".join(streamed.chunks)) == (filename, written)
    assert [json.loads(line)["trace_id"] for line in written.splitlines()] == ["t1", "t4"]
