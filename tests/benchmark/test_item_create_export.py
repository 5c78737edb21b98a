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


# --------------------------------------------------------------------------- m&m's evaluator

MMS_PLAN = [
    {"id": 0, "name": "image captioning", "args": {"image": "2371408.jpg"}},
    {"id": 1, "name": "text summarization", "args": {"text": "<node-0>.text"}},
]
MMS_ALTERNATIVE = [{"id": 0, "name": "image captioning", "args": {"image": "2371408.jpg"}}]


def _mms_project() -> Any:
    from benchmark.builtin import toolsets_ensure

    return ProjectFactory(
        kind=ProjectKind.PLAN, data_format="mms", tag_syntax="", toolset=toolsets_ensure()["mms"]
    )


def _rows(folder: Path) -> dict[Any, dict[str, Any]]:
    import json

    return {row["id"]: row for row in json.loads((folder / "tasks.json").read_text())}


def test_mms_created_items_load_in_the_released_evaluator(tmp_path: Path) -> None:
    """A task written in Benchwright exports ``alt_plans_str`` as the Python-literal list the
    evaluator's best-match mode evaluates ("[]" when there are none, the alternatives when an
    annotator added some), next to ``plan_str`` and ``code_str`` of its gold plan; an imported
    row keeps its own bytes, ``null`` included."""
    from annotation.plan_editor.services import plan_save
    from benchmark.items.records import item_create_with_records
    from benchmark.plans.parse import plan_to_code, plan_to_solve_code
    from review.demo import DEMO_ROOT
    from tests.released_loaders import mms_gold_plans

    project = _mms_project()
    source = DEMO_ROOT / "mms" / "tasks.json"
    dataset_import(project=project, path=source)
    user = UserFactory()
    MembershipFactory(project=project, user=user, role=Role.ANNOTATOR)
    plain = item_create_with_records(
        project=project, user=user, data={"query": "Describe 2371408.jpg briefly."}, plan=MMS_PLAN
    )
    with_alternative = item_create_with_records(
        project=project, user=user, data={"query": "Describe 2371408.jpg."}, plan=MMS_PLAN
    )
    plan_save(
        item=with_alternative,
        user=user,
        steps=MMS_ALTERNATIVE,
        key="alt:0",
        is_alternative=True,
    )
    out = tmp_path / "out"
    dataset_export(project=project, out=out, copy_images=False)
    rows = _rows(out)

    for item in (plain, with_alternative):
        row = rows[int(item.external_id)]
        assert isinstance(row["alt_plans_str"], str), row
        plans = mms_gold_plans(row)  # what the evaluator's best-match mode reads
        assert plans[0] == MMS_PLAN and row["code_str"] == plan_to_solve_code(MMS_PLAN)
        assert [plan_to_code(p) for p in plans]  # and turns into code lines
    assert rows[int(plain.external_id)]["alt_plans_str"] == "[]"
    assert mms_gold_plans(rows[int(with_alternative.external_id)])[1:] == [MMS_ALTERNATIVE]
    # The same shape as the dataset's own rows: a Python literal, as repr() writes it.
    assert rows[int(with_alternative.external_id)]["alt_plans_str"] == repr([MMS_ALTERNATIVE])

    # Imported rows keep every field as they were, their null included.
    imported = _rows(source.parent)
    assert {k: rows[k] for k in imported} == imported

    # Imported again, the created tasks come back with the same plans.
    fresh = _mms_project()
    dataset_import(project=fresh, path=out)
    again = fresh.items.get(external_id=with_alternative.external_id)
    assert [p.steps for p in again.plans.order_by("position")] == [MMS_PLAN, MMS_ALTERNATIVE]
