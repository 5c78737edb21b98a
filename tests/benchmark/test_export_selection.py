"""Exporting a selection of items (the item list's bulk export): only the chosen items, in
the list's order, whatever the chunk size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark.datasets import services as dataset_services
from benchmark.models import Item
from tests.factories import ItemFactory, ProjectFactory

pytestmark = pytest.mark.django_db


def test_export_only_the_selected_items_in_order(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(dataset_services, "EXPORT_CHUNK", 2)
    project = ProjectFactory()
    for i in range(7):
        ItemFactory(project=project, external_id=f"s{i}", position=10 - i)
    other = ItemFactory(external_id="elsewhere")
    chosen = Item.objects.filter(external_id__in=["s0", "s2", "s3", "s6"]).values_list(
        "pk", flat=True
    )
    out = tmp_path / "out" / "data.jsonl"
    dataset_services.dataset_export(
        project=project, out=out, item_ids=[*chosen, other.pk], copy_images=False
    )
    rows = [json.loads(line)["trace_id"] for line in out.read_text().splitlines()]
    assert rows == ["s6", "s3", "s2", "s0"]  # position order
    empty = tmp_path / "none" / "data.jsonl"
    dataset_services.dataset_export(project=project, out=empty, item_ids=[], copy_images=False)
    assert not empty.exists() or empty.read_text() == ""
