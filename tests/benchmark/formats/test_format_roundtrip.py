"""Every sample file survives read -> write unchanged as JSON values, and an edit to one item
changes exactly that field of that record."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # pytest-django adds the project root; -p no:django does not
    sys.path.insert(0, str(ROOT))

from benchmark.formats import ItemRecord, get_format  # noqa: E402
from benchmark.formats.mms import TOOLSET_FILES, load_toolset  # noqa: E402
from tests.shared_data import SHARED_DATA, needs_data  # noqa: E402

DATA = SHARED_DATA
FOLDERS = {"atp": "atp", "llmi": "llmi", "agentic-mme": "agentic-mme", "mms": "mms"}
pytestmark = needs_data()


def data_files(folder: Path) -> list[Path]:
    """The record files of one sample dataset (images and the m&m's tool set aside)."""
    if not folder.is_dir():
        return []
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and p.suffix in (".json", ".jsonl", ".txt") and p.name not in TOOLSET_FILES
    )


def all_sample_files() -> list[tuple[str, Path]]:
    return [(fmt, p) for fmt, sub in FOLDERS.items() for p in data_files(DATA / sub)]


def value_of(path: Path) -> Any:
    data = path.read_bytes()
    if path.suffix == ".txt":
        return data.decode("utf-8")
    if path.suffix == ".jsonl":
        return [orjson.loads(line) for line in data.splitlines() if line.strip()]
    return orjson.loads(data)


def roundtrip(fmt: str, source: Path, out: Path) -> list[Path]:
    module = get_format(fmt)
    records = list(module.read(source))
    items = [r for r in records if isinstance(r, ItemRecord)]
    attachments = [r for r in records if not isinstance(r, ItemRecord)]
    return module.write(out, items, attachments)


def test_every_sample_dataset_is_covered() -> None:
    files = all_sample_files()
    assert {fmt for fmt, _ in files} == set(FOLDERS)
    assert len(files) >= 17  # 1 ATP, 4 LLM-I, 6 tasks + 2 runs x 2 Agentic-MME, 2 m&m's


@pytest.mark.parametrize("fmt", list(FOLDERS))
def test_dataset_folder_roundtrip(fmt: str, tmp_path: Path) -> None:
    source = DATA / FOLDERS[fmt]
    written = roundtrip(fmt, source, tmp_path)
    originals = data_files(source)
    assert sorted(p.relative_to(tmp_path) for p in written) == [
        p.relative_to(source) for p in originals
    ]
    for original in originals:
        copy = tmp_path / original.relative_to(source)
        assert value_of(copy) == value_of(original), original.relative_to(source)


def single_source(fmt: str, path: Path) -> Path:
    """What to hand to ``read`` to get this one file back: the file, or for an Agentic-MME run,
    its folder."""
    if fmt == "agentic-mme" and path.parent.parent.name == "runs":
        return path.parent
    return path


@pytest.mark.parametrize(
    ("fmt", "path"),
    all_sample_files(),
    ids=[f"{fmt}:{p.relative_to(DATA / FOLDERS[fmt])}" for fmt, p in all_sample_files()],
)
def test_each_sample_file_roundtrips_alone(fmt: str, path: Path, tmp_path: Path) -> None:
    root = DATA / FOLDERS[fmt]
    relative = path.relative_to(root)
    out = tmp_path / "out.jsonl" if fmt == "atp" else tmp_path
    written = roundtrip(fmt, single_source(fmt, path), out)
    target = out if fmt == "atp" else tmp_path / relative
    assert target in written
    assert value_of(target) == value_of(path)


def first_item_edit(fmt: str, tmp_path: Path) -> tuple[Path, Path]:
    module = get_format(fmt)
    source = DATA / FOLDERS[fmt]
    records = list(module.read(source))
    item = next(r for r in records if isinstance(r, ItemRecord))
    item.query = "EDITED QUERY"
    module.write(
        tmp_path,
        [r for r in records if isinstance(r, ItemRecord)],
        [r for r in records if not isinstance(r, ItemRecord)],
    )
    return source, Path(item.source_file)


QUERY_KEY = {"atp": ("query",), "llmi": ("prompt",), "mms": ("user_request",)}


@pytest.mark.parametrize("fmt", list(FOLDERS))
def test_query_edit_changes_only_that_field(fmt: str, tmp_path: Path) -> None:
    source, edited_file = first_item_edit(fmt, tmp_path)
    for original in data_files(source):
        relative = original.relative_to(source)
        before, after = value_of(original), value_of(tmp_path / relative)
        if relative != edited_file:
            assert after == before, relative
            continue
        if fmt == "agentic-mme":
            before["input"]["prompt"] = "EDITED QUERY"
        else:
            before[0][QUERY_KEY[fmt][0]] = "EDITED QUERY"
        assert after == before


def test_toolset_files_load() -> None:
    folder = DATA / "mms"
    toolset = load_toolset(folder / "tool_metadata.json", folder / "tool_graph.json")
    metadata = value_of(folder / "tool_metadata.json")
    graph = value_of(folder / "tool_graph.json")
    assert [t["name"] for t in toolset["tools"]] == [t["name"] for t in metadata]
    assert [t["next_tools"] for t in toolset["tools"]] == [t["next_tools"] for t in metadata]
    assert [[e["source"], e["target"]] for e in toolset["edges"]] == graph["edges"]
