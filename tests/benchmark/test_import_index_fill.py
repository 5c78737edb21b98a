"""An import fills the search index and the item tallies once, after its rows are in (SQLite
drops its per-row triggers for the load and puts them back); the result must be the same as
row by row: every imported item found and counted, nothing counted twice, later edits still
indexed, and a failed import leaving triggers, counts and index as they were."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from benchmark import selectors
from benchmark.datasets.services import dataset_import
from benchmark.formats import FormatError
from benchmark.models import Item, Project
from benchmark.selectors import ItemFilters
from tests.factories import ItemFactory


def _search(user: Any, project: Project, text: str) -> list[str]:
    rows = selectors.item_list(user=user, project=project, filters=ItemFilters(q=text))
    return sorted(rows.values_list("external_id", flat=True))


def _total(project: Project, user: Any) -> int:
    return selectors.item_status_counts(user=user, project=project)["total"]


def _write(folder: Path, rows: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _row(trace_id: str, query: str) -> dict[str, Any]:
    return {"trace_id": trace_id, "query": query, "doc": [], "images": [], "gt": "A.",
            "category": "Travel", "intent": "Identification"}  # fmt: skip


def _triggers() -> set[str]:
    if connection.vendor != "sqlite":
        return set()
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        return {row[0] for row in cursor.fetchall()}


def test_imported_items_are_found_and_counted_and_later_edits_still_indexed(
    project: Project, other_project: Project, users: dict[str, Any], tmp_path: Path
) -> None:
    user = users["annotator"]
    ItemFactory(project=project, external_id="before", query="An older framework")
    ItemFactory(project=other_project, external_id="theirs", query="Their framework")
    triggers = _triggers()
    rows = [_row(f"atp-{i}", f"Which framework number {i}") for i in range(5)]
    dataset_import(project=project, path=_write(tmp_path / "a", rows))
    assert _triggers() == triggers
    assert _total(project, user) == 6
    assert _search(user, project, "framework") == [
        "atp-0", "atp-1", "atp-2", "atp-3", "atp-4", "before"
    ]  # fmt: skip
    assert _search(user, project, "atp-3") == ["atp-3"]
    assert _search(users["outsider"], other_project, "framework") == ["theirs"]
    facets = selectors.item_facets(user=users["reviewer"], project=project)
    assert "Travel" in facets.categories
    # a second import only adds its own rows, and single-row writes are indexed again
    dataset_import(project=project, path=_write(tmp_path / "b", [_row("atp-9", "Late frame")]))
    ItemFactory(project=project, external_id="after", query="Framework added by hand")
    assert _total(project, user) == 8
    assert _search(user, project, "frame") == [
        "after", "atp-0", "atp-1", "atp-2", "atp-3", "atp-4", "atp-9", "before"
    ]  # fmt: skip
    Item.objects.filter(external_id="atp-1").update(query="Nothing here")
    Item.objects.filter(external_id__in=["atp-2", "atp-9"]).delete()
    assert _search(user, project, "frame") == ["after", "atp-0", "atp-3", "atp-4", "before"]
    assert _total(project, user) == 6


def test_a_failed_import_leaves_triggers_counts_and_index_as_they_were(
    project: Project, users: dict[str, Any], tmp_path: Path
) -> None:
    user = users["annotator"]
    ItemFactory(project=project, external_id="kept", query="Kept framework")
    triggers = _triggers()
    rows = [_row("good-1", "Good framework"), _row("good-1", "Twice the same id")]
    with pytest.raises(FormatError):
        dataset_import(project=project, path=_write(tmp_path, rows))
    assert _triggers() == triggers
    assert _total(project, user) == 1
    assert _search(user, project, "framework") == ["kept"]
    ItemFactory(project=project, external_id="new", query="New framework")
    assert _search(user, project, "framework") == ["kept", "new"]
    assert _total(project, user) == 2
