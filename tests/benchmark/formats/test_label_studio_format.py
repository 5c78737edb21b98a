"""Label Studio task JSON: reading with a field mapping, writing tasks Label Studio imports
(checked against its documented task format), and the round trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from benchmark.formats import FormatError, ImageRef, ItemRecord
from benchmark.formats import label_studio as ls

# A Label Studio export in the shape of the peers' generator: 3 tasks, 2 annotators (one
# exported with details, one by id), choices and a text area.
EXPORT: list[dict[str, Any]] = [
    {
        "id": 101,
        "data": {"question": "What is the capital of France?", "cat": "geo", "ref": "Paris"},
        "annotations": [
            {
                "id": 1,
                "completed_by": {"id": 7, "email": "ann@example.org"},
                "result": [
                    {
                        "id": "a1",
                        "from_name": "verdict",
                        "to_name": "query",
                        "type": "choices",
                        "value": {"choices": ["yes"]},
                    },
                    {
                        "id": "a2",
                        "from_name": "comment",
                        "to_name": "query",
                        "type": "textarea",
                        "value": {"text": ["fine"]},
                    },
                ],
            },
            {
                "id": 2,
                "completed_by": 8,
                "result": [
                    {
                        "from_name": "verdict",
                        "to_name": "query",
                        "type": "choices",
                        "value": {"choices": ["no"]},
                    }
                ],
            },
        ],
        "predictions": [],
    },
    {
        "id": 102,
        "data": {"question": "2 + 2?", "cat": "math"},
        "annotations": [
            {
                "completed_by": {"id": 7, "email": "ann@example.org"},
                "result": [
                    {
                        "from_name": "verdict",
                        "to_name": "query",
                        "type": "choices",
                        "value": {"choices": ["yes"]},
                    }
                ],
            }
        ],
        "predictions": [{"model_version": "m1", "result": []}],
    },
    {"id": 103, "data": {"question": "Name a prime.", "cat": "math"}, "annotations": []},
]

# Label Studio's documented task format (https://labelstud.io/guide/task_format.html, "Label
# Studio JSON format of annotated tasks" and "Relevant JSON property descriptions"): a task
# needs "data" (an object); each annotation needs "result" (a list); each result entry needs
# from_name, to_name, type and value; a choices value holds "choices" (a list of strings) and a
# textarea value holds "text" (a list of strings).
TASK_SCHEMA: dict[str, Any] = {
    "task": {"data": dict},
    "annotation": {"result": list},
    "result": {"from_name": str, "to_name": str, "type": str, "value": dict},
    "value": {"choices": {"choices": list}, "textarea": {"text": list}},
}


def _check_task(task: dict[str, Any], config: ElementTree.Element) -> None:
    for key, kind in TASK_SCHEMA["task"].items():
        assert isinstance(task.get(key), kind), key
    names = {el.get("name"): el for el in config.iter() if el.get("name")}
    for annotation in task.get("annotations", []):
        for key, kind in TASK_SCHEMA["annotation"].items():
            assert isinstance(annotation.get(key), kind), key
        for result in annotation["result"]:
            for key, kind in TASK_SCHEMA["result"].items():
                assert isinstance(result.get(key), kind), key
            # from_name / to_name name the config's control and object tags
            assert result["from_name"] in names and result["to_name"] in names
            for key, kind in TASK_SCHEMA["value"][result["type"]].items():
                assert isinstance(result["value"][key], kind)
                assert all(isinstance(v, str) for v in result["value"][key])
    # every $variable of the config is a data key of the task
    for el in config.iter():
        for attr in ("value", "valueList"):
            value = el.get(attr) or ""
            if value.startswith("$"):
                assert value[1:] in task["data"]
    # Image (https://labelstud.io/tags/image): valueList names a list of image URLs
    # (Label Studio 1.23.2's labeling view fails on a task whose list is empty)
    for el in config.iter("Image"):
        urls = task["data"][(el.get("valueList") or el.get("value", ""))[1:]]
        assert isinstance(urls, list) and urls and all(isinstance(u, str) for u in urls)
        assert all(u.startswith(("http://", "https://", "/", "data:image/")) for u in urls)
    # Paragraphs (https://labelstud.io/tags/paragraphs): its data is a list of objects, each
    # with the speaker under nameKey (default "author") and the text under textKey ("text")
    for el in config.iter("Paragraphs"):
        entries = task["data"][el.get("value", "")[1:]]
        assert isinstance(entries, list) and entries
        for entry in entries:
            assert isinstance(entry, dict)
            assert isinstance(entry.get(el.get("nameKey", "author")), str)
            assert isinstance(entry.get(el.get("textKey", "text")), str)


def _export(tmp_path: Path, tasks: Any = EXPORT) -> Path:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks, indent=2))
    return path


def test_read_maps_fields_and_keeps_task_json_and_annotations(tmp_path: Path) -> None:
    items, annotations = ls.read_tasks(
        _export(tmp_path), "question=query,cat=category,ref=expected_answer"
    )
    assert [i.external_id for i in items] == ["101", "102", "103"]
    assert items[0].query == "What is the capital of France?"
    assert items[0].category == "geo"
    assert items[0].expected_answer == "Paris"
    assert items[1].expected_answer == ""
    assert json.loads(items[0].raw) == EXPORT[0]  # the task's exact JSON
    assert items[0].raw.startswith('{\n    "id": 101')
    assert annotations == [  # the annotator's name, and their Label Studio id when given
        ls.Annotation("101", "ann@example.org", "verdict", "choices", ("yes",), "101", "7"),
        ls.Annotation("101", "ann@example.org", "comment", "textarea", ("fine",), "101", "7"),
        ls.Annotation("101", "8", "verdict", "choices", ("no",), "101", "8"),
        ls.Annotation("102", "ann@example.org", "verdict", "choices", ("yes",), "102", "7"),
    ]


def test_mapping_to_an_unknown_field_names_the_key() -> None:
    with pytest.raises(FormatError) as exc:
        ls.parse_mapping("question=query,cat=kategorie")
    assert exc.value.field == "cat"
    assert "kategorie" in str(exc.value)
    with pytest.raises(FormatError, match="KEY=FIELD"):
        ls.parse_mapping("question")


def test_a_missing_query_key_names_the_key_and_the_task(tmp_path: Path) -> None:
    with pytest.raises(FormatError) as exc:
        ls.read_tasks(_export(tmp_path), "prompt=query")
    assert exc.value.field == "prompt"
    assert exc.value.record == 101
    assert "question" in str(exc.value)  # says which keys the task has


def test_a_value_of_the_wrong_type_names_the_key(tmp_path: Path) -> None:
    tasks = [{"id": 1, "data": {"q": "x", "lvl": "high"}}]
    with pytest.raises(FormatError) as exc:
        ls.read_tasks(_export(tmp_path, tasks), "q=query,lvl=level")
    assert exc.value.field == "lvl"


def test_written_tasks_follow_the_documented_task_format(tmp_path: Path) -> None:
    items = [
        ItemRecord(external_id="a", source_file="x", raw="{}", query="Q1", category="c"),
        ItemRecord(external_id="b", source_file="x", raw="{}", query="Q2"),
    ]
    judgments = {
        "a": [ls.JudgmentOut("a", "correct", "ok"), ls.JudgmentOut("a", "wrong")],
    }
    paths = ls.write(
        tmp_path / "out.json", items, judgments=judgments, choices=["correct", "wrong"]
    )
    assert [p.name for p in paths] == ["out.json", "out.config.xml"]
    tasks = json.loads(paths[0].read_text())
    config = ElementTree.fromstring(paths[1].read_text())
    assert config.tag == "View"
    assert [c.get("value") for c in config.iter("Choice")] == ["correct", "wrong"]
    assert len(tasks) == 2
    for task in tasks:
        _check_task(task, config)
    assert tasks[0]["annotations"][0]["result"][0]["value"] == {"choices": ["correct"]}
    assert tasks[0]["annotations"][0]["result"][1]["value"] == {"text": ["ok"]}
    assert "annotations" not in tasks[1]


def test_the_schema_check_can_fail(tmp_path: Path) -> None:
    config = ElementTree.fromstring(ls.labeling_config(["x"]))
    with pytest.raises(AssertionError):
        _check_task({"data": {"query": "q"}, "annotations": [{"result": [{}]}]}, config)
    with pytest.raises(AssertionError):
        _check_task({"data": {"question": "q"}}, config)  # $query is not in data
    answers = ElementTree.fromstring(ls.labeling_config(answers_key="responses"))
    with pytest.raises(AssertionError):  # a paragraph with no speaker
        _check_task({"data": {"query": "q", "responses": [{"text": "t"}]}}, answers)


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    rec = ItemRecord(
        external_id="item-1",
        source_file="data.jsonl",
        raw="{}",
        query="Find the red car",
        modality="image",
        documents=[{"text": "doc", "images": ["a.png"]}],
        images=[ImageRef(path="a.png", role="query", position=0)],
        constraints={"max_tools": 3},
        expected_answer="left",
        accepted_variants=["Left"],
        match_type="exact",
        rubric=[{"key": "r1", "text": "names the side"}],
        category="vision",
        intent="locate",
        domain="cars",
        level=2,
        status="verified",
        provenance="human:alice",
    )
    mapping = "question=query,cat=category"  # renamed keys; the rest under their own names
    full = {**ls.parse_mapping(None), **ls.parse_mapping(mapping)}
    del full["query"], full["category"]
    ls.write(tmp_path / "t.json", [rec], mapping=full)
    (back,), _ = ls.read_tasks(tmp_path / "t.json", full)
    for name in ls.FIELDS:
        assert getattr(back, name) == getattr(rec, name), name
