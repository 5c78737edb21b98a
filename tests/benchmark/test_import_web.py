"""Import and export through the browser pages (and the API upload): upload, job, items."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from benchmark.models import Image, Item, Job, JobStatus, Project
from tests.factories import ItemFactory, ResponseFactory, png_bytes
from tests.shared_data import SHARED_DATA, needs_data

pytestmark = pytest.mark.django_db

HX_PANEL = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "import-panel"}
SHARED_ATP = SHARED_DATA / "atp"


def atp_row(i: int, **over: Any) -> dict[str, Any]:
    """One ATP-Bench data.jsonl record in the documented schema."""
    row: dict[str, Any] = {
        "trace_id": f"web_{i:04d}",
        "query": f"How does gadget {i} work?",
        "image_query": None,
        "doc": [{"text": f"Gadget {i} manual.", "images": [f"images/web_{i:04d}_0.png"]}],
        "images": [f"images/web_{i:04d}_0.png"],
        "gt": f'Gadget {i} works like this.\n\n<tool>{{"tool_name": "Reference", '
        f'"description": "diagram", "params": {{"img_index": 0}}}}</tool>',
        "category": "Manual",
        "intent": "Function",
    }
    row.update(over)
    return row


def jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def upload(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def zip_bytes(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


@pytest.fixture
def admin(clients: dict[str, Client]) -> Client:
    return clients["admin"]


def post_import(
    client: Client, project: Project, file: SimpleUploadedFile, capture: Any, **headers: Any
) -> Any:
    """POST the upload; the import task runs eagerly once the transaction commits."""
    with capture(execute=True):
        return client.post(f"/projects/{project.pk}/datasets/import/", {"file": file}, **headers)


# --------------------------------------------------------------------------- success


def test_upload_jsonl_through_htmx_shows_finished_job_and_items_appear(
    project: Project, admin: Client, django_capture_on_commit_callbacks: Any
) -> None:
    data = jsonl([atp_row(1), atp_row(2), atp_row(3)])
    response = post_import(
        admin, project, upload("data.jsonl", data), django_capture_on_commit_callbacks, **HX_PANEL
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="import-panel"')
    job = Job.objects.get(project=project)
    assert f'id="job-{job.pk}"' in html
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.result["items_created"] == 3
    assert job.params["filename"] == "data.jsonl"
    assert sorted(project.items.values_list("external_id", flat=True)) == [
        "web_0001",
        "web_0002",
        "web_0003",
    ]
    # The images were not in the upload: the import says so rather than failing.
    assert job.result["images_missing"] > 0
    assert job.result["outcome"] == "warnings"

    poll = admin.get(f"/jobs/{job.pk}/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET=f"job-{job.pk}")
    assert poll.status_code == 286
    assert "<dd>3</dd>" in poll.content.decode()

    page = admin.get(f"/projects/{project.pk}/")
    assert "web_0002" in page.content.decode()


def test_upload_without_htmx_redirects_to_the_job_page(
    project: Project, admin: Client, django_capture_on_commit_callbacks: Any
) -> None:
    response = post_import(
        admin,
        project,
        upload("data.jsonl", jsonl([atp_row(1)])),
        django_capture_on_commit_callbacks,
    )
    job = Job.objects.get(project=project)
    assert response.status_code == 302
    assert response["Location"] == f"/jobs/{job.pk}/"
    html = admin.get(response["Location"]).content.decode()
    # Its image was not in the upload: done with warnings, the missing image said first.
    assert "Done with warnings" in html and "Succeeded" not in html
    assert html.index('id="images-missing"') < html.index("Items added")
    assert "1 image missing" in html


def test_a_zip_of_images_alone_fills_in_missing_images(
    project: Project, admin: Client, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    post_import(
        admin,
        project,
        upload("data.jsonl", jsonl([atp_row(1)])),
        django_capture_on_commit_callbacks,
    )
    data = zip_bytes({"web_0001_0.png": png_bytes(1)})
    with django_capture_on_commit_callbacks(execute=True):
        response = admin.post(
            f"/projects/{project.pk}/datasets/import/",
            {"file": upload("pictures.zip", data), "source": "images"},
        )
    assert response.status_code == 302
    job = Job.objects.filter(project=project).latest("id")
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert (job.result["items_filled"], job.result["images_filled"]) == (1, 1)
    assert job.result["outcome"] == "ok"
    assert project.items.get().image_refs[0]["sha256"]
    html = admin.get(response["Location"]).content.decode()
    assert "Missing images filled in" in html and "Succeeded" in html


def test_upload_zip_of_a_dataset_folder_stores_the_images(
    project: Project, admin: Client, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    data = zip_bytes(
        {
            "atp/data.jsonl": jsonl([atp_row(1), atp_row(2)]),
            "atp/images/web_0001_0.png": png_bytes(101),
            "atp/images/web_0002_0.png": png_bytes(102),
            "__MACOSX/atp/._data.jsonl": b"junk",
        }
    )
    post_import(admin, project, upload("atp.zip", data), django_capture_on_commit_callbacks)
    job = Job.objects.get(project=project)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.result["images_stored"] == 2
    assert Image.objects.filter(projects=project).count() == 2
    # Extracted under MEDIA_ROOT/imports/<job id>/, into the zip's single top folder.
    assert job.params["path"] == str(Path(settings.MEDIA_ROOT) / "imports" / str(job.pk) / "atp")
    item = project.items.get(external_id="web_0001")
    sha = item.image_refs[0]["sha256"]
    assert admin.get(f"/images/{sha}/").status_code == 200


@needs_data("atp")
def test_upload_the_shared_atp_sample(
    project: Project, admin: Client, django_capture_on_commit_callbacks: Any
) -> None:
    files = {
        f"atp/{p.relative_to(SHARED_ATP)}": p.read_bytes()
        for p in SHARED_ATP.rglob("*")
        if p.is_file()
    }
    post_import(
        admin, project, upload("atp.zip", zip_bytes(files)), django_capture_on_commit_callbacks
    )
    job = Job.objects.get(project=project)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.result["items_created"] == 12
    assert job.result["images_stored"] == 45
    vqa = project.items.get(external_id="atp_0005")
    html = admin.get(f"/projects/{project.pk}/items/{vqa.pk}/").content.decode()
    assert "query image" in html and "img_index 3" in html


def test_reimporting_the_same_file_adds_nothing(
    project: Project, admin: Client, django_capture_on_commit_callbacks: Any
) -> None:
    data = jsonl([atp_row(1), atp_row(2)])
    post_import(admin, project, upload("data.jsonl", data), django_capture_on_commit_callbacks)
    post_import(admin, project, upload("data.jsonl", data), django_capture_on_commit_callbacks)
    second = Job.objects.filter(project=project).order_by("-id").first()
    assert second.result["items_created"] == 0
    assert second.result["items_skipped"] == 2
    assert project.items.count() == 2


# --------------------------------------------------------------------------- errors


def test_malformed_file_fails_the_job_naming_the_record(
    project: Project, admin: Client, django_capture_on_commit_callbacks: Any
) -> None:
    rows = [atp_row(1), atp_row(2, trace_id="broken_7", query=""), atp_row(3)]
    response = post_import(
        admin,
        project,
        upload("data.jsonl", jsonl(rows)),
        django_capture_on_commit_callbacks,
        **HX_PANEL,
    )
    job = Job.objects.get(project=project)
    assert job.status == JobStatus.FAILED
    assert "broken_7" in job.error
    assert "query" in job.error
    assert not project.items.exists()  # all or nothing
    html = admin.get(f"/jobs/{job.pk}/").content.decode()
    assert "broken_7" in html and "failed" in html
    assert response.status_code == 200


def test_invalid_json_line_is_reported_with_its_line(
    project: Project, admin: Client, django_capture_on_commit_callbacks: Any
) -> None:
    data = jsonl([atp_row(1)]) + b"{not json\n"
    post_import(admin, project, upload("data.jsonl", data), django_capture_on_commit_callbacks)
    job = Job.objects.get(project=project)
    assert job.status == JobStatus.FAILED
    assert "line 2" in job.error


def form_error(response: Any) -> str:
    html = response.content.decode()
    assert response.status_code == 200, html[:500]
    assert "field-error" in html, "no error shown on the form"
    return html


def test_zip_with_a_path_leaving_its_folder_is_refused(
    project: Project, admin: Client, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    data = zip_bytes({"data.jsonl": jsonl([atp_row(1)]), "../../escape.txt": b"x"})
    response = post_import(
        admin, project, upload("evil.zip", data), django_capture_on_commit_callbacks, **HX_PANEL
    )
    assert "leaves its folder" in form_error(response)
    assert not Job.objects.exists()
    assert not (Path(settings.MEDIA_ROOT).parent / "escape.txt").exists()
    assert not any((Path(settings.MEDIA_ROOT) / "imports").glob("*"))


def test_zip_with_an_absolute_path_is_refused(
    project: Project, admin: Client, django_capture_on_commit_callbacks: Any
) -> None:
    data = zip_bytes({"/etc/evil.jsonl": b"x"})
    response = post_import(
        admin, project, upload("evil.zip", data), django_capture_on_commit_callbacks, **HX_PANEL
    )
    assert "unsafe path" in form_error(response)
    assert not Job.objects.exists()


def test_zip_with_a_symlink_is_refused(
    project: Project, admin: Client, django_capture_on_commit_callbacks: Any
) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        info = zipfile.ZipInfo("link")
        info.external_attr = 0o120777 << 16
        zf.writestr(info, "/etc/passwd")
    response = post_import(
        admin, project, upload("links.zip", buf.getvalue()), django_capture_on_commit_callbacks
    )
    assert "symbolic link" in form_error(response)


def test_file_over_the_size_limit_is_refused(
    project: Project, admin: Client, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    settings.BENCHWRIGHT_MAX_UPLOAD_BYTES = 1000
    response = post_import(
        admin,
        project,
        upload("data.jsonl", jsonl([atp_row(i) for i in range(20)])),
        django_capture_on_commit_callbacks,
        **HX_PANEL,
    )
    assert "the limit is" in form_error(response)
    assert not Job.objects.exists()


def test_zip_that_unpacks_over_the_limit_is_refused(
    project: Project, admin: Client, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    settings.BENCHWRIGHT_MAX_UPLOAD_BYTES = 50_000
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("data.jsonl", b" " * 200_000)  # compresses to a few hundred bytes
    response = post_import(
        admin, project, upload("bomb.zip", buf.getvalue()), django_capture_on_commit_callbacks
    )
    assert "unpacks to" in form_error(response)


def test_file_named_zip_that_is_not_a_zip_is_refused(
    project: Project, admin: Client, django_capture_on_commit_callbacks: Any
) -> None:
    response = post_import(
        admin, project, upload("data.zip", b"plain text"), django_capture_on_commit_callbacks
    )
    assert "not a zip" in form_error(response)


def test_missing_file_is_a_form_error(project: Project, admin: Client) -> None:
    response = admin.post(f"/projects/{project.pk}/datasets/import/", {}, **HX_PANEL)
    assert response.status_code == 200
    assert "This field is required" in response.content.decode()


@pytest.mark.parametrize("role", ["reviewer", "annotator"])
def test_non_admin_cannot_import(
    project: Project, clients: dict[str, Client], role: str, django_capture_on_commit_callbacks: Any
) -> None:
    response = post_import(
        clients[role],
        project,
        upload("data.jsonl", jsonl([atp_row(1)])),
        django_capture_on_commit_callbacks,
    )
    assert response.status_code == 403
    assert not project.items.exists()
    assert not Job.objects.exists()


# --------------------------------------------------------------------------- API upload


def test_api_import_returns_202_with_the_job(
    project: Project, admin: Client, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = admin.post(
            f"/api/projects/{project.pk}/import/",
            {"file": upload("data.jsonl", jsonl([atp_row(1), atp_row(2)]))},
        )
    assert response.status_code == 202
    body = response.json()
    assert body["kind"] == "import"
    assert body["filename"] == "data.jsonl"
    assert "path" not in json.dumps(body)
    assert response["Location"].endswith(f"/api/jobs/{body['id']}/")
    job = admin.get(f"/api/jobs/{body['id']}/").json()
    assert job["status"] == "succeeded"
    assert job["result"]["items_created"] == 2


def test_api_import_of_a_bad_zip_is_400(project: Project, admin: Client) -> None:
    response = admin.post(f"/api/projects/{project.pk}/import/", {"file": upload("x.zip", b"nope")})
    assert response.status_code == 400
    assert "not a zip" in response.json()["detail"]


# --------------------------------------------------------------------------- export


def test_export_downloads_the_records_as_jsonl(
    project: Project, clients: dict[str, Client]
) -> None:
    for i, status in enumerate(["draft", "verified", "verified"]):
        item = ItemFactory(
            project=project,
            external_id=f"exp_{i}",
            status=status,
            raw=json.dumps(atp_row(i, trace_id=f"exp_{i}")),
        )
        ResponseFactory(item=item, key="gt", text=f"answer {i}")
    response = clients["reviewer"].get(f"/projects/{project.pk}/datasets/export/")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    assert "attachment" in response["Content-Disposition"]
    assert ".jsonl" in response["Content-Disposition"]
    lines = b"".join(response.streaming_content).decode().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["trace_id"] for r in records] == ["exp_0", "exp_1", "exp_2"]

    only = clients["admin"].get(f"/projects/{project.pk}/datasets/export/?status=verified")
    records = [json.loads(x) for x in b"".join(only.streaming_content).decode().splitlines()]
    assert [r["trace_id"] for r in records] == ["exp_1", "exp_2"]
    assert "verified" in only["Content-Disposition"]


def test_export_with_images_is_a_zip(
    project: Project, clients: dict[str, Client], django_capture_on_commit_callbacks: Any
) -> None:
    data = zip_bytes({"data.jsonl": jsonl([atp_row(1)]), "images/web_0001_0.png": png_bytes(7)})
    post_import(
        clients["admin"], project, upload("d.zip", data), django_capture_on_commit_callbacks
    )
    response = clients["admin"].get(f"/projects/{project.pk}/datasets/export/?images=on")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as zf:
        names = zf.namelist()
        data_name = next(n for n in names if n.endswith("data.jsonl"))
        assert json.loads(zf.read(data_name).splitlines()[0])["trace_id"] == "web_0001"
        assert any(n.endswith("images/web_0001_0.png") for n in names)


def test_export_with_an_unknown_status_is_400(project: Project, clients: dict[str, Client]) -> None:
    assert (
        clients["admin"].get(f"/projects/{project.pk}/datasets/export/?status=nope").status_code
        == 400
    )


def test_export_of_an_empty_project_still_downloads(
    project: Project, clients: dict[str, Client]
) -> None:
    response = clients["admin"].get(f"/projects/{project.pk}/datasets/export/")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b""
    assert Item.objects.count() == 0
