"""What a Label Studio annotator sees: the labeling config shows the item's images (``<Image
valueList>`` over URLs Label Studio can load), its documents and its plan as numbered steps,
and the config is checked against the tasks written (well-formed, every ``$key`` in every
task's data)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit
from xml.etree import ElementTree

import pytest

from benchmark.formats import FormatError, ImageRef, ItemRecord, PlanRecord, ResponseRecord
from benchmark.formats import label_studio as ls
from tests.benchmark.formats.test_label_studio_format import _check_task


def _item(**fields: Any) -> ItemRecord:
    return ItemRecord(external_id=fields.pop("external_id", "i1"), source_file="x", raw="{}",
                      **fields)  # fmt: skip


def _written(tmp_path: Path, items: list[ItemRecord], **options: Any) -> tuple[list, Any]:
    paths = ls.write(tmp_path / "t.json", items, **options)
    tasks = json.loads(paths[0].read_text())
    config = ElementTree.fromstring(paths[1].read_text())
    for task in tasks:
        _check_task(task, config)
    return tasks, config


VQA = _item(
    external_id="vqa",
    query="Which street is this?",
    documents=[{"text": "Doc one", "images": ["images/d 0.png"]}, {"text": "Doc two"}],
    images=[
        ImageRef("images/d 0.png", "document", 0),
        ImageRef("images/d1.png", "document", 1),
        ImageRef("images/q.png", "query", 0),
    ],
)


def test_images_show_through_image_tags_with_loadable_urls(tmp_path: Path) -> None:
    tasks, config = _written(tmp_path, [VQA], image_base_url="https://cdn.example.org/bw")
    data = tasks[0]["data"]
    assert data[ls.QUERY_IMAGES_KEY] == ["https://cdn.example.org/bw/images/q.png"]
    assert data[ls.DOCUMENT_IMAGES_KEY] == [  # in img_index order, paths quoted
        "https://cdn.example.org/bw/images/d%200.png",
        "https://cdn.example.org/bw/images/d1.png",
    ]
    images = {el.get("name"): el.get("valueList") for el in config.iter("Image")}
    assert images == {
        "query_images": f"${ls.QUERY_IMAGES_KEY}",
        "document_images": f"${ls.DOCUMENT_IMAGES_KEY}",
    }
    # the documents as paragraphs, the stored paths kept for the round trip
    assert data[ls.DOCUMENTS_KEY] == [
        {"document": "Document 1", "text": "Doc one"},
        {"document": "Document 2", "text": "Doc two"},
    ]
    assert [i["path"] for i in data["images"]] == [
        "images/d 0.png",
        "images/d1.png",
        "images/q.png",
    ]
    (back,), _ = ls.read_tasks(tmp_path / "t.json")
    assert back.images == VQA.images and back.documents == VQA.documents


def test_by_default_images_are_label_studio_local_files(tmp_path: Path) -> None:
    tasks, _ = _written(tmp_path, [VQA])
    (url,) = tasks[0]["data"][ls.QUERY_IMAGES_KEY]
    parts = urlsplit(url)
    assert parts.path == "/data/local-files/"
    assert parse_qs(parts.query) == {"d": ["images/q.png"]}  # relative to the document root
    tasks, _ = _written(tmp_path, [VQA], image_base_url="/data/local-files/?d=exports/bw")
    (first, _) = tasks[0]["data"][ls.DOCUMENT_IMAGES_KEY]
    assert parse_qs(urlsplit(first).query) == {"d": ["exports/bw/images/d 0.png"]}


@pytest.mark.parametrize(
    "bad", ["javascript:alert(1)", "ftp://host/x", "images/", "https://h/x y", 'https://h/"x']
)
def test_a_base_url_that_is_no_http_url_or_path_is_refused(bad: str) -> None:
    with pytest.raises(FormatError, match="image base URL"):
        ls.image_base(bad)


PLAN = PlanRecord(
    item_id="p1",
    key="gt",
    steps=[
        {"id": 0, "name": "wikipedia simple search", "args": {"text": "Ada Lovelace"}},
        {"id": 1, "name": "text summarization", "args": {"text": "<node-0>.text"}},
    ],
)


def test_the_plan_shows_as_numbered_steps(tmp_path: Path) -> None:
    alternative = PlanRecord(item_id="p1", key="alt", is_alternative=True,
                             steps=[{"id": 0, "name": "text generation", "args": {"text": "x"}}])  # fmt: skip
    predicted = PlanRecord(item_id="p1", key="m", origin="model", steps=[{"name": "nope"}])
    item = _item(external_id="p1", query="Summarize Ada Lovelace's life",
                 plans=[PLAN, alternative, predicted])  # fmt: skip
    other = _item(external_id="p2", query="No plan yet")
    tasks, config = _written(tmp_path, [item, other], choices=[1, 0])
    assert tasks[0]["data"][ls.PLAN_KEY] == [
        {"step": "Ground truth", "text": '1. wikipedia simple search(text="Ada Lovelace")'},
        {"step": "Ground truth", "text": '2. text summarization(text="<node-0>.text")'},
        {"step": "Alternative plan", "text": '1. text generation(text="x")'},
    ]  # the model's prediction is not what is judged
    # an item with no plan shows a placeholder (Label Studio fails on an empty list)
    assert tasks[1]["data"][ls.PLAN_KEY] == [{"step": "-", "text": "(no plan)"}]
    (plan,) = [p for p in config.iter("Paragraphs") if p.get("name") == "plan"]
    assert (plan.get("value"), plan.get("nameKey"), plan.get("textKey")) == (
        f"${ls.PLAN_KEY}",
        "step",
        "text",
    )
    assert [c.get("value") for c in config.iter("Choice")] == ["1", "0"]
    assert config.find("Text").get("value") == "$query"


def test_a_code_plan_shows_its_code() -> None:
    rec = PlanRecord(item_id="i", key="gt", form="code", code="def solve():\n    return 1\n")
    assert ls.plan_paragraphs([rec]) == [
        {"step": "Ground truth", "text": "def solve():\n    return 1\n"}
    ]


def test_items_without_images_documents_or_plans_are_written_as_before(tmp_path: Path) -> None:
    tasks, config = _written(tmp_path, [_item(query="Q", category="c")])
    assert set(tasks[0]["data"]) == set(ls.FIELDS)
    assert [el.tag for el in config] == ["Text", "TextArea"]


def test_a_mapping_may_not_take_a_key_of_the_view(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match=ls.PLAN_KEY):
        ls.write(tmp_path / "t.json", [VQA], mapping=f"{ls.PLAN_KEY}=query")


def test_check_config_names_what_is_wrong() -> None:
    config = ls.labeling_config(["yes"], views=[ls.QUERY_IMAGES_KEY])
    good = {"query": "q", ls.QUERY_IMAGES_KEY: ["https://h/a.png"]}
    ls.check_config(config, [good])
    with pytest.raises(FormatError, match=f"\\${ls.QUERY_IMAGES_KEY}.*task 2 has no data key"):
        ls.check_config(config, [good, {"query": "q"}])
    with pytest.raises(FormatError, match=f"\\${ls.QUERY_IMAGES_KEY}.*task 1 has empty"):
        ls.check_config(config, [{**good, ls.QUERY_IMAGES_KEY: []}])
    with pytest.raises(FormatError, match="not well-formed"):
        ls.check_config("<View><Text name='q' value='$q'></View>", [{"q": ""}])
    with pytest.raises(FormatError, match="toName 'nothing'"):
        ls.check_config('<View><Choices name="c" toName="nothing"/></View>', [{}])


def test_items_with_nothing_to_show_where_others_have_get_placeholders(tmp_path: Path) -> None:
    """Label Studio 1.23.2's labeling view fails on a task whose <Image valueList> or
    <Paragraphs> list is empty: an item without images, documents or answers shows a
    placeholder where another item of the export shows them."""
    plain = _item(external_id="plain", query="No images here")
    answered = _item(external_id="a", query="q", responses=[ResponseRecord("a", "gt", text="t")])
    tasks, config = _written(tmp_path, [VQA, plain, answered])
    data = tasks[1]["data"]
    for key in (ls.QUERY_IMAGES_KEY, ls.DOCUMENTS_KEY, ls.DOCUMENT_IMAGES_KEY, ls.ANSWERS_KEY):
        assert data[key] == ls.VIEW_PLACEHOLDERS[key]
    (url,) = data[ls.QUERY_IMAGES_KEY]
    assert url.startswith("data:image/svg+xml,") and "no%20query%20image" in url
    assert (
        data["images"] == [] and data["responses"] == []
    )  # the item's own fields stay as they are
    (back_vqa, back_plain, _), _ = ls.read_tasks(tmp_path / "t.json")
    assert back_plain.images == [] and back_plain.documents == [] and back_plain.responses == []


def test_plan_steps_are_written_in_one_key_order_whatever_the_database_kept() -> None:
    """SQLite keeps a JSON object's keys as written, PostgreSQL's jsonb by length then bytes:
    the export must not depend on which one held the plan."""
    as_written = {"id": 0, "name": "get weather", "args": {"lon": "x", "lat": "y"}}
    as_jsonb = {"id": 0, "args": {"lat": "y", "lon": "x"}, "name": "get weather"}
    plans = [
        PlanRecord(item_id="1", key=f"p{n}", steps=[steps], origin="human")
        for n, steps in enumerate((as_written, as_jsonb))
    ]
    written, jsonb = (json.dumps(ls.canonical_keys(p.steps)) for p in plans)
    assert (
        written == jsonb == '[{"id": 0, "name": "get weather", "args": {"lat": "y", "lon": "x"}}]'
    )
    first, second = (ls.plan_paragraphs([p]) for p in plans)
    assert first == second == [{"step": "Ground truth", "text": '1. get weather(lat="y", lon="x")'}]
