"""ATP-Bench data.jsonl reader and writer."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # pytest-django adds the project root; -p no:django does not
    sys.path.insert(0, str(ROOT))

from benchmark.formats import FormatError, ItemRecord, atp  # noqa: E402
from tests.shared_data import SHARED_DATA, needs_data  # noqa: E402

DATA = SHARED_DATA / "atp"
pytestmark = needs_data("atp")


def items_by_id(path: Path) -> dict[str, ItemRecord]:
    return {item.external_id: item for item in atp.read(path)}


def test_reads_sample_rows() -> None:
    items = items_by_id(DATA)
    assert len(items) == 12
    assert list(items)[:3] == ["atp_0001", "atp_0002", "atp_0003"]

    vqa = items["atp_0005"]
    assert vqa.modality == "image"
    query_images = [im for im in vqa.images if im.role == "query"]
    assert [im.path for im in query_images] == ["images/atp_0005_query.png"]
    documents = [im for im in vqa.images if im.role == "document"]
    assert [(im.position, im.path) for im in documents] == [
        (k, f"images/atp_0005_{k}.png") for k in range(4)
    ]
    assert vqa.category == "Fashion" and vqa.intent == "Hairstyle"
    assert len(vqa.documents) == 3
    assert vqa.documents[0]["images"] == ["images/atp_0005_0.png", "images/atp_0005_1.png"]

    qa = items["atp_0001"]
    assert qa.modality == "text"
    assert qa.source_file == "data.jsonl" and qa.position == 0
    assert [r.key for r in qa.responses] == ["gt"]
    gt = qa.responses[0]
    assert gt.origin == "ground_truth" and gt.item_id == "atp_0001"
    assert gt.text.startswith("LumenCap produces a caption in four stages.")
    # raw is the exact line of the file
    first_line = (DATA / "data.jsonl").read_text().splitlines()[0]
    assert qa.raw == first_line


def test_file_and_folder_give_the_same_records() -> None:
    assert list(atp.read(DATA)) == list(atp.read(DATA / "data.jsonl"))


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def sample_lines() -> list[str]:
    return (DATA / "data.jsonl").read_text(encoding="utf-8").splitlines()


def test_edit_shows_up_in_export_and_nothing_else_changes(tmp_path: Path) -> None:
    items = list(atp.read(DATA))
    items[4].query = "Which haircut suits a round face?"
    items[4].responses[0].text = "Fixed answer."
    items[2].category = "Cooking"
    paths = atp.write(tmp_path, items)
    assert paths == [tmp_path / "data.jsonl"]

    before = sample_lines()
    after = (tmp_path / "data.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(after) == len(before)
    for i, (old, new) in enumerate(zip(before, after, strict=True)):
        if i not in (2, 4):
            assert new == old  # untouched records are written byte for byte
    edited = orjson.loads(after[4])
    expected = orjson.loads(before[4]) | {
        "query": "Which haircut suits a round face?",
        "gt": "Fixed answer.",
    }
    assert edited == expected
    assert list(edited) == list(orjson.loads(before[4]))  # key order kept
    assert orjson.loads(after[2]) == orjson.loads(before[2]) | {"category": "Cooking"}


def test_write_to_named_file_sorts_by_position(tmp_path: Path) -> None:
    items = list(atp.read(DATA))
    out = tmp_path / "export" / "mine.jsonl"
    assert atp.write(out, reversed(items)) == [out]
    assert out.read_text(encoding="utf-8").splitlines() == sample_lines()
    assert not list(out.parent.glob(".*.part"))


def test_item_without_raw_gets_a_full_record(tmp_path: Path) -> None:
    template = next(iter(atp.read(DATA)))
    new = ItemRecord(
        external_id="atp_new",
        source_file="",
        raw="",
        query="What is this?",
        images=template.images,
        documents=template.documents,
        category="Academic",
        intent="Framework",
    )
    atp.write(tmp_path, [new])
    record = orjson.loads((tmp_path / "data.jsonl").read_bytes())
    assert record["trace_id"] == "atp_new"
    assert record["query"] == "What is this?"
    assert record["image_query"] is None
    assert record["images"] == [im.path for im in template.images]
    assert record["doc"] == template.documents
    assert list(atp.read(tmp_path))[0].query == "What is this?"


def test_int_trace_id_and_null_fields_survive(tmp_path: Path) -> None:
    line = '{"trace_id": 7, "query": "q", "image_query": null, "gt": null, "category": null}'
    src = write_lines(tmp_path / "in.jsonl", [line])
    (item,) = atp.read(src)
    assert item.external_id == "7" and item.category == "" and item.responses[0].text == ""
    out = tmp_path / "out.jsonl"
    atp.write(out, [item])
    assert out.read_text().strip() == line
    item.query = "changed"
    atp.write(out, [item])
    assert orjson.loads(out.read_bytes()) == orjson.loads(line) | {"query": "changed"}


def test_trailing_garbage_line_is_located(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "data.jsonl", [*sample_lines(), "{not json"])
    with pytest.raises(FormatError) as info:
        list(atp.read(src))
    err = info.value
    assert err.file == "data.jsonl" and err.record == "line 13"
    assert "line 13" in str(err) and "not valid JSON" in str(err)


def test_missing_trace_id_names_record_and_field(tmp_path: Path) -> None:
    record = orjson.loads(sample_lines()[1])
    del record["trace_id"]
    src = write_lines(tmp_path / "data.jsonl", [sample_lines()[0], orjson.dumps(record).decode()])
    with pytest.raises(FormatError) as info:
        list(atp.read(src))
    assert info.value.record == "line 2" and info.value.field == "trace_id"
    assert "missing" in str(info.value)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"query": None}, "query"),
        ({"query": ""}, "query"),
        ({"query": 3}, "query"),
        ({"images": ["a.png", 4]}, "images[1]"),
        ({"images": "a.png"}, "images"),
        ({"doc": [{"text": "x", "images": [1]}]}, "doc[0].images[0]"),
        ({"doc": 5}, "doc"),
        ({"image_query": 5}, "image_query"),
        ({"gt": ["x"]}, "gt"),
        ({"category": {}}, "category"),
    ],
)
def test_wrong_types_name_the_field(tmp_path: Path, change: dict, field: str) -> None:
    record = orjson.loads(sample_lines()[0]) | change
    src = write_lines(tmp_path / "data.jsonl", [orjson.dumps(record).decode()])
    with pytest.raises(FormatError) as info:
        list(atp.read(src))
    assert info.value.field == field
    assert info.value.record == "atp_0001"


def test_non_object_and_duplicate_records(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "data.jsonl", ["[1, 2]"])
    with pytest.raises(FormatError, match="must be a JSON object"):
        list(atp.read(src))
    first = sample_lines()[0]
    src = write_lines(tmp_path / "data.jsonl", [first, first])
    with pytest.raises(FormatError, match="duplicate") as info:
        list(atp.read(src))
    assert info.value.record == "atp_0001"


def test_missing_path_and_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="no such file"):
        list(atp.read(tmp_path / "nope.jsonl"))
    with pytest.raises(FormatError, match="data.jsonl"):
        list(atp.read(tmp_path))
