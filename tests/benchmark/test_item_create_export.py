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


def _roundtrip(
    project: Any, data: dict[str, Any], tmp_path: Path, *, same_paths: bool = True
) -> tuple[Item, Item]:
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
    fields = (
        ("sha256", "role", "position", "path") if same_paths else ("sha256", "role", "position")
    )
    key = [tuple(r[f] for f in fields) for r in item.image_refs]
    assert [tuple(r[f] for f in fields) for r in again.image_refs] == key
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
    _, again = _roundtrip(
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
        same_paths=False,  # the export names the image where the released runners look
    )
    assert [r["path"] for r in again.image_refs] == ["images/image_0001.png"]


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
    import ast
    import json

    from annotation.plan_editor.services import plan_save
    from benchmark.items.records import item_create_with_records
    from benchmark.plans.parse import plan_to_code, plan_to_solve_code
    from review.demo import DEMO_ROOT
    from review.releases.services import release_create
    from tests.released_loaders import mms_gold_plans

    project = _mms_project()
    # The demo's rows, the first with the null that some dataset rows have.
    rows = json.loads((DEMO_ROOT / "mms" / "tasks.json").read_text())
    rows[0]["alt_plans_str"] = None
    source = tmp_path / "source" / "tasks.json"
    source.parent.mkdir()
    source.write_text(json.dumps(rows, indent=1))
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
    # The same shape as the dataset's own rows: a Python literal, as repr() writes it (the
    # keys' order is the database's: PostgreSQL's jsonb keeps its own).
    text = rows[int(with_alternative.external_id)]["alt_plans_str"]
    assert text == repr(ast.literal_eval(text)) and ast.literal_eval(text) == [MMS_ALTERNATIVE]

    # Imported rows keep every field as they were, their null included.
    imported = _rows(source.parent)
    assert {k: rows[k] for k in imported} == imported
    assert rows[7001]["alt_plans_str"] is None

    # The demo's own release is read by the evaluator in best-match mode, every row.
    demo = _mms_project()
    dataset_import(project=demo, path=DEMO_ROOT / "mms" / "tasks.json")
    release = release_create(project=demo, user=None, name="v1", status=None)
    released = _rows(Path(release.path) / "data")
    assert len(released) == 8 and all(mms_gold_plans(row) for row in released.values())

    # Imported again, the created tasks come back with the same plans.
    fresh = _mms_project()
    dataset_import(project=fresh, path=out)
    again = fresh.items.get(external_id=with_alternative.external_id)
    assert [p.steps for p in again.plans.order_by("position")] == [MMS_PLAN, MMS_ALTERNATIVE]


# --------------------------------------------------------------------------- Agentic-MME loader


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _input_shas(item: Item) -> list[str]:
    refs = sorted((r for r in item.image_refs if r["role"] == "input"), key=lambda r: r["position"])
    return [r["sha256"] for r in refs]


def _loads_in_the_released_runner(project: Any, root: Path) -> dict[str, Path]:
    """Every item of ``project`` is one task file under ``root/json`` that the released
    runners load with each of its input images found, the item's own bytes in its order.
    Returns {task_id: task file}."""
    import json

    from tests.released_loaders import agentic_mme_load

    found: dict[str, Path] = {}
    for task_json, images in agentic_mme_load(root):
        task_id = json.loads(task_json.read_text())["task_id"]
        assert task_id not in found, f"{task_json.name}: task {task_id} twice"
        item = project.items.get(external_id=task_id)
        shas = [_sha(p.read_bytes()) for p in images]
        assert shas == _input_shas(item), (task_json.name, [p.name for p in images])
        found[task_id] = task_json
    assert set(found) == set(project.items.values_list("external_id", flat=True))
    return found


def _agentic_project(name: str = "") -> Any:
    return ProjectFactory(
        kind=ProjectKind.TRAJECTORY,
        data_format="agentic-mme",
        tag_syntax="",
        **({"name": name} if name else {}),
    )


