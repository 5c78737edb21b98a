"""m&m's reader and writer: task rows, predictions and the tool set."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # pytest-django adds the project root; -p no:django does not
    sys.path.insert(0, str(ROOT))

from benchmark.formats import FormatError, ItemRecord, PlanRecord, mms  # noqa: E402
from tests.shared_data import SHARED_DATA, needs_data  # noqa: E402

DATA = SHARED_DATA / "mms"
pytestmark = needs_data("mms")


def split(records: list) -> tuple[dict[str, ItemRecord], dict[str, PlanRecord]]:
    items = {r.external_id: r for r in records if isinstance(r, ItemRecord)}
    predictions = {r.item_id: r for r in records if isinstance(r, PlanRecord)}
    return items, predictions


def test_tasks() -> None:
    items, _ = split(list(mms.read(DATA / "tasks.json")))
    assert len(items) == 15
    task = items["28"]
    assert task.query.startswith('"Could you take the image')  # user_request kept verbatim
    gold = task.plans[0]
    assert (gold.key, gold.form, gold.is_alternative, gold.origin) == (
        "gold",
        "json",
        False,
        "ground_truth",
    )
    assert [s["name"] for s in gold.steps] == ["image editing", "image captioning"]
    assert gold.steps[1]["args"] == {"image": "<node-0>.image"}
    assert gold.code.startswith("def solve():")
    assert len(task.plans) == 1

    alt = items["9008"].plans
    assert [p.key for p in alt] == ["gold", "alt:0"]
    assert alt[1].is_alternative and alt[1].steps[1]["name"] == "image classification"


def test_predictions() -> None:
    records = list(mms.read(DATA))
    kinds = [isinstance(r, ItemRecord) for r in records]
    assert kinds == sorted(kinds, reverse=True)
    items, predictions = split(records)
    assert set(predictions) == set(items)
    first = predictions["8"]
    assert (first.key, first.origin, first.model_name, first.source_file) == (
        "pred:predictions.jsonl",
        "model",
        "predictions",
        "predictions.jsonl",
    )
    assert first.form == "json" and first.steps == items["8"].plans[0].steps
    assert predictions["9005"].form == "code"
    assert predictions["9005"].code.startswith("def solve():")
    assert predictions["9010"].form == "raw"
    assert predictions["9010"].code.startswith("# RESULT #:")
    assert predictions["9008"].steps == items["9008"].plans[1].steps
    forms = {p.form for k, p in predictions.items() if k not in ("9005", "9010")}
    assert forms == {"json"}


@pytest.mark.parametrize(
    ("value", "form"),
    [
        ([{"id": 0, "name": "count", "args": {}}], "json"),
        ({"nodes": [{"id": 0}]}, "json"),
        ('[{"id": 0, "name": "count"}]', "json"),
        ("[{'id': 0, 'name': 'count'}]", "json"),
        ("def solve():\n    return {}\n", "code"),
        ("I think you should call count", "raw"),
        ("[1, 2", "raw"),
        (None, "raw"),
        ([1, 2], "raw"),
    ],
)
def test_parse_prediction(value: object, form: str) -> None:
    assert mms.parse_prediction(value)[0] == form


def test_toolset() -> None:
    toolset = mms.load_toolset(DATA / "tool_metadata.json", DATA / "tool_graph.json")
    assert len(toolset["tools"]) == 33 and len(toolset["edges"]) == 149
    vqa = next(t for t in toolset["tools"] if t["name"] == "visual question answering")
    assert vqa["inputs"] == [
        {"name": "image", "modality": "image"},
        {"name": "question", "modality": "text"},
    ]
    assert vqa["outputs"] == [{"name": "text", "modality": "text"}]
    assert toolset["unknown_next_tools"] == ["get today news", "text to audio", "text translation"]
    derived = mms.load_toolset(DATA / "tool_metadata.json")
    pairs = {(e["source"], e["target"]) for e in derived["edges"]}
    assert pairs == {(e["source"], e["target"]) for e in toolset["edges"]}


def test_edits_show_up_in_export(tmp_path: Path) -> None:
    records = list(mms.read(DATA))
    items, predictions = split(records)
    items["9001"].query = "A fact about July 21?"
    items["9001"].plans[0].steps = [{"id": 0, "name": "get date fact", "args": {"date": "July 21"}}]
    items["9003"].plans.append(
        PlanRecord(item_id="9003", key="alt:0", steps=[{"id": 0}], is_alternative=True)
    )
    predictions["9010"].form = "json"
    predictions["9010"].steps = [{"id": 0, "name": "text summarization", "args": {"text": "x"}}]
    paths = mms.write(tmp_path, items.values(), predictions.values())
    assert paths == [tmp_path / "tasks.json", tmp_path / "predictions.jsonl"]

    before = orjson.loads((DATA / "tasks.json").read_bytes())
    after = orjson.loads((tmp_path / "tasks.json").read_bytes())
    changed = {3: "9001", 5: "9003"}
    for i, (old, new) in enumerate(zip(before, after, strict=True)):
        if i not in changed:
            assert new == old
    assert after[3]["user_request"] == "A fact about July 21?"
    assert after[3]["id"] == 9001  # still an int
    assert ast.literal_eval(after[3]["plan_str"]) == items["9001"].plans[0].steps
    assert after[3]["code_str"] == before[3]["code_str"]
    assert ast.literal_eval(after[5]["alt_plans_str"]) == [[{"id": 0}]]
    assert after[4]["alt_plans_str"] is None

    lines_before = (DATA / "predictions.jsonl").read_text().splitlines()
    lines_after = (tmp_path / "predictions.jsonl").read_text().splitlines()
    assert [a for a, b in zip(lines_after, lines_before, strict=True) if a != b] == [
        lines_after[12]
    ]
    assert orjson.loads(lines_after[12]) == {"id": 9010, "prediction": predictions["9010"].steps}


def write_tasks(tmp_path: Path, rows: list) -> Path:
    path = tmp_path / "tasks.json"
    path.write_bytes(orjson.dumps(rows))
    return path


def sample_task() -> dict:
    return orjson.loads((DATA / "tasks.json").read_bytes())[0]


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"plan_str": "[{'id': 0,"}, "plan_str", "not a valid Python literal"),
        ({"plan_str": "print('hi')"}, "plan_str", "not a valid Python literal"),
        ({"plan_str": "{'id': 0}"}, "plan_str", "list of steps"),
        ({"plan_str": "[1, 2]"}, "plan_str[0]", "object"),
        ({"plan_str": "[{1, 2}]"}, "plan_str", "JSON cannot carry"),
        ({"plan_str": None}, "plan_str", "missing"),
        ({"user_request": None}, "user_request", "null"),
        ({"user_request": 5}, "user_request", "string"),
        ({"alt_plans_str": "[[{'id': 0}], 'x']"}, "alt_plans_str[1]", "list of steps"),
        ({"alt_plans_str": "nope("}, "alt_plans_str", "not a valid Python literal"),
        ({"code_str": 1}, "code_str", "string"),
    ],
)
def test_bad_tasks(tmp_path: Path, change: dict, field: str, message: str) -> None:
    path = write_tasks(tmp_path, [sample_task() | change])
    with pytest.raises(FormatError, match=message) as info:
        list(mms.read(path))
    assert info.value.field == field and info.value.record == "8"
    assert info.value.file == "tasks.json"


def test_missing_id_and_jsonl_rows(tmp_path: Path) -> None:
    row = sample_task()
    del row["id"]
    with pytest.raises(FormatError) as info:
        list(mms.read(write_tasks(tmp_path, [sample_task(), row])))
    assert info.value.record == 1 and info.value.field == "id"

    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_bytes(orjson.dumps(sample_task()) + b"\n")
    (item,) = mms.read(jsonl)
    assert item.external_id == "8" and item.source_file == "rows.jsonl"
    mms.write(tmp_path / "out", [item])
    assert (tmp_path / "out" / "rows.jsonl").read_bytes() == jsonl.read_bytes()


def test_bad_predictions(tmp_path: Path) -> None:
    path = tmp_path / "preds.jsonl"
    path.write_text('{"id": 1, "prediction": []}\n{"id": 2}\n')
    with pytest.raises(FormatError) as info:
        list(mms.read(path))
    assert info.value.record == "2" and info.value.field == "prediction"
    path.write_text('{"id": 1, "prediction": []}\n{"id": 1, "prediction": []}\n')
    with pytest.raises(FormatError, match="duplicate"):
        list(mms.read(path))


def test_bad_toolset(tmp_path: Path) -> None:
    meta = tmp_path / "meta.json"
    meta.write_text('[{"name": "a", "input": {"arg_name": ["x"], "modality": []}}]')
    with pytest.raises(FormatError, match="same length") as info:
        mms.load_toolset(meta)
    assert info.value.record == "a" and info.value.field == "input"
    meta.write_text('[{"name": "a"}]')
    graph = tmp_path / "graph.json"
    graph.write_text('{"edges": [["a", "b"]]}')
    with pytest.raises(FormatError, match="unknown tool 'b'"):
        mms.load_toolset(meta, graph)


def test_a_task_carries_its_input_images_and_files_only_when_it_has_some(tmp_path: Path) -> None:
    row = sample_task() | {"images": ["images/photo.png"], "input_files": ["song.mp3"]}
    path = write_tasks(tmp_path, [sample_task(), row | {"id": 9}])
    plain, written = mms.read(path)
    assert isinstance(plain, ItemRecord) and isinstance(written, ItemRecord)
    assert (plain.images, plain.constraints, plain.modality) == ([], {}, "text")
    assert [(im.path, im.role) for im in written.images] == [("images/photo.png", "input")]
    assert written.constraints == {"input_files": ["song.mp3"]} and written.modality == "image"

    # A new task (no raw row) writes them; a dataset row without them gains no keys.
    new = mms.parse_record(row | {"id": 10})
    new.raw = ""
    mms.write(tmp_path / "out", [plain, new])
    out = orjson.loads((tmp_path / "out" / "tasks.json").read_bytes())
    assert out[0] == sample_task()
    assert out[1]["images"] == ["images/photo.png"] and out[1]["input_files"] == ["song.mp3"]
    # Removing the files of a row that had them leaves empty lists, read as none.
    written.images, written.constraints = [], {}
    mms.write(tmp_path / "again", [written])
    (again,) = orjson.loads((tmp_path / "again" / "tasks.json").read_bytes())
    assert again["images"] == [] and again["input_files"] == []


def test_input_files_must_be_lists_of_names(tmp_path: Path) -> None:
    path = write_tasks(tmp_path, [sample_task() | {"images": "photo.png"}])
    with pytest.raises(FormatError, match="list of strings") as info:
        list(mms.read(path))
    assert info.value.field == "images"
