"""Image references are stored as positional arrays (ImageRefsField) and read back as the same
list of dicts, whichever way the row was written (the ORM, the bulk import, rows stored before
the change as dicts) and read (the ORM, the export's plain SQL)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.db import connection
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from benchmark.datasets.services import dataset_export, dataset_import
from benchmark.fields import image_refs_compact, image_refs_expand
from benchmark.images.selectors import project_images_named
from benchmark.models import Item, Project
from tests.factories import ItemFactory

SHA = "ab" * 32


def _ref(sha: Any, role: str, path: str, position: int) -> dict[str, Any]:
    return {"sha256": sha, "role": role, "path": path, "position": position}


REFS = [
    _ref(SHA, "document", "images/a.png", 0),
    _ref(None, "document", "images/missing.png", 1),  # not found at import: no hash
    _ref(SHA, "document", "images/c.png", 5),  # a position out of sequence
    _ref(SHA, "query", "images/q.png", 0),
    {"sha256": SHA, "path": "images/x.png", "role": "input", "position": 0},  # other key order
    {"sha256": SHA, "role": "input", "path": "images/y.png", "position": 1, "crop": [0, 0]},
]


def _stored(item: Item) -> Any:
    with connection.cursor() as cursor:
        cursor.execute("SELECT image_refs FROM benchmark_item WHERE id = %s", [item.pk])
        value = cursor.fetchone()[0]
    return json.loads(value) if isinstance(value, str) else value


def test_compact_then_expand_gives_back_the_same_refs_in_the_same_key_order() -> None:
    stored = image_refs_compact(REFS)
    assert stored[:4] == [
        [SHA, "images/a.png"],
        [None, "images/missing.png"],
        [SHA, "images/c.png", "document", 5],
        [SHA, "images/q.png", "query"],
    ]
    assert stored[4:] == REFS[4:]  # shapes it does not know are kept as they are
    back = image_refs_expand(stored)
    assert back == REFS
    assert [list(ref) for ref in back] == [list(ref) for ref in REFS]
    assert image_refs_expand(REFS) == REFS  # rows written before: dicts, read as they are
    assert image_refs_compact("images/a.png") == "images/a.png"  # a lookup's value


@given(
    st.lists(
        st.builds(
            _ref,
            st.one_of(st.none(), st.text(max_size=5)),
            st.sampled_from(["document", "query", "input"]),
            st.text(max_size=5),
            st.integers(min_value=0, max_value=4),
        ),
        max_size=8,
    )
)
def test_any_list_of_refs_comes_back_unchanged(refs: list[dict[str, Any]]) -> None:
    assert image_refs_expand(json.loads(json.dumps(image_refs_compact(refs)))) == refs


def test_the_orm_writes_arrays_and_reads_dicts_and_path_lookups_still_match(
    project: Project,
) -> None:
    item = ItemFactory(project=project, image_refs=REFS)
    assert _stored(item)[0] == [SHA, "images/a.png"]
    item.refresh_from_db()
    assert item.image_refs == REFS
    assert list(Item.objects.filter(pk=item.pk).values_list("image_refs", flat=True)) == [REFS]
    assert Item.objects.filter(image_refs__icontains="images/c.png").get() == item
    assert Item.objects.filter(image_refs=REFS).get() == item
    # a row stored before the change (dicts) reads as it always did
    Item.objects.filter(pk=item.pk).update(image_refs=REFS)  # the update compacts too
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE benchmark_item SET image_refs = %s WHERE id = %s", [json.dumps(REFS), item.pk]
        )
    item.refresh_from_db()
    assert item.image_refs == REFS


def test_an_import_stores_arrays_and_exports_the_same_file(
    project: Project, tmp_path: Path
) -> None:
    src = tmp_path / "src"
    (src / "images").mkdir(parents=True)
    for k, name in enumerate(("d0.png", "d1.png", "q.png")):
        Image.new("RGB", (8, 8), (40 * k, 90, 160)).save(src / "images" / name)
    record = {
        "trace_id": "atp_1", "query": "Which figure?", "image_query": "images/q.png",
        "doc": [{"text": "Some text", "images": ["images/d0.png"]}],
        "images": ["images/d0.png", "images/d1.png"], "gt": "The first.",
        "category": "Academic", "intent": "Framework",
    }  # fmt: skip
    (src / "data.jsonl").write_text(json.dumps(record) + "\n")
    dataset_import(project=project, path=src)
    item = Item.objects.get(project=project, external_id="atp_1")
    stored = _stored(item)
    assert [len(ref) for ref in stored] == [2, 2, 3]  # two document images, one query image
    assert [(r["role"], r["path"], r["position"]) for r in item.image_refs] == [
        ("document", "images/d0.png", 0),
        ("document", "images/d1.png", 1),
        ("query", "images/q.png", 0),
    ]
    assert all(len(r["sha256"]) == 64 for r in item.image_refs)
    assert set(project_images_named(project=project, names=["images/d1.png"])) == {"images/d1.png"}
    out = tmp_path / "out"
    dataset_export(project=project, out=out)
    assert (out / "data.jsonl").read_bytes() == (src / "data.jsonl").read_bytes()
    assert (out / "images" / "q.png").read_bytes() == (src / "images" / "q.png").read_bytes()