def test_agentic_mme_demo_export_and_release_load_in_the_released_runner(tmp_path: Path) -> None:
    """The demo's tasks are ``json/demo01.json`` ... with ``images/image_demo01.png``: the
    released runner reads the number 1 from "demo01" and looks for ``image_0001.png``. The
    export and the release name each image so the runner finds it; imported again, the
    export gives the same items (ids, fields, images, the run of demo03)."""
    from review.demo import DEMO_ROOT
    from review.releases.services import release_create

    project = _agentic_project()
    result = dataset_import(project=project, path=DEMO_ROOT / "agentic-mme")
    assert result.items_created == 4 and not result.warnings
    out = tmp_path / "out"
    dataset_export(project=project, out=out)
    _loads_in_the_released_runner(project, out)
    release = release_create(project=project, user=None, name="v1", status=None)
    _loads_in_the_released_runner(project, Path(release.path) / "data")

    fresh = _agentic_project("again")
    again = dataset_import(project=fresh, path=out)
    assert again.items_created == 4 and not again.warnings, again.warnings
    for item in project.items.all():
        copy = fresh.items.get(external_id=item.external_id)
        for name in FIELDS:
            assert getattr(copy, name) == getattr(item, name), (item.external_id, name)
        assert _input_shas(copy) == _input_shas(item)
    run = fresh.items.get(external_id="demo03").trajectories.get(key="run:demo03")
    assert len(run.steps) == 3 and run.final_answer


def _loader_named_task(folder: Path) -> bytes:
    """A task already in the released layout: ``json/0001.json`` and ``images/image_0001.png``."""
    import json

    (folder / "json").mkdir(parents=True)
    (folder / "images").mkdir()
    (folder / "images" / "image_0001.png").write_bytes(png_bytes(70))
    text = json.dumps(
        {
            "task_id": "0001",
            "meta": {"level": 1, "domain": "Life", "turncase": "single_turn"},
            "input": {
                "prompt": "What does the sign say? Answer briefly.",
                "image": "images/image_0001.png",
            },
            "golden_answer": {"value": "STOP", "match_type": "exact"},
        },
        indent=4,
    )
    (folder / "json" / "0001.json").write_text(text)
    return text.encode()


def test_agentic_mme_export_loads_in_the_released_runner_whatever_the_ids(tmp_path: Path) -> None:
    """Tasks with ids the runner cannot take a number from ("task-x"), whose number another
    task has ("demo01", "task-1" and "0001"; "7" and "task-7"), long numbers, UUIDs, several
    images and JPEG/GIF images all load with every image found; the task already in the
    runner's naming keeps its file names and bytes; imported again, the same items."""
    import io
    import uuid

    from PIL import Image as PILImage

    def encoded(seed: int, fmt: str) -> bytes:
        out = io.BytesIO()
        PILImage.new("RGB", (20, 10), (seed, 2 * seed, 3 * seed)).save(out, format=fmt)
        return out.getvalue()

    project = _agentic_project()
    source = tmp_path / "source"
    original = _loader_named_task(source)
    dataset_import(project=project, path=source)
    user = UserFactory()
    MembershipFactory(project=project, user=user, role=Role.ANNOTATOR)
    ids = ["demo01", "task-1", "7", "task-7", "task-x", "0042", "12345", str(uuid.uuid4())]
    images: dict[str, list[tuple[str, bytes]]] = {
        external_id: [(f"{n}.png", png_bytes(80 + n))] for n, external_id in enumerate(ids)
    }
    images["task-1"] = [("a.png", png_bytes(90)), ("b.jpg", encoded(91, "JPEG"))]
    images["task-x"] = [("c.gif", encoded(92, "GIF"))]
    for n, external_id in enumerate(ids):
        item_create(
            project=project,
            user=user,
            data={
                "external_id": external_id,
                "query": f"What is shown in picture {n}?",
                "format_instruction": "Answer with one word.",
                "images": images[external_id],
                "expected_answer": "cat",
                "match_type": "exact",
                "level": 1,
                "domain": "Life",
            },
        )
    out = tmp_path / "out"
    dataset_export(project=project, out=out)
    files = _loads_in_the_released_runner(project, out)

    assert files["0001"].name == "0001.json" and files["0001"].read_bytes() == original
    assert (out / "images" / "image_0001.png").read_bytes() == png_bytes(70)
    numbers = sorted(files[i].stem for i in ids)
    assert len(set(numbers)) == len(ids)  # one file per task, none sharing a number

    fresh = _agentic_project("again")
    again = dataset_import(project=fresh, path=out)
    assert again.items_created == len(ids) + 1 and not again.warnings, again.warnings
    for item in project.items.all():
        copy = fresh.items.get(external_id=item.external_id)
        for name in FIELDS:
            assert getattr(copy, name) == getattr(item, name), (item.external_id, name)
        assert _input_shas(copy) == _input_shas(item)
    # Exported again, the files are the same: the names are stable.
    second = tmp_path / "second"
    dataset_export(project=fresh, out=second)
    for path in sorted(out.rglob("*")):
        if path.is_file():
            assert (second / path.relative_to(out)).read_bytes() == path.read_bytes(), path
