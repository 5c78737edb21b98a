"""Uploads are placed safely: one size budget and one entry count per request, over every file
and every zip member, counted on the bytes actually written; any archive that cannot be
unpacked (clashing or repeated names, encryption, bad CRC, data cut short, unknown
compression, names the file system cannot hold) is refused with a message naming the archive
and the member, and nothing of the request is left on disk. Through the helpers in
``benchmark.jobs.uploads`` and through the dataset import (page and API)."""

from __future__ import annotations

import html
import io
import os
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from benchmark.exceptions import ValidationFailed
from benchmark.jobs import uploads
from benchmark.jobs.uploads import UploadBudget, place_uploads, zip_extract
from benchmark.models import Job, Project
from tests.zips import cut_short, patched, renamed, zip_bytes

AREA = "test-uploads"


def leftovers(settings: Any, area: str = AREA) -> list[str]:
    """Everything under MEDIA_ROOT/<area>/ (nothing, when a refused upload cleaned up)."""
    root = Path(settings.MEDIA_ROOT) / area
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def refused(settings: Any, *archives: tuple[str, bytes], budget: UploadBudget | None = None) -> str:
    """Place the archives as one request; return the refusal's message."""
    with pytest.raises(ValidationFailed) as caught, place_uploads(AREA, budget) as placed:
        for n, (name, data) in enumerate(archives):
            placed.add_zip(io.BytesIO(data), archive=name, into=f"z{n}")
    assert leftovers(settings) == [], "a refused upload left files behind"
    return caught.value.message


BIG = b"0123456789" * 2_000  # 20 kB that compress to almost nothing


# --------------------------------------------------------------------------- one budget per request


def test_the_byte_budget_is_shared_by_every_zip_of_a_request(settings: Any) -> None:
    settings.BENCHWRIGHT_MAX_UPLOAD_BYTES = 50_000
    one = zip_bytes({"runs/a.txt": BIG}, zipfile.ZIP_DEFLATED)
    assert len(one) < 1_000  # each zip and each member is far below the limit
    message = refused(
        settings, ("one.zip", one), ("two.zip", one), ("three.zip", one), budget=UploadBudget()
    )
    assert "archive 'three.zip', member 'runs/a.txt'" in message
    assert "unpacks to more than 50 kB; the limit is 50 kB" in message


def test_the_budget_counts_plain_files_and_zip_members_together(settings: Any) -> None:
    budget = UploadBudget(max_bytes=30_000)
    with pytest.raises(ValidationFailed) as caught, place_uploads(AREA, budget) as placed:
        placed.add_file(SimpleUploadedFile("first.jsonl", BIG), "first.jsonl")
        placed.add_zip(io.BytesIO(zip_bytes({"b.txt": BIG})), archive="more.zip", into="m")
    assert "archive 'more.zip', member 'b.txt'" in caught.value.message
    assert leftovers(settings) == []


def test_the_budget_counts_the_bytes_written_not_the_size_declared(settings: Any) -> None:
    upload = SimpleUploadedFile("answers.jsonl", BIG)
    upload.size = 10  # declared small, holds 20 kB
    budget = UploadBudget(max_bytes=15_000)
    with pytest.raises(ValidationFailed) as caught, place_uploads(AREA, budget) as placed:
        placed.add_file(upload, "answers.jsonl")
    assert "file 'answers.jsonl'" in caught.value.message
    assert "the limit is" in caught.value.message
    assert leftovers(settings) == []


def test_a_zip_that_lies_about_a_size_is_refused(settings: Any) -> None:
    lying = patched(zip_bytes({"a.txt": BIG}), "file_size", 10, local=False)
    message = refused(settings, ("lie.zip", lying), budget=UploadBudget(max_bytes=15_000))
    assert "archive 'lie.zip', member 'a.txt'" in message


def test_the_entry_count_is_shared_by_every_zip_of_a_request(settings: Any) -> None:
    six = zip_bytes({f"d/f{i}.txt": b"x" for i in range(6)})
    message = refused(settings, ("a.zip", six), ("b.zip", six), budget=UploadBudget(max_members=10))
    assert "archive 'b.zip', member 'd/f4.txt'" in message  # the 11th entry of the request
    assert "more than 10 files and zip entries" in message


def test_the_entry_count_covers_plain_files(settings: Any) -> None:
    budget = UploadBudget(max_members=2)
    with pytest.raises(ValidationFailed) as caught, place_uploads(AREA, budget) as placed:
        for name in ("a/1.json", "a/2.json", "a/3.json"):
            placed.add_file(SimpleUploadedFile(name, b"[]"), name)
    assert "file 'a/3.json'" in caught.value.message
    assert leftovers(settings) == []


