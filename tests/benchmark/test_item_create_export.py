"""An item created in the app is stored in the shape its format's importer gives: exported
and imported into a fresh project, it comes back with the same fields and images."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmark.datasets.services import dataset_export, dataset_import
from benchmark.items.services import item_create
from benchmark.models import Item, ProjectKind, Role
from tests.factories import MembershipFactory, ProjectFactory, UserFactory, png_bytes

pytestmark = pytest.mark.django_db

FIELDS = (
    "external_id", "query", "modality", "documents", "expected_answer", "accepted_variants",
    "match_type", "rubric", "category", "intent", "domain", "level",
)  # fmt: skip


def _roundtrip(project: Any, data: dict[str, Any], tmp_path: Path) -> tuple[Item, Item]:
    user = UserFactory()
    MembershipFactory(project=project, user=user, role=Role.ANNOTATOR)
    item = item_create(project=project, user=user, data=data)
    out = tmp_path / "out"
    dataset_export(project=project, out=out)
    fresh = ProjectFactory(
        kind=project.kind, data_format=project.data_format, name=f"{project.name} again"
    )
    dataset_import(project=fresh, path=out)
    again = Item.objects.get(project=fresh)
    for name in FIELDS:
        assert getattr(again, name) == getattr(item, name), name
    key = [(r["sha256"], r["role"], r["position"], r["path"]) for r in item.image_refs]
    assert [(r["sha256"], r["role"], r["position"], r["path"]) for r in again.image_refs] == key
    return item, again


def test_atp(tmp_path: Path) -> None:
    item, again = _roundtrip(
        ProjectFactory(),
        {
            "query": "How is it descaled?",
            "category": "Manual",
            "intent": "OperationGuide",
            "documents": [
                {"text": "One.", "images": [("a.png", png_bytes(61))]},
                {"text": "Two.", "images": [("b.png", png_bytes(62)), ("c.png", png_bytes(63))]},
            ],
            "gt": "Run the cycle.",
        },
        tmp_path,
    )
    assert again.responses.get(key="gt").text == "Run the cycle."


def test_atp_image_query(tmp_path: Path) -> None:
    _roundtrip(
        ProjectFactory(),
        {"query": "What is this?", "query_images": [("q.png", png_bytes(64))], "gt": ""},
        tmp_path,
    )


def test_llmi_rows(tmp_path: Path) -> None:
    _roundtrip(
        ProjectFactory(data_format="llmi"),
        {
            "query": "Draw the water cycle.",
            "images": [("in.png", png_bytes(65))],
            "rubric": [f"The answer shows stage {n} of the cycle clearly." for n in range(10)],
        },
        tmp_path,
    )


def test_agentic_mme(tmp_path: Path) -> None:
    _roundtrip(
        ProjectFactory(kind=ProjectKind.TRAJECTORY, data_format="agentic-mme"),
        {
            "query": "Which street is it?",
            "format_instruction": "Answer with the name.",
            "images": [("p.png", png_bytes(66))],
            "expected_answer": "Willow St",
            "match_type": "contains",
            "accepted_variants": ["Willow Street"],
            "level": 2,
            "domain": "Life",
        },
        tmp_path,
    )
