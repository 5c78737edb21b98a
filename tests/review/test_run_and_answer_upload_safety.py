"""Uploads of agent runs (several .zip files, or run folders) and of model answers share one
size budget and one entry count per request, counted on the bytes written; a run archive that
cannot be unpacked is refused naming the archive and the member; nothing of a refused upload
stays on disk and no job is created."""

from __future__ import annotations

import html
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from benchmark.exceptions import ValidationFailed
from benchmark.jobs import uploads
from benchmark.models import Job, Project, ProjectKind, Role
from review.answers import services as review_answers
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.zips import patched, zip_bytes

pytestmark = pytest.mark.django_db


def leftovers(settings: Any, area: str) -> list[str]:
    root = Path(settings.MEDIA_ROOT) / area
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


@pytest.fixture
def mme() -> Project:
    return ProjectFactory(name="runs", kind=ProjectKind.TRAJECTORY, data_format="agentic-mme")


@pytest.fixture
def reviewer(mme: Project, client_for: Any) -> Client:
    user = UserFactory(username="run-reviewer")
    MembershipFactory(project=mme, user=user, role=Role.REVIEWER)
    return client_for(user)


def post_runs(
    client: Client,
    project: Project,
    files: list[SimpleUploadedFile],
    paths: list[str] | None = None,
) -> str:
    """POST run folders; return the page (lower case) with its error (the form answers 200)."""
    data: dict[str, Any] = {"files": files, "name": "m"}
    if paths is not None:
        data["paths"] = paths
    response = client.post(f"/projects/{project.pk}/runs/", data)
    assert response.status_code == 200, response.content[:300]
    text = html.unescape(response.content.decode())
    assert "field-error" in text, "no error shown"
    return text.lower()


def run_zip(name: str, answer: bytes = b"x", compression: int = zipfile.ZIP_STORED) -> Any:
    data = zip_bytes(
        {"0001/tool_use_list.json": b"[]", "0001/model_answer.txt": answer}, compression
    )
    return SimpleUploadedFile(name, data, content_type="application/zip")


def assert_nothing_kept(settings: Any) -> None:
    assert not Job.objects.filter(kind="score_runs").exists()
    assert leftovers(settings, "runs-upload") == []


def test_three_small_zips_share_one_byte_budget(
    mme: Project, reviewer: Client, settings: Any
) -> None:
    """The report: three 190 KB zips put 559 MB on disk, each under the limit alone."""
    settings.BENCHWRIGHT_MAX_UPLOAD_BYTES = 50_000
    big = b"0123456789" * 2_000  # 20 kB each, a few hundred bytes zipped
    files = [run_zip(f"{n}.zip", big, zipfile.ZIP_DEFLATED) for n in ("a", "b", "c")]
    assert sum(f.size for f in files) < 5_000
    error = post_runs(reviewer, mme, files)
    assert "archive 'c.zip', member '0001/model_answer.txt'" in error
    assert "the limit is 50 kb" in error
    assert_nothing_kept(settings)


def test_the_entry_count_is_per_request(
    mme: Project, reviewer: Client, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(uploads, "_MAX_ZIP_MEMBERS", 3)
    error = post_runs(reviewer, mme, [run_zip("a.zip"), run_zip("b.zip")])
    assert "archive 'b.zip', member '0001/model_answer.txt'" in error
    assert "more than 3 files and zip entries" in error
    assert_nothing_kept(settings)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            zip_bytes({"0001": b"f", "0001/model_answer.txt": b"x"}),
            "member '0001/model_answer.txt': clashes with '0001'",
        ),
        (
            zip_bytes([("0001/model_answer.txt", b"x"), ("0001/model_answer.txt", b"y")]),
            "member '0001/model_answer.txt': the upload holds this file twice",
        ),
        (
            patched(zip_bytes({"0001/model_answer.txt": b"x"}), "flags", 1),
            "member '0001/model_answer.txt': the member is encrypted",
        ),
        (
            patched(zip_bytes({"0001/model_answer.txt": b"x"}), "method", 99),
            "member '0001/model_answer.txt': compressed with method 99",
        ),
        (
            patched(zip_bytes({"0001/model_answer.txt": b"x"}), "crc", 7),
            "member '0001/model_answer.txt': cannot be read",
        ),
    ],
    ids=["file-and-folder", "duplicate", "encrypted", "compression", "bad-crc"],
)
def test_an_unreadable_run_zip_names_archive_and_member(
    mme: Project, reviewer: Client, settings: Any, data: bytes, expected: str
) -> None:
    good = run_zip("good.zip")
    bad = SimpleUploadedFile("bad.zip", data, content_type="application/zip")
    error = post_runs(reviewer, mme, [good, bad])
    assert f"archive 'bad.zip', {expected}" in error
    assert_nothing_kept(settings)