def test_zip_extract_alone_still_takes_a_byte_limit(tmp_path: Path) -> None:
    data = zip_bytes({"a.txt": BIG}, zipfile.ZIP_DEFLATED)
    with pytest.raises(ValidationFailed, match="unpacks to more than"):
        zip_extract(io.BytesIO(data), tmp_path, 1_000)


# --------------------------------------------------------------------------- unreadable archives


BASE = zip_bytes({"data/a.txt": b"hello world" * 10, "data/b.txt": b"second"})


@pytest.mark.parametrize(
    ("archive", "expected"),
    [
        pytest.param(
            zip_bytes({"data/x": b"a file", "data/x/y.txt": b"in a folder"}),
            ["bad.zip", "'data/x/y.txt'", "'data/x'", "both a file and a folder"],
            id="file-then-folder-of-the-same-name",
        ),
        pytest.param(
            zip_bytes({"data/x/y.txt": b"in a folder", "data/x": b"a file"}),
            ["bad.zip", "'data/x'", "both a file and a folder"],
            id="folder-then-file-of-the-same-name",
        ),
        pytest.param(
            zip_bytes({"data/x/": b"", "data/x": b"a file"}),
            ["bad.zip", "'data/x'", "both a file and a folder"],
            id="member-both-file-and-folder",
        ),
        pytest.param(
            zip_bytes([("data/a.txt", b"one"), ("data/a.txt", b"two")]),
            ["bad.zip", "'data/a.txt'", "twice"],
            id="duplicate-name",
        ),
        pytest.param(
            zip_bytes([("data/a.txt", b"one"), ("data/./a.txt", b"two")]),
            ["bad.zip", "'data/./a.txt'", "twice", "'data/a.txt'"],
            id="duplicate-after-normalising",
        ),
        pytest.param(
            patched(BASE, "flags", 1),
            ["archive 'bad.zip', member 'data/a.txt'", "encrypted"],
            id="encrypted",
        ),
        pytest.param(
            patched(BASE, "crc", 12345),
            ["archive 'bad.zip', member 'data/a.txt'", "damaged", "CRC"],
            id="bad-crc",
        ),
        pytest.param(
            cut_short(zip_bytes({"data/a.bin": os.urandom(5_000)}, zipfile.ZIP_DEFLATED), 2_000),
            ["archive 'bad.zip', member 'data/a.bin'", "damaged or incomplete"],
            id="truncated-random-data",
        ),
        pytest.param(
            cut_short(zip_bytes({"data/a.txt": b"abc" * 5_000}, zipfile.ZIP_DEFLATED), 10),
            ["archive 'bad.zip', member 'data/a.txt'", "damaged or incomplete"],
            id="truncated-compressed-text",
        ),
        pytest.param(
            BASE[:-30],
            ["archive 'bad.zip' is not a readable zip archive"],
            id="truncated-directory",
        ),
        pytest.param(
            patched(BASE, "method", 99),
            ["archive 'bad.zip', member 'data/a.txt'", "method 99", "cannot be read"],
            id="unsupported-compression",
        ),
        pytest.param(
            zip_bytes({"data/" + "n" * 300 + ".txt": b"x"}),
            ["bad.zip", "cannot store", "longer than 255 bytes"],
            id="name-too-long",
        ),
        pytest.param(
            zip_bytes({"data/a\x01b.txt": b"x"}),
            ["bad.zip", "'data/a\\x01b.txt'", "control character"],
            id="control-character",
        ),
        pytest.param(
            renamed(zip_bytes({"data/é.txt": b"x"}), "é".encode(), b"\xff\xfe"),
            ["archive 'bad.zip' is not a readable zip archive"],
            id="name-not-utf8",
        ),
        pytest.param(zip_bytes({"__MACOSX/._a": b"x"}), ["bad.zip", "empty"], id="only-junk"),
    ],
)
def test_an_unreadable_archive_is_refused_naming_the_member(
    settings: Any, archive: bytes, expected: list[str]
) -> None:
    message = refused(settings, ("good.zip", BASE), ("bad.zip", archive))
    for part in expected:
        assert part in message, message


def test_a_failure_after_the_job_claimed_the_folder_removes_it(settings: Any) -> None:
    with pytest.raises(RuntimeError), place_uploads(AREA) as placed:
        placed.add_zip(io.BytesIO(BASE), archive="ok.zip")
        folder = placed.claim(4711)
        assert folder == uploads.upload_folder(AREA, 4711) and folder.is_dir()
        raise RuntimeError("the job's transaction failed")
    assert leftovers(settings) == []


