"""Tool records as release files (benchmark.evaluation.record_files, pure): written and read
back unchanged with their files, and every bad line named by line and field."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from benchmark.evaluation.base import ToolRecord, call_key
from benchmark.evaluation.record_files import (
    FILES_DIR,
    RECORDS_DIR,
    RECORDS_FILE,
    records_read,
    records_write,
)
from benchmark.formats import FormatError

PNG = b"\x89PNG fake bytes"


def _records() -> list[ToolRecord]:
    return [
        ToolRecord(
            item="t1", name="google_search", arguments={"query": "red fox"},
            output={"results": [{"title": "Fox", "url": "https://example.org/fox"}]},
            files={}, error="", seconds=0.25,
        ),
        ToolRecord(
            item="t1", name="download_image", arguments={"url": "https://example.org/f.png"},
            output="downloaded", files={"image.png": PNG}, error="", seconds=1.5,
        ),
        ToolRecord(
            item="t2", name="fetch_webpage", arguments={"url": "https://x.test"},
            output=None, files={"copy.png": PNG}, error="HTTP 404", seconds=0.0,
        ),
    ]  # fmt: skip


def test_records_are_read_back_as_written_with_their_files_once(tmp_path: Path) -> None:
    written = records_write(tmp_path, _records())
    assert (written.records, written.files) == (3, 1)  # the same PNG is stored once
    assert sorted(p.name for p in (tmp_path / RECORDS_DIR / FILES_DIR).iterdir()) == [
        hashlib.sha256(PNG).hexdigest()
    ]
    back = list(records_read(tmp_path))
    assert [rec for _, _, rec in back] == _records()
    assert [key for _, key, _ in back] == [
        call_key(r.item, r.name, r.arguments) for r in _records()
    ]
    assert [line for line, _, _ in back] == [1, 2, 3]


def test_no_records_writes_nothing_and_reads_nothing(tmp_path: Path) -> None:
    assert records_write(tmp_path, []).records == 0
    assert not (tmp_path / RECORDS_DIR).exists()
    assert list(records_read(tmp_path)) == []


def _write_lines(root: Path, *lines: str) -> None:
    (root / RECORDS_DIR).mkdir(parents=True, exist_ok=True)
    (root / RECORDS_DIR / RECORDS_FILE).write_text("\n".join(lines) + "\n")


def _line(**changes: object) -> str:
    base = {"item": "t1", "name": "google_search", "arguments": {"query": "fox"}}
    value = {**base, "key": call_key("t1", "google_search", {"query": "fox"}), "output": "ok",
             "files": {}, "error": "", "seconds": 0.1}  # fmt: skip
    value.update(changes)
    return json.dumps(value)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{broken", "tool_records/records.jsonl, record line 3: not valid JSON"),
        ("[1, 2]", "record line 3: expected a JSON object"),
        (_line(item=""), "record line 3, field 'item': expected a non-empty string"),
        (_line(arguments=[1]), "record line 3, field 'arguments': expected an object"),
        (_line(seconds=-1), "field 'seconds': expected a number of seconds, 0 or more"),
        (_line(error=3), "field 'error': expected a string"),
        (
            _line(arguments={"query": "dog"}),
            "field 'key': the key does not match the record's item, tool and arguments",
        ),
        (_line(files={"a.png": "nothex"}), "field 'files': 'a.png': expected a sha256"),
        (
            _line(files={"a.png": "0" * 64}),
            f"field 'files': 'a.png': tool_records/files/{'0' * 64} is missing",
        ),
    ],
)
def test_a_bad_line_is_named_by_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    _write_lines(tmp_path, _line(), "", line)  # a blank line is skipped but counted
    with pytest.raises(FormatError) as caught:
        list(records_read(tmp_path))
    assert message in str(caught.value)
    assert "line 3" in str(caught.value)


def test_a_file_whose_bytes_changed_is_refused(tmp_path: Path) -> None:
    records_write(tmp_path, _records()[1:2])
    digest = hashlib.sha256(PNG).hexdigest()
    (tmp_path / RECORDS_DIR / FILES_DIR / digest).write_bytes(b"other")
    with pytest.raises(FormatError, match="has other bytes"):
        list(records_read(tmp_path))