def test_run_folders_with_a_file_and_a_folder_of_one_name_are_refused(
    mme: Project, reviewer: Client, settings: Any
) -> None:
    files = [SimpleUploadedFile("a", b"[]"), SimpleUploadedFile("b", b"x")]
    error = post_runs(reviewer, mme, files, ["runs/0001/a", "runs/0001/a/b"])
    assert "file 'runs/0001/a/b': clashes with 'runs/0001/a'" in error
    assert_nothing_kept(settings)


def test_run_folders_with_a_name_too_long_for_the_disk_are_refused(
    mme: Project, reviewer: Client, settings: Any
) -> None:
    name = "n" * 300
    error = post_runs(reviewer, mme, [SimpleUploadedFile("a", b"x")], [f"runs/0001/{name}"])
    assert f"file 'runs/0001/{name}'" in error and "longer than 255 bytes" in error
    assert_nothing_kept(settings)


def test_good_run_zips_land_in_the_jobs_folder(
    mme: Project, reviewer: Client, settings: Any
) -> None:
    response = reviewer.post(
        f"/projects/{mme.pk}/runs/", {"files": [run_zip("a.zip"), run_zip("b.zip")], "name": "m"}
    )
    assert response.status_code == 302
    job = Job.objects.get(kind="score_runs")
    folder = uploads.upload_folder("runs-upload", job.pk)
    assert job.params["path"] == str(folder)
    assert job.params["sources"] == [
        ["a", str(folder / "a" / "0001")],
        ["b", str(folder / "b" / "0001")],
    ]
    assert (folder / "b" / "0001" / "model_answer.txt").read_bytes() == b"x"
    assert [p for p in leftovers(settings, "runs-upload") if p.startswith(".")] == []


# --------------------------------------------------------------------------- model answers


def answers(name: str, n: int) -> SimpleUploadedFile:
    rows = [{"trace_id": f"atp_{i}", "answer": "x" * 100} for i in range(n)]
    return SimpleUploadedFile(name, "".join(json.dumps(r) + "\n" for r in rows).encode())


def test_large_answer_uploads_share_the_budget_and_keep_nothing(
    project: Project,
    clients: dict[str, Client],
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(review_answers, "INLINE_BYTES", 10)  # every upload is a job
    settings.BENCHWRIGHT_MAX_UPLOAD_BYTES = 10_000
    page = clients["reviewer"].post(
        f"/projects/{project.pk}/answers/",
        {"answers": [answers("a.jsonl", 40), answers("b.jsonl", 40)]},
    )
    assert page.status_code == 200
    assert "the page scores up to" in " ".join(page.context["form"].errors["answers"])
    assert not Job.objects.filter(kind="score_answers").exists()
    assert leftovers(settings, "answers-upload") == []


def test_answer_files_are_counted_as_written_not_as_declared(
    project: Project, users: dict[str, Any], settings: Any
) -> None:
    settings.BENCHWRIGHT_MAX_UPLOAD_BYTES = 10_000
    first, second = answers("a.jsonl", 40), answers("b.jsonl", 40)
    second.size = 10  # declared small; holds 5 kB
    assert first.size + 10 < 10_000 < first.size + len(second.read())
    with pytest.raises(ValidationFailed) as caught:
        review_answers.answers_score_start(
            project=project, user=users["reviewer"], uploads=[first, second]
        )
    assert "file '1-b.jsonl'" in caught.value.message
    assert "the limit is 10 kB" in caught.value.message
    assert not Job.objects.filter(kind="score_answers").exists()
    assert leftovers(settings, "answers-upload") == []


def test_a_large_answer_upload_lands_in_the_jobs_folder(
    project: Project, users: dict[str, Any], settings: Any
) -> None:
    job = review_answers.answers_score_start(
        project=project, user=users["reviewer"], uploads=[answers("a b.jsonl", 3)]
    )
    folder = uploads.upload_folder("answers-upload", job.pk)
    assert job.params["files"] == [["a b.jsonl", str(folder / "0-a_b.jsonl")]]
    assert (folder / "0-a_b.jsonl").read_bytes().count(b"\n") == 3
    assert leftovers(settings, "answers-upload") == [str(job.pk), f"{job.pk}/0-a_b.jsonl"]
