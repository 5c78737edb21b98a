"""LLM-I reader and writer: benchmark rows, training rows and model answers."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # pytest-django adds the project root; -p no:django does not
    sys.path.insert(0, str(ROOT))

from benchmark.formats import FormatError, ItemRecord, ResponseRecord, llmi  # noqa: E402
from tests.shared_data import SHARED_DATA, needs_data  # noqa: E402

DATA = SHARED_DATA / "llmi"
pytestmark = needs_data("llmi")


def split(records: list) -> tuple[dict[str, ItemRecord], list[ResponseRecord]]:
    items = {r.external_id: r for r in records if isinstance(r, ItemRecord)}
    answers = [r for r in records if isinstance(r, ResponseRecord)]
    return items, answers


def test_folder_reads_rows_before_answers() -> None:
    records = list(llmi.read(DATA))
    kinds = [isinstance(r, ItemRecord) for r in records]
    assert kinds == sorted(kinds, reverse=True)  # every item precedes every answer
    items, answers = split(records)
    assert len(items) == 16 and len(answers) == 10
    assert {i.split("#")[0] for i in items} == {"text_only", "mm_input", "train_sample"}


def test_benchmark_rows() -> None:
    items, _ = split(list(llmi.read(DATA)))
    row = items["text_only#1"]
    assert row.source_file == "text_only.json" and row.position == 0
    assert row.modality == "text" and row.images == []
    assert [c["key"] for c in row.rubric] == [f"r{n}" for n in range(1, 11)]
    assert row.rubric[0]["text"].startswith("Does the report include a line chart")
    assert row.query.startswith("I run a small specialty coffee roastery")

    mm = items["mm_input#4"]
    assert mm.modality == "image"
    assert [(im.path, im.role, im.position) for im in mm.images] == [
        ("images/mm_04_shelf_before.png", "input", 0),
        ("images/mm_04_plant.png", "input", 1),
    ]
    for image in mm.images:
        assert (DATA / image.path).is_file()


def test_training_rows_keep_the_image_number_constraint() -> None:
    items, _ = split(list(llmi.read(DATA / "train_sample.json")))
    rows = [items[f"train_sample#{n}"] for n in range(1, 7)]
    assert [r.constraints["image_num"] for r in rows] == [1, -1, 0, 99, 1, 3]
    assert [r.constraints["image_count"] for r in rows] == [
        {"kind": "exact", "n": 1},
        {"kind": "none", "n": None},
        {"kind": "any", "n": None},
        {"kind": "at_least_one", "n": None},
        {"kind": "exact", "n": 1},
        {"kind": "exact", "n": 3},
    ]
    assert rows[0].constraints["tools"] == ["code"]
    assert rows[0].modality == "text"
    assert rows[4].modality == "image"
    assert rows[4].images[0].path == "images/train_mm_campsite_map.png"
    assert rows[4].query.startswith("This is the map of our campsite.")


@pytest.mark.parametrize(
    ("value", "kind", "n"),
    [(-1, "none", None), (0, "any", None), (2, "exact", 2), (99, "at_least_one", None)]
    + [("Inf", "at_least_one", None), ("inf", "at_least_one", None), ("3", "exact", 3)]
    + [(float("inf"), "at_least_one", None), (4.0, "exact", 4)],
)
def test_image_count(value: object, kind: str, n: int | None) -> None:
    assert llmi.image_count(value) == {"kind": kind, "n": n}


def test_answers_attach_to_the_right_prompts() -> None:
    items, answers = split(list(llmi.read(DATA)))
    source = orjson.loads((DATA / "answers.json").read_bytes())
    assert [a.key for a in answers] == [f"answers.json#{i}" for i in range(10)]
    for answer, record in zip(answers, source, strict=True):
        row = items[answer.item_id]
        assert row.query == record["prompt"] == answer.extra["prompt"]
        assert row.source_file == record["input_file"]
        assert answer.origin == "model" and answer.model_name == "answers"
        assert answer.text == record["answer"]
        assert answer.extra["scores"] == record["scores"]
        assert orjson.loads(answer.raw) == record
    assert answers[0].item_id == "text_only#1"
    assert answers[7].item_id == "mm_input#3"
    assert answers[4].extra["scores"]["r10"] == -1


def test_answers_file_alone_resolves_with_its_siblings() -> None:
    records = list(llmi.read(DATA / "answers.json"))
    assert all(isinstance(r, ResponseRecord) for r in records)
    assert [r.item_id for r in records] == [
        *(f"text_only#{n}" for n in range(1, 6)),
        *(f"mm_input#{n}" for n in range(1, 6)),
    ]


def copy_rows(tmp_path: Path) -> list[dict]:
    for name in ("text_only.json", "mm_input.json"):
        shutil.copy(DATA / name, tmp_path / name)
    return orjson.loads((DATA / "answers.json").read_bytes())


def test_answers_without_input_file_resolve_by_prompt(tmp_path: Path) -> None:
    answers = copy_rows(tmp_path)
    for a in answers:
        del a["input_file"]
    (tmp_path / "answers.json").write_bytes(orjson.dumps(answers))
    _, resolved = split(list(llmi.read(tmp_path)))
    assert [r.item_id for r in resolved][:2] == ["text_only#1", "text_only#2"]
    assert resolved[5].item_id == "mm_input#1"


def test_zero_based_or_shuffled_indices_still_resolve(tmp_path: Path) -> None:
    answers = copy_rows(tmp_path)
    for a in answers:
        a["sample_index"] -= 1  # 0-based
    answers[0]["sample_index"], answers[1]["sample_index"] = 1, 0  # and two swapped
    (tmp_path / "answers.json").write_bytes(orjson.dumps(answers))
    items, resolved = split(list(llmi.read(tmp_path)))
    for answer in resolved:
        assert items[answer.item_id].query == answer.extra["prompt"]


def test_answers_alone_without_rows_use_the_file_and_index(tmp_path: Path) -> None:
    shutil.copy(DATA / "answers.json", tmp_path / "answers.json")
    records = list(llmi.read(tmp_path / "answers.json"))
    assert records[2].item_id == "text_only#3"
    answers = orjson.loads((DATA / "answers.json").read_bytes())
    del answers[0]["input_file"]
    (tmp_path / "answers.json").write_bytes(orjson.dumps(answers))
    with pytest.raises(FormatError) as info:
        list(llmi.read(tmp_path / "answers.json"))
    assert info.value.field == "input_file" and info.value.record == 0
    hinted = list(llmi.read(tmp_path / "answers.json", benchmark_file="text_only.json"))
    assert hinted[0].item_id == "text_only#1"


def test_edits_show_up_in_export(tmp_path: Path) -> None:
    records = list(llmi.read(DATA))
    items, answers = split(records)
    items["text_only#2"].query = "New prompt"
    items["text_only#2"].rubric = items["text_only#2"].rubric[:9]  # drop r10
    items["train_sample#5"].query = "Mark the lake instead."
    items["train_sample#6"].constraints["image_count"] = {"kind": "at_least_one", "n": None}
    answers[0].text = "Shorter answer."
    answers[0].extra["scores"] = {**answers[0].extra["scores"], "r1": 0}
    llmi.write(tmp_path, list(items.values()), answers)

    def load(name: str, folder: Path) -> list:
        return orjson.loads((folder / name).read_bytes())

    text_before, text_after = load("text_only.json", DATA), load("text_only.json", tmp_path)
    assert text_after[0] == text_before[0] and text_after[2:] == text_before[2:]
    expected = {k: v for k, v in text_before[1].items() if k != "r10"} | {"prompt": "New prompt"}
    assert text_after[1] == expected

    train_before, train_after = load("train_sample.json", DATA), load("train_sample.json", tmp_path)
    assert train_after[:4] == train_before[:4]
    edited = train_after[4]
    assert edited["extra_info"]["question"] == "Mark the lake instead."
    assert edited["prompt"] == [{"role": "user", "content": "<image>\nMark the lake instead."}]
    assert train_after[5]["extra_info"]["image_num"] == 99
    assert {k: v for k, v in train_after[5].items() if k != "extra_info"} == {
        k: v for k, v in train_before[5].items() if k != "extra_info"
    }

    answers_before, answers_after = load("answers.json", DATA), load("answers.json", tmp_path)
    assert answers_after[1:] == answers_before[1:]
    assert answers_after[0] == answers_before[0] | {
        "answer": "Shorter answer.",
        "scores": {**answers_before[0]["scores"], "r1": 0},
    }


def test_new_rows_and_answers_without_raw(tmp_path: Path) -> None:
    row = ItemRecord(
        external_id="text_only#1",
        source_file="",
        raw="",
        query="Draw a cat.",
        rubric=[{"key": "r1", "text": "Is there a cat?"}],
    )
    answer = ResponseRecord(item_id="text_only#1", key="x", text="<imgen>...</imgen>")
    llmi.write(tmp_path, [row], [answer])
    assert orjson.loads((tmp_path / "text_only.json").read_bytes()) == [
        {"prompt": "Draw a cat.", "r1": "Is there a cat?"}
    ]
    written = orjson.loads((tmp_path / "answers.json").read_bytes())[0]
    assert written["input_file"] == "text_only.json" and written["sample_index"] == 1
    _, back = split(list(llmi.read(tmp_path)))
    assert back[0].item_id == "text_only#1"


@pytest.mark.parametrize(
    ("content", "record", "field"),
    [
        ([{"r1": "x"}], 0, None),  # not an LLM-I record at all
        ([{"prompt": "a"}, {"r1": "x"}], "text_only#2", "prompt"),
        ([{"prompt": "a", "r1": 5}], "text_only#1", "r1"),
        ([{"prompt": "a", "images": [1]}], "text_only#1", "images[0]"),
        ([{"prompt": "a"}, 7], "text_only#2", None),
    ],
)
def test_bad_rows(tmp_path: Path, content: list, record: object, field: str | None) -> None:
    path = tmp_path / "text_only.json"
    path.write_bytes(orjson.dumps(content))
    with pytest.raises(FormatError) as info:
        list(llmi.read(path))
    assert info.value.file == "text_only.json"
    assert info.value.record == record and info.value.field == field


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"image_num": -2}, "extra_info.image_num"),
        ({"image_num": "many"}, "extra_info.image_num"),
        ({"image_num": True}, "extra_info.image_num"),
        ({"tools": "code"}, "extra_info.tools"),
        ({"question": 1}, "extra_info.question"),
    ],
)
def test_bad_training_rows(tmp_path: Path, extra: dict, field: str) -> None:
    path = tmp_path / "train.json"
    path.write_bytes(orjson.dumps([{"prompt": "p", "data_source": "x", "extra_info": extra}]))
    with pytest.raises(FormatError) as info:
        list(llmi.read(path))
    assert info.value.field == field and info.value.record == "train#1"


def test_bad_answers(tmp_path: Path) -> None:
    copy_rows(tmp_path)
    path = tmp_path / "answers.json"
    path.write_bytes(
        orjson.dumps([{"input_file": "text_only.json", "sample_index": 9, "answer": ""}])
    )
    with pytest.raises(FormatError) as info:
        list(llmi.read(tmp_path))
    assert info.value.field == "sample_index" and info.value.file == "answers.json"
    path.write_bytes(orjson.dumps([{"input_file": "text_only.json", "sample_index": 1}]))
    with pytest.raises(FormatError, match="missing") as info:
        list(llmi.read(tmp_path))
    assert info.value.field == "answer"