def test_a_claimed_folder_keeps_the_files_and_unwraps_a_single_top_folder(settings: Any) -> None:
    with place_uploads(AREA) as placed:
        inner = placed.add_zip(io.BytesIO(BASE), archive="ok.zip")
        folder = placed.claim(7)
    assert placed.final(inner) == folder / "data"
    assert (folder / "data" / "b.txt").read_bytes() == b"second"
    assert leftovers(settings) == ["7", "7/data", "7/data/a.txt", "7/data/b.txt"]


def test_staging_folders_left_by_a_dead_process_are_removed(settings: Any) -> None:
    old = Path(settings.MEDIA_ROOT) / AREA / ".staging-dead"
    old.mkdir(parents=True)
    (old / "f").write_bytes(b"x")
    past = time.time() - 2 * 24 * 3600
    os.utime(old, (past, past))
    with place_uploads(AREA) as placed:
        placed.add_file(SimpleUploadedFile("a.txt", b"x"), "a.txt")
        placed.claim(1)
    assert leftovers(settings) == ["1", "1/a.txt"]


# --------------------------------------------------------------------------- dataset import


def post_import(client: Client, project: Project, name: str, data: bytes, **headers: Any) -> Any:
    return client.post(
        f"/projects/{project.pk}/datasets/import/",
        {"file": SimpleUploadedFile(name, data, content_type="application/zip")},
        **headers,
    )


def page_error(response: Any) -> str:
    assert response.status_code == 200, response.content[:300]
    text = html.unescape(response.content.decode())
    assert "field-error" in text, "no error shown on the form"
    return text


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (zip_bytes({"d/x": b"f", "d/x/y.jsonl": b"{}"}), "both a file and a folder"),
        (patched(BASE, "method", 99), "cannot be read"),
        (cut_short(zip_bytes({"a.txt": b"abc" * 5_000}, zipfile.ZIP_DEFLATED), 10), "damaged"),
        (zip_bytes({"d/" + "n" * 300: b"x"}), "longer than 255 bytes"),
    ],
    ids=["clash", "compression", "truncated", "long-name"],
)
def test_the_import_page_names_the_bad_member_and_keeps_nothing(
    project: Project, clients: dict[str, Client], settings: Any, data: bytes, expected: str
) -> None:
    response = post_import(
        clients["admin"], project, "bad.zip", data, HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="import-panel",
    )  # fmt: skip
    text = page_error(response)
    assert "Archive 'bad.zip'" in text and expected in text
    assert not Job.objects.exists()
    assert leftovers(settings, "imports") == []


@pytest.mark.django_db
def test_the_import_page_counts_bytes_as_they_are_unpacked(
    project: Project, clients: dict[str, Client], settings: Any
) -> None:
    settings.BENCHWRIGHT_MAX_UPLOAD_BYTES = 30_000
    data = zip_bytes({"d/a.jsonl": BIG, "d/b.jsonl": BIG}, zipfile.ZIP_DEFLATED)
    text = page_error(post_import(clients["admin"], project, "two.zip", data))
    assert "Archive 'two.zip', member 'd/b.jsonl'" in text and "unpacks to more than" in text
    assert not Job.objects.exists()
    assert leftovers(settings, "imports") == []


@pytest.mark.django_db
def test_the_import_api_answers_400_naming_the_member(
    project: Project, clients: dict[str, Client], settings: Any
) -> None:
    data = zip_bytes({"d/x": b"f", "d/x/y.jsonl": b"{}"})
    response = clients["admin"].post(
        f"/api/projects/{project.pk}/import/", {"file": SimpleUploadedFile("bad.zip", data)}
    )
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "bad.zip" in detail and "'d/x/y.jsonl'" in detail and "'d/x'" in detail
    assert not Job.objects.exists()
    assert leftovers(settings, "imports") == []


@pytest.mark.django_db
def test_a_good_import_upload_lands_in_the_jobs_folder(
    project: Project, clients: dict[str, Client], settings: Any
) -> None:
    response = post_import(clients["admin"], project, "ok.zip", BASE)
    assert response.status_code == 302
    job = Job.objects.get()
    assert job.params["path"] == str(uploads.upload_folder("imports", job.pk) / "data")
    assert leftovers(settings, "imports") == [
        f"{job.pk}",
        f"{job.pk}/data",
        f"{job.pk}/data/a.txt",
        f"{job.pk}/data/b.txt",
    ]
