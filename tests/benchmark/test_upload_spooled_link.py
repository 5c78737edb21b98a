"""A large upload, which Django spools to a temporary file, is placed in the job's folder by a
hard link to that file rather than a copy; it must behave exactly like a copy: the file
outlives the request's temporary file, is readable like a copied one, counts against the
byte budget, and never replaces an existing file."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import TemporaryUploadedFile

from benchmark.exceptions import ValidationFailed
from benchmark.jobs.uploads import UploadBudget, place_uploads

AREA = "test-spooled"
DATA = b'{"trace_id": "a"}\n' * 500


def spooled(name: str = "data.jsonl", data: bytes = DATA) -> TemporaryUploadedFile:
    upload = TemporaryUploadedFile(name, "application/octet-stream", len(data), None)
    upload.write(data)
    upload.flush()
    return upload


def test_a_spooled_upload_is_linked_not_copied_and_outlives_its_temporary_file(
    settings: Any,
) -> None:
    upload = spooled()
    temporary = upload.temporary_file_path()
    with place_uploads(AREA, UploadBudget(max_bytes=len(DATA))) as placed:
        path = placed.add_file(upload, "data.jsonl")
        assert os.stat(path).st_ino == os.stat(temporary).st_ino  # the same bytes on disk
        assert placed.budget.written == len(DATA)
        folder = placed.claim(12)
    upload.close()  # the request's end removes the temporary file
    assert not Path(temporary).exists()
    final = folder / "data.jsonl"
    assert final.read_bytes() == DATA
    assert stat.S_IMODE(final.stat().st_mode) == (settings.FILE_UPLOAD_PERMISSIONS or 0o644)


def test_a_spooled_upload_over_the_budget_is_refused_and_leaves_nothing(settings: Any) -> None:
    upload = spooled()
    upload.size = 10  # declared small: the bytes on disk count
    with pytest.raises(ValidationFailed) as caught, place_uploads(AREA, UploadBudget(100)) as p:
        p.add_file(upload, "data.jsonl")
    assert "file 'data.jsonl'" in caught.value.message
    root = Path(settings.MEDIA_ROOT) / AREA
    assert [p for p in root.rglob("*")] == []
    upload.close()


def test_a_spooled_upload_never_replaces_a_file_already_placed(settings: Any) -> None:
    with pytest.raises(ValidationFailed), place_uploads(AREA) as placed:
        placed.add_file(spooled(data=b"first"), "data.jsonl")
        placed.add_file(spooled(data=b"second"), "data.jsonl")
