"""Generic JSON Lines / CSV items with a column mapping: reading, writing, round trip."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from benchmark.formats import FormatError, ImageRef, ItemRecord
from benchmark.formats.label_studio import FIELDS
from benchmark.formats.tabular import Table
from tests.factories import ProjectFactory

CSV = (
    '"id","prompt","topic","lvl"\n"s1","What is 2+2?","math","1"\n"s2","\'=HYPERLINK(1)","web",""\n'
)


def _rec() -> ItemRecord:
    return ItemRecord(
        external_id="r1", source_file="x", raw="{}", query="-x starts like a formula",
        documents=[{"text": "d", "images": ["a.png"]}],
        images=[ImageRef(path="a.png", role="query")], constraints={"k": [1, 2]},
        expected_answer="4", accepted_variants=["four"], match_type="exact",
        rubric=[{"key": "r1", "text": "t"}], category="c", intent="i", domain="d", level=3,
        status="verified", provenance="human:eve",
    )  # fmt: skip


def test_csv_read_with_mapping(tmp_path: Path) -> None:
    path = tmp_path / "sheet.csv"
    path.write_text(CSV)
    items = list(Table("csv", "id=external_id,prompt=query,topic=category,lvl=level").read(path))
    assert [(i.external_id, i.query, i.category, i.level) for i in items] == [
        ("s1", "What is 2+2?", "math", 1),
        ("s2", "=HYPERLINK(1)", "web", None),  # the spreadsheet guard is removed
    ]
    assert json.loads(items[0].raw) == {"id": "s1", "prompt": "What is 2+2?", "topic": "math",
                                        "lvl": "1"}  # fmt: skip


def test_a_missing_query_column_names_it(tmp_path: Path) -> None:
    path = tmp_path / "sheet.csv"
    path.write_text(CSV)
    with pytest.raises(FormatError) as exc:
        list(Table("csv", "question=query").read(path))
    assert exc.value.field == "question" and exc.value.record == 1


def test_bad_json_in_a_list_column_names_it(tmp_path: Path) -> None:
    path = tmp_path / "sheet.csv"
    path.write_text('"q","alts"\n"x","[not json"\n')
    with pytest.raises(FormatError) as exc:
        list(Table("csv", "q=query,alts=accepted_variants").read(path))
    assert exc.value.field == "alts"


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_round_trip_keeps_every_field(tmp_path: Path, kind: str) -> None:
    table = Table(kind, {**{f: f for f in FIELDS if f != "query"}, "prompt": "query"})
    (path,) = table.write(tmp_path / f"out.{kind}", [_rec()])
    (back,) = list(table.read(path))
    for name in FIELDS:
        assert getattr(back, name) == getattr(_rec(), name), name
    if kind == "csv":
        assert "\"'-x starts" in path.read_text()  # guarded for spreadsheets


@pytest.mark.django_db
def test_import_and_export_commands(tmp_path: Path) -> None:
    project = ProjectFactory(name="Sheet")
    path = tmp_path / "sheet.csv"
    path.write_text(CSV)
    out = StringIO()
    call_command(
        "import_dataset", "--format", "csv", "--project", "Sheet",
        "--map", "id=external_id,prompt=query,topic=category", str(path), stdout=out,
    )  # fmt: skip
    assert json.loads(out.getvalue())["items_created"] == 2
    assert project.items.get(external_id="s1").category == "math"
    call_command(
        "export_dataset", "--format", "jsonl", "--project", "Sheet",
        "--map", "id=external_id,prompt=query", "--no-images", str(tmp_path / "o.jsonl"),
        stdout=StringIO(),
    )  # fmt: skip
    rows = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert rows == [{"id": "s1", "prompt": "What is 2+2?"}, {"id": "s2", "prompt": "=HYPERLINK(1)"}]
