"""``parse_record``: one record given on its own (as the API receives it) reads exactly as the
format's reader reads it in a file, and a bad record raises FormatError naming the field."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # pytest-django adds the project root; -p no:django does not
    sys.path.insert(0, str(ROOT))

from benchmark.formats import FormatError, ItemRecord, get_format  # noqa: E402
from benchmark.formats._jsonio import iter_json_array  # noqa: E402
from tests.shared_data import SHARED_DATA, needs_data  # noqa: E402


def _items(name: str, path: Path) -> list[ItemRecord]:
    return [r for r in get_format(name).read(path) if isinstance(r, ItemRecord)]


def _raw_records(name: str) -> list[tuple[str, Any, str, int]]:
    """(format, record text, source file, 0-based row) for every item of the shared data."""
    out: list[tuple[str, Any, str, int]] = []
    if name == "atp":
        lines = (SHARED_DATA / "atp" / "data.jsonl").read_text().splitlines()
        out += [(name, line, "data.jsonl", i) for i, line in enumerate(lines) if line.strip()]
    elif name == "mms":
        for i, raw, _ in iter_json_array(SHARED_DATA / "mms" / "tasks.json", "tasks.json"):
            out.append((name, raw, "tasks.json", i))
    elif name == "llmi":
        for file in ("text_only.json", "mm_input.json", "train_sample.json"):
            for i, raw, _ in iter_json_array(SHARED_DATA / "llmi" / file, file):
                out.append((name, raw, file, i))
    else:
        for i, file in enumerate(sorted((SHARED_DATA / "agentic-mme" / "json").glob("*.json"))):
            out.append((name, file.read_text(), f"json/{file.name}", i))
    return out


NAMES = ("atp", "llmi", "mms", "agentic-mme")
ALL = [r for name in NAMES if (SHARED_DATA / name).is_dir() for r in _raw_records(name)]
_READ: dict[str, dict[str, ItemRecord]] = {}


def _reader_record(name: str, external_id: str) -> ItemRecord:
    if name not in _READ:
        records = _items(name, SHARED_DATA / name)
        _READ[name] = {r.external_id: r for r in records}
    return _READ[name][external_id]


def _same(parsed: ItemRecord, read: ItemRecord) -> None:
    assert dataclasses.asdict(parsed) == dataclasses.asdict(read)


@needs_data()
@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ALL), st.booleans())
def test_any_real_record_parses_as_the_reader_reads_it(
    case: tuple[str, str, str, int], as_object: bool
) -> None:
    name, raw, source_file, row = case
    fmt = get_format(name)
    given_value: Any = orjson.loads(raw) if as_object else raw
    parsed = fmt.parse_record(given_value, source_file=source_file, position=row)
    read = _reader_record(name, parsed.external_id)
    if as_object:  # a parsed object is written out again: same value, own text
        assert orjson.loads(parsed.raw) == orjson.loads(read.raw)
        parsed.raw = read.raw
    _same(parsed, read)


@needs_data()
def test_every_real_record_parses_as_the_reader_reads_it() -> None:
    for name, raw, source_file, row in ALL:
        parsed = get_format(name).parse_record(raw, source_file=source_file, position=row)
        _same(parsed, _reader_record(name, parsed.external_id))


@needs_data()
def test_default_files_give_the_ids_the_reader_gives() -> None:
    llmi = get_format("llmi")
    train = orjson.loads((SHARED_DATA / "llmi" / "train_sample.json").read_bytes())[4]
    assert llmi.parse_record(train, position=4).external_id == "train_sample#5"
    row = {"prompt": "Draw a cat.", "images": ["images/cat.png"]}
    assert llmi.parse_record(row).external_id == "mm_input#1"
    assert llmi.parse_record({"prompt": "Draw a cat."}).source_file == "text_only.json"
    task = orjson.loads((SHARED_DATA / "agentic-mme" / "json" / "0002.json").read_bytes())
    assert get_format("agentic-mme").parse_record(task).source_file == "json/0002.json"


@pytest.mark.parametrize(
    ("name", "record", "field"),
    [
        ("atp", {"trace_id": "x"}, "query"),
        ("atp", {"query": "q"}, "trace_id"),
        ("atp", {"trace_id": "x", "query": "q", "doc": 3}, "doc"),
        ("atp", {"trace_id": "x", "query": "q", "images": [1]}, "images[0]"),
        ("llmi", {"prompt": 5}, "prompt"),
        ("llmi", {"prompt": "p", "r1": 3}, "r1"),
        ("llmi", {"prompt": "p", "answer": "a", "sample_index": 1}, "answer"),
        ("llmi", {"prompt": "p", "data_source": "x", "extra_info": {"image_num": -5}}, None),
        ("mms", {"id": 1, "user_request": "u"}, "plan_str"),
        ("mms", {"id": 1, "user_request": "u", "plan_str": "[{'id': 0"}, "plan_str"),
        ("mms", {"user_request": "u", "plan_str": "[]"}, "id"),
        ("agentic-mme", {"task_id": "t", "input": {"prompt": "p"}, "meta": {"level": 7}}, None),
        ("agentic-mme", {"task_id": "t"}, "input"),
        ("agentic-mme", {"task_id": "../t", "input": {"prompt": "p"}}, "task_id"),
    ],
)
def test_a_bad_record_names_its_field(name: str, record: Any, field: str | None) -> None:
    with pytest.raises(FormatError) as caught:
        get_format(name).parse_record(record)
    if field is not None:
        assert caught.value.field == field
    else:
        assert caught.value.field


@pytest.mark.parametrize("name", ["atp", "llmi", "mms", "agentic-mme"])
@pytest.mark.parametrize("record", ["not json", "[1, 2]", 7, None])
def test_a_record_that_is_not_an_object_is_refused(name: str, record: Any) -> None:
    with pytest.raises(FormatError):
        get_format(name).parse_record(record)
