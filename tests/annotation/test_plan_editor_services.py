"""Saving m&m's plans as versions: version 1 written lazily, both forms stored, 409 on a stale
save, nothing to save, revert, alternatives, and the verifier's findings placed by argument."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from annotation.plan_editor import selectors, services
from annotation.plan_editor.models import PlanVersion
from benchmark.builtin import toolsets_ensure
from benchmark.datasets import services as datasets
from benchmark.exceptions import Conflict, Forbidden, NotFound, ValidationFailed
from benchmark.models import Item, Plan, PlanSyntax, Project
from benchmark.plans.codegen import plan_to_code
from benchmark.plans.parse import parse_code_plan
from benchmark.versions import StaleVersion
from tests.factories import ItemFactory, PlanFactory, PlanVersionFactory, ProjectFactory
from tests.shared_data import MMS_DATA, needs_data

pytestmark = pytest.mark.django_db

IMPORTED = [
    {"id": 0, "name": "image editing", "args": {"image": "17320.jpg", "prompt": "blue"}},
    {"id": 1, "name": "image captioning", "args": {"image": "<node-0>.image"}},
]
EDITED = [
    *IMPORTED,
    {"id": 2, "name": "image generation", "args": {"text": "a painting of <node-1>.text"}},
]


@pytest.fixture
def mms(project: Project) -> Project:
    project.kind = "plan"
    project.data_format = "mms"
    project.tag_syntax = ""
    project.toolset = toolsets_ensure()["mms"]
    project.save()
    return project


@pytest.fixture
def item(mms: Project) -> Item:
    item = ItemFactory(project=mms, query="Turn the ball blue and describe it")
    PlanFactory(item=item, key="gold", steps=IMPORTED, code="def solve(): ...")
    return item


def gold(item: Item) -> Plan:
    return Plan.objects.get(item=item, key="gold")


def test_first_save_records_the_imported_plan_as_version_1(
    item: Item, users: dict[str, Any]
) -> None:
    plan = services.plan_save(
        item=item, user=users["annotator"], steps=EDITED, base_number=1, note="add a painting"
    )
    versions = list(PlanVersion.objects.filter(item=item, key="gold").order_by("number"))
    assert [(v.number, v.author, v.base_number) for v in versions] == [
        (1, None, None),
        (2, users["annotator"], 1),
    ]
    assert versions[0].step_list == IMPORTED and versions[0].code == "def solve(): ..."
    assert versions[1].note == "add a painting"
    # Both forms on the plan; the code form reads back as the same steps.
    plan.refresh_from_db()
    assert plan.steps == EDITED and plan.form == PlanSyntax.JSON
    assert "output2 = image_generation(text=f\"a painting of {output1['text']}\")" in plan.code
    assert parse_code_plan(plan.code).to_json() == EDITED
    assert versions[1].code == plan.code


def test_key_order_of_arguments_is_kept_in_the_version(item: Item, users: dict[str, Any]) -> None:
    steps = [{"id": 0, "name": "image editing", "args": {"prompt": "blue", "image": "a.jpg"}}]
    services.plan_save(item=item, user=users["annotator"], steps=steps, base_number=1)
    version = PlanVersion.objects.get(item=item, number=2)
    assert version.steps.index('"prompt"') < version.steps.index('"image"')
    assert 'image_editing(prompt="blue", image="a.jpg")' in version.code


def test_stale_save_answers_409_with_their_version(item: Item, users: dict[str, Any]) -> None:
    services.plan_save(item=item, user=users["reviewer"], steps=EDITED, base_number=1)
    with pytest.raises(StaleVersion) as caught:
        services.plan_save(item=item, user=users["annotator"], steps=IMPORTED[:1], base_number=1)
    assert isinstance(caught.value, Conflict) and caught.value.status_code == 409
    assert caught.value.current.number == 2 and caught.value.current.step_list == EDITED
    assert users["reviewer"].username in caught.value.message
    assert gold(item).steps == EDITED
    assert PlanVersion.objects.filter(item=item).count() == 2


def test_unchanged_plan_is_nothing_to_save(item: Item, users: dict[str, Any]) -> None:
    with pytest.raises(ValidationFailed, match="nothing to save"):
        services.plan_save(item=item, user=users["annotator"], steps=IMPORTED, base_number=1)
    assert not PlanVersion.objects.exists()


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([], "steps: a plan needs at least one step"),
        ("[]", "steps: a plan is a list of steps"),
        ([{"id": 0, "args": {}}], "steps: step 1: the step has no tool name"),
        ([{"id": 0, "name": "", "args": {}}], "steps: step 1: choose a tool"),
        ([{"id": 0, "name": "image editing", "args": {"bad arg": "x"}}], "argument name 'bad arg'"),
    ],
)
def test_bad_plans_name_the_step(
    item: Item, users: dict[str, Any], steps: Any, message: str
) -> None:
    with pytest.raises(ValidationFailed, match=message):
        services.plan_save(item=item, user=users["annotator"], steps=steps, base_number=1)


def test_findings_do_not_stop_a_save(item: Item, users: dict[str, Any]) -> None:
    wrong = [
        *IMPORTED[:1],
        {"id": 1, "name": "image captioning", "args": {"image": "<node-0>.text"}},
    ]
    services.plan_save(item=item, user=users["annotator"], steps=wrong, base_number=1)
    assert gold(item).steps == wrong


def test_who_may_save(item: Item, users: dict[str, Any]) -> None:
    with pytest.raises(Forbidden):
        services.plan_save(item=item, user=users["outsider"], steps=EDITED, base_number=1)


def test_gt_key_is_the_gold_plan_and_a_new_item_gets_version_1(
    mms: Project, users: dict[str, Any]
) -> None:
    fresh = ItemFactory(project=mms)
    plan = services.plan_save(item=fresh, user=users["annotator"], steps=IMPORTED)
    assert plan.key == "gold" and not plan.is_alternative
    version = PlanVersion.objects.get(item=fresh)
    assert (version.number, version.author, version.base_number) == (1, users["annotator"], None)
    # The drafting feature drops a draft in without a base: no staleness check.
    services.plan_save(item=fresh, user=users["annotator"], steps=EDITED)
    assert (
        selectors.current_number(
            user=users["annotator"],
            item=selectors.plan_item_get(user=users["annotator"], project=mms, pk=fresh.pk),
            key="gt",
        )
        == 2
    )


def test_a_code_only_plan_keeps_its_form(mms: Project, users: dict[str, Any]) -> None:
    item = ItemFactory(project=mms)
    PlanFactory(
        item=item,
        key="gold",
        form=PlanSyntax.CODE,
        steps=[],
        code="output0 = image_editing(image='a.jpg', prompt='x')",
    )
    loaded = selectors.plan_item_get(user=users["annotator"], project=mms, pk=item.pk)
    assert selectors.plan_steps(selectors.plan_of(loaded, "gold")) == [
        {"id": 0, "name": "image editing", "args": {"image": "a.jpg", "prompt": "x"}}
    ]
    services.plan_save(item=item, user=users["annotator"], steps=IMPORTED, base_number=1)
    plan = gold(item)
    assert (
        plan.form == PlanSyntax.CODE
        and plan.steps == IMPORTED
        and plan.code.startswith("def solve():")
    )


def test_revert_adds_a_version_with_the_old_steps(item: Item, users: dict[str, Any]) -> None:
    services.plan_save(item=item, user=users["annotator"], steps=EDITED, base_number=1)
    services.plan_revert(plan=gold(item), user=users["reviewer"], number=1, base_number=2)
    latest = PlanVersion.objects.filter(item=item).order_by("-number").first()
    assert latest is not None
    assert (latest.number, latest.author, latest.note) == (
        3,
        users["reviewer"],
        "Reverted to version 1",
    )
    assert gold(item).steps == IMPORTED
    with pytest.raises(StaleVersion):
        services.plan_revert(plan=gold(item), user=users["reviewer"], number=2, base_number=2)
    with pytest.raises(NotFound):
        services.plan_revert(plan=gold(item), user=users["reviewer"], number=9, base_number=3)


def test_alternatives_add_edit_remove(item: Item, users: dict[str, Any]) -> None:
    first = services.plan_alternative_add(item=item, user=users["annotator"])
    second = services.plan_alternative_add(item=item, user=users["annotator"])
    assert (first.key, second.key) == ("alt:0", "alt:1")
    assert first.is_alternative and first.steps == IMPORTED and second.position > first.position
    services.plan_save(
        item=item,
        user=users["annotator"],
        steps=EDITED,
        key="alt:0",
        is_alternative=True,
        base_number=1,
    )
    assert Plan.objects.get(item=item, key="alt:0").steps == EDITED
    services.plan_alternative_remove(plan=first, user=users["annotator"])
    assert not Plan.objects.filter(item=item, key="alt:0").exists()
    # Its history stays, and its key is not reused.
    assert PlanVersion.objects.filter(item=item, key="alt:0").count() == 2
    assert services.plan_alternative_add(item=item, user=users["annotator"]).key == "alt:2"
    with pytest.raises(ValidationFailed, match="not an alternative"):
        services.plan_alternative_remove(plan=gold(item), user=users["annotator"])


def test_a_prediction_is_not_edited_here(item: Item, users: dict[str, Any]) -> None:
    PlanFactory(item=item, key="pred:gpt.jsonl", origin="model", steps=IMPORTED)
    with pytest.raises(ValidationFailed, match="prediction"):
        services.plan_save(item=item, user=users["annotator"], steps=EDITED, key="pred:gpt.jsonl")


def test_not_a_plan_project(users: dict[str, Any]) -> None:
    atp_item = ItemFactory(project=ProjectFactory())
    with pytest.raises((ValidationFailed, Forbidden)):
        services.plan_save(item=atp_item, user=users["admin"], steps=IMPORTED)


def test_findings_name_step_and_argument(mms: Project, users: dict[str, Any]) -> None:
    tools = selectors.editor_tools(user=users["annotator"], project=mms)
    steps = [
        IMPORTED[0],
        {"id": 1, "name": "image captioning", "args": {"image": "<node-0>.text", "colour": "x"}},
        {"id": 2, "name": "no such tool", "args": {}},
        {"id": 3, "name": "image editing", "args": {"image": "a.jpg"}},
    ]
    placed = {(f.code, f.step, f.arg) for f in selectors.plan_findings(tools=tools, steps=steps)}
    assert ("dangling_reference", 1, "image") in placed
    assert ("unknown_arg", 1, "colour") in placed
    assert ("unknown_tool", 2, "") in placed
    assert ("missing_arg", 3, "prompt") in placed
    fixed = [
        IMPORTED[0],
        {"id": 1, "name": "image captioning", "args": {"image": "<node-0>.image"}},
    ]
    assert selectors.plan_findings(tools=tools, steps=fixed) == []


@needs_data("mms", "tasks.json")
def test_export_writes_both_forms_and_imports_again(
    mms: Project, users: dict[str, Any], tmp_path: Path
) -> None:
    datasets.dataset_import(project=mms, path=MMS_DATA / "tasks.json")
    item = Item.objects.get(project=mms, external_id="28")
    services.plan_save(item=item, user=users["annotator"], steps=EDITED, key="gt", base_number=1)
    services.plan_alternative_add(item=item, user=users["annotator"], steps=IMPORTED)
    datasets.dataset_export(project=mms, out=tmp_path / "out")
    rows = {r["id"]: r for r in json.loads((tmp_path / "out" / "tasks.json").read_text())}
    row = rows[28]
    assert ast.literal_eval(row["plan_str"]) == EDITED
    assert row["code_str"] == plan_to_code(EDITED)
    assert ast.literal_eval(row["alt_plans_str"]) == [IMPORTED]
    untouched = json.loads((MMS_DATA / "tasks.json").read_text())
    assert rows[8] == next(r for r in untouched if r["id"] == 8)
    # The exported file imports into a fresh project with the same plans.
    fresh = ProjectFactory(kind="plan", data_format="mms", tag_syntax="", toolset=mms.toolset)
    datasets.dataset_import(project=fresh, path=tmp_path / "out" / "tasks.json")
    again = Item.objects.get(project=fresh, external_id="28")
    plans = {p.key: p for p in again.plans.all()}
    assert plans["gold"].steps == EDITED and plans["gold"].code == plan_to_code(EDITED)
    assert plans["alt:0"].steps == IMPORTED and plans["alt:0"].is_alternative


def test_history_rows_from_the_factory_are_what_the_editor_reads(
    mms: Project, users: dict[str, Any]
) -> None:
    version = PlanVersionFactory(plan__item__project=mms, number=1, author=users["reviewer"])
    loaded = selectors.plan_item_get(user=users["annotator"], project=mms, pk=version.item_id)
    steps, number = selectors.editor_state(user=users["annotator"], item=loaded, key="gt")
    assert number == 1 and steps == version.step_list
    assert parse_code_plan(version.code).to_json() == version.step_list
    with pytest.raises(StaleVersion):
        services.plan_save(item=loaded, user=users["annotator"], steps=EDITED, base_number=0)
