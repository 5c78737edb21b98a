"""Long strings of an imported record are stored once (raw text with holes), and the export
reads a chunk ahead in a thread: nothing of either may change what a user gets back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.db import connection
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.tag_review.services import response_save_version
from benchmark.datasets import services
from benchmark.formats import atp
from benchmark.formats._jsonio import HOLE_MIN_CHARS, fill_holes, punch_holes
from benchmark.models import Item, Project, Response, Role
from benchmark.presenters import item_view
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.jsonl_io import export_lines, import_lines

LONG = "The encoder turns the image into patch features; " * 6  # about 300 characters
GT = 'Step one.\n\n<tool>{"tool_name": "Reference", "params": {"img_index": 0}}</tool>\n\n' + LONG


def _fields(record: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str, Any]]:
    out: list[tuple[tuple[str | int, ...], str, Any]] = [
        (("doc", i, "text"), d["text"], ["documents", i, "text"])
        for i, d in enumerate(record["doc"])
    ]
    return [*out, (("gt",), record["gt"], ["response", "gt"])]


def _values(record: dict[str, Any]) -> Any:
    def value(source: list[Any]) -> Any:
        if source[0] == "documents":
            return record["doc"][source[1]]["text"]
        return record["gt"]

    return value


# --------------------------------------------------------------------------- pure functions


@pytest.mark.parametrize(
    "dump",
    [
        json.dumps,  # ", " separators and ASCII escapes, as Python writes by default
        lambda v: json.dumps(v, ensure_ascii=False, indent=2),
        lambda v: orjson.dumps(v).decode(),
    ],
)
def test_punched_raw_fills_back_to_the_same_text(dump: Any) -> None:
    record = {
        "trace_id": "t1",
        "doc": [{"text": LONG + ' Grüße, 東京 \u2028 "quoted" \\ ☃'}, {"text": "short"}],
        "gt": GT,
    }
    raw = dump(record)
    rest, holes = punch_holes(raw, _fields(record))
    assert [h[1] for h in holes] == [["documents", 0, "text"], ["response", "gt"]]
    assert len(rest) < len(raw) - 2 * 300  # both long strings left the text
    assert fill_holes(rest, holes, _values(record)) == raw


def test_an_edit_lands_in_its_own_field_even_when_another_holds_the_same_text() -> None:
    # "copy" holds the document's text too, and comes first: the hole must not go there.
    record = {"copy": LONG, "doc": [{"text": LONG}], "gt": GT}
    raw = json.dumps(record)
    rest, holes = punch_holes(raw, _fields(record))
    assert [h[1] for h in holes] == [["response", "gt"]]  # the document stays in the text
    edited = {**record, "gt": "A new answer."}
    assert orjson.loads(fill_holes(rest, holes, _values(edited))) == edited


def test_short_strings_and_unmatched_paths_stay_in_the_text() -> None:
    record = {"doc": [LONG], "gt": "short"}  # a document given as a plain string
    raw = json.dumps(record)
    fields = [(("doc", 0, "text"), LONG, ["documents", 0, "text"]), (("gt",), "short", ["x"])]
    assert punch_holes(raw, fields) == (raw, [])


def test_a_value_that_is_gone_fills_its_hole_with_valid_json() -> None:
    record = {"doc": [{"text": LONG}], "gt": GT}
    rest, holes = punch_holes(json.dumps(record), _fields(record))
    assert orjson.loads(fill_holes(rest, holes, lambda source: None)) == {
        "doc": [{"text": ""}],
        "gt": "",
    }


texts = st.text(min_size=HOLE_MIN_CHARS, max_size=400).filter(
    lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s)
)


@settings(max_examples=150, deadline=None)
@given(
    doc=texts,
    gt=texts,
    other=st.dictionaries(st.text(max_size=5), st.text(max_size=20), max_size=3),
    ascii_only=st.booleans(),
    new_gt=st.text(max_size=50),
)
def test_punch_fill_is_the_identity_and_edits_change_only_their_field(
    doc: str, gt: str, other: dict[str, str], ascii_only: bool, new_gt: str
) -> None:
    record = {**other, "doc": [{"text": doc, "images": []}], "gt": gt}
    raw = json.dumps(record, ensure_ascii=ascii_only)
    rest, holes = punch_holes(raw, _fields(record))
    assert fill_holes(rest, holes, _values(record)) == raw
    edited = {**record, "gt": new_gt}
    if any(h[1] == ["response", "gt"] for h in holes):
        assert orjson.loads(fill_holes(rest, holes, _values(edited))) == edited


# --------------------------------------------------------------------------- through the database


def _row(i: int) -> dict[str, Any]:
    return {
        "trace_id": f"t{i}",
        "query": f"How does part {i} of the captioning framework work? " * 3,
        "image_query": None,
        "doc": [{"text": f"Document {i}. " + LONG, "images": []}, {"text": "A short one."}],
        "images": [],
        "gt": f"Answer {i}. " + GT,
        "category": "Academic",
        "intent": "Framework",
        "extra_unknown_field": {"kept": [1, None, "x"]},
    }


@pytest.fixture
def imported(db: None, tmp_path: Path) -> tuple[Project, list[str]]:
    project = ProjectFactory(name="stored once")
    lines = [json.dumps(_row(i)) for i in range(5)]
    import_lines(project, lines, tmp_path)
    return project, lines


def test_import_keeps_long_strings_once_and_the_item_shows_its_source(
    imported: tuple[Project, list[str]],
) -> None:
    project, lines = imported
    item = Item.objects.get(project=project, external_id="t0")
    assert len(item.raw) < len(lines[0]) / 2
    assert LONG not in item.raw and "Answer 0." not in item.raw
    assert [h[1] for h in item.raw_holes] == [
        ["query"],
        ["documents", 0, "text"],
        ["response", "gt"],
    ]
    assert item.raw_source == lines[0]
    assert item.raw_record == _row(0)
    shown = item_view(item, {})["raw"]  # the item page's "source record" panel
    assert json.loads(shown) == _row(0)


def test_a_source_record_blanked_for_a_blind_verifier_stays_blank(
    imported: tuple[Project, list[str]],
) -> None:
    project, _ = imported
    item = Item.objects.get(project=project, external_id="t0")
    item.raw = ""  # what annotation.verification.redact_unanswered does, in memory
    assert item.raw_source == ""
    assert item_view(item, {})["raw"] == ""
    assert fill_holes("{}", item.raw_holes, lambda source: "leak") == "{}"


def test_export_of_untouched_items_is_byte_for_byte(
    imported: tuple[Project, list[str]], tmp_path: Path
) -> None:
    project, lines = imported
    assert export_lines(project, tmp_path) == lines


def test_edits_after_import_show_in_the_export(
    imported: tuple[Project, list[str]], tmp_path: Path
) -> None:
    project, lines = imported
    reviewer = UserFactory()
    MembershipFactory(project=project, user=reviewer, role=Role.ADMIN)
    item = Item.objects.get(project=project, external_id="t1")
    item.documents[0]["text"] = "A rewritten first document."
    item.save()
    Item.objects.filter(pk=item.pk).update(query="A new query, long enough? " * 6)
    gt = Response.objects.get(item=item, key="gt")
    response_save_version(
        response=gt, user=reviewer, text="A new answer.", base_number=1, decisions=[]
    )
    deleted = Item.objects.get(project=project, external_id="t2")
    deleted.documents = deleted.documents[1:]  # the long document removed
    deleted.save()

    out = export_lines(project, tmp_path)
    edited = json.loads(out[1])
    assert edited["doc"][0]["text"] == "A rewritten first document."
    assert edited["query"] == "A new query, long enough? " * 6
    assert edited["gt"] == "A new answer."
    assert edited["extra_unknown_field"] == {"kept": [1, None, "x"]}
    assert edited["doc"][1] == {"text": "A short one."}
    assert json.loads(out[2])["doc"] == [{"text": "A short one.", "images": []}]
    assert json.loads(out[2])["gt"] == _row(2)["gt"]
    assert [out[0], out[3], out[4]] == [lines[0], lines[3], lines[4]]


def test_export_reads_ahead_with_a_bounded_number_of_queries(
    imported: tuple[Project, list[str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    django_assert_max_num_queries: Any,
) -> None:
    project, lines = imported
    monkeypatch.setattr(services, "EXPORT_CHUNK", 2)
    # 3 chunks (2, 2 and 1 items), each read as its items and 3 kinds of attached records;
    # ATP-Bench has no records in files of their own and these items no images to copy.
    with django_assert_max_num_queries(3 * 4):
        assert export_lines(project, tmp_path) == lines


def test_a_failed_export_leaves_the_connection_usable(
    imported: tuple[Project, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, _ = imported
    monkeypatch.setattr(services, "EXPORT_CHUNK", 1)
    real = atp.write

    def failing(out: Path, items: Any, attachments: Any = ()) -> list[Path]:
        def some() -> Any:
            for n, item in enumerate(items):
                if n == 2:
                    raise OSError("disk full")
                yield item

        return real(out, some(), attachments)

    monkeypatch.setattr(atp, "write", failing)
    with pytest.raises(OSError, match="disk full"):
        services.dataset_export(project=project, out=tmp_path / "out" / "data.jsonl")
    assert not (tmp_path / "out" / "data.jsonl").exists()
    assert Item.objects.filter(project=project).count() == 5  # the connection still answers
    assert connection.allow_thread_sharing is False
