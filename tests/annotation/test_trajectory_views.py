"""The trajectory editor page: what it shows, editing the working draft over htmx, saving,
mistakes shown next to their fields, a stale save answered 409, bounded queries."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.trajectories import document as td
from annotation.trajectories.services import task_document
from benchmark.builtin import taxonomies_ensure, toolsets_ensure
from benchmark.models import Item, Project, Role, Trajectory
from tests.factories import (
    ImageFactory,
    ItemFactory,
    MembershipFactory,
    UserFactory,
    image_ref,
)

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "trajectory-editor"}


def _checkpoint(n: int) -> dict[str, Any]:
    if n % 3 == 2:
        return {
            "id": f"C{n}",
            "axis": "S",
            "description": f"Search {n}.",
            "tools": ["google_search"],
            "search_check": {"keywords": [f"k{n}"], "expected": f"e{n}"},
        }
    return {
        "id": f"C{n}",
        "axis": "V",
        "description": f"Crop detail {n}.",
        "tools": ["crop"],
        "code_check": {
            "verifier": "verify_crop_ast",
            "image_index": 0,
            "bbox_2d": [10, 20, 300, 400],
        },
        "visual_check": {"question": f"What is {n}?", "expected_answer": str(n)},
    }


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    project = Project.objects.create(
        name="MME",
        kind="trajectory",
        data_format="agentic-mme",
        toolset=toolsets_ensure()["agentic-mme"],
        taxonomy=taxonomies_ensure()["agentic-mme"],
    )
    image = ImageFactory(projects=[project])
    user = UserFactory(username="traj-annotator")
    MembershipFactory(project=project, user=user, role=Role.ANNOTATOR)
    client = Client()
    client.force_login(user)

    def make_item(n_steps: int) -> Item:
        item = ItemFactory(
            project=project,
            query="What is written? Answer with one word.",
            expected_answer="Willow",
            match_type="exact",
            level=2,
            domain="Life",
            image_refs=[image_ref(image, position=0, role="input")],
            raw="",
            documents=[],
            category="",
            intent="",
        )
        Trajectory.objects.create(
            item=item,
            key="reference",
            checkpoints=[_checkpoint(n) for n in range(1, n_steps + 1)],
            ordering_constraints=[{"id": "O1", "sequence": ["C1", "C2"], "max_gap": 2}],
            efficiency={"reference_tool_calls": n_steps, "penalty_per_extra_call": 0.1},
        )
        return item

    return {"project": project, "user": user, "client": client, "image": image, "make": make_item}


def _url(item: Item) -> str:
    return reverse("annotation:trajectory_edit", args=[item.project_id, item.pk])


def _form(html: str) -> dict[str, Any]:
    """The editor form's fields as a browser would post them (checked boxes, selected options)."""
    data: dict[str, Any] = {}
    form = html[html.index('id="trajectory-editor"') :]
    for m in re.finditer(r"<input ([^>]*)>", form):
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))
        name = attrs.get("name")
        if not name:
            continue
        if attrs.get("type") == "checkbox":
            if " checked" in m.group(1):
                data[name] = "on"
            continue
        data[name] = _unescape(attrs.get("value", ""))
    for m in re.finditer(r'<textarea name="([^"]+)"[^>]*>(.*?)</textarea>', form, re.S):
        data[m.group(1)] = _unescape(m.group(2))
    for m in re.finditer(r'<select name="([^"]+)"[^>]*>(.*?)</select>', form, re.S):
        chosen = re.search(r'<option value="([^"]*)"[^>]*selected', m.group(2))
        data[m.group(1)] = _unescape(chosen.group(1)) if chosen else ""
    return data


def _unescape(text: str) -> str:
    import html

    return html.unescape(text)


@pytest.mark.parametrize("n_steps", [2, 30])
def test_the_page_needs_the_same_queries_for_2_and_30_steps(
    world: dict[str, Any], n_steps: int, django_assert_max_num_queries: Any
) -> None:
    item = world["make"](n_steps)
    # One more than before the history: the newest version's number.
    with django_assert_max_num_queries(10):
        response = world["client"].get(_url(item))
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('<li class="traj-step') == n_steps
    assert html.count("data-image-editor") == len([n for n in range(1, n_steps + 1) if n % 3 != 2])


def test_the_page_shows_steps_checks_and_the_split_format_instruction(
    world: dict[str, Any],
) -> None:
    item = world["make"](3)
    html = world["client"].get(_url(item)).content.decode()
    data = _form(html)
    assert data["task-question"] == "What is written?"
    assert data["task-format_instruction"] == "Answer with one word."
    assert data["steps-0-tool"] == "crop"
    assert data["steps-0-question"] == "What is 1?"
    assert data["steps-1-keywords"] == "k2"
    assert data["steps-0-check_op"] == "on"
    # The imported crop box is shown in the image editor.
    assert '"bbox_2d":[10.0,20.0,300.0,400.0]' in data["steps-0-recipe"].replace(" ", "")
    assert data["task-domain"] == "Life"


def test_moving_adding_and_removing_steps_is_unsaved_until_save(world: dict[str, Any]) -> None:
    item = world["make"](3)
    client = world["client"]
    data = _form(client.get(_url(item)).content.decode())
    moved = client.post(_url(item), {**data, "op": "down:0"}, **HX)
    assert moved.status_code == 200
    data = _form(moved.content.decode())
    assert (data["steps-0-id"], data["steps-1-id"]) == ("C2", "C1")
    added = _form(client.post(_url(item), {**data, "op": "add:S"}, **HX).content.decode())
    assert added["step-count"] == "4" and added["steps-3-axis"] == "S"
    assert added["steps-3-id"] == "C4"
    # Nothing is stored yet.
    stored = Trajectory.objects.get(item=item).checkpoints
    assert [c["id"] for c in stored] == ["C1", "C2", "C3"]

    added["steps-3-intent"] = "Look up the street."
    added["steps-3-keywords"] = "Willow St\nmap"
    added["steps-3-urls"] = "https://www.openstreetmap.org/search?query=willow"
    added["steps-3-search_expected"] = "Springfield"
    added["task-reference_tool_calls"] = "4"
    saved = client.post(_url(item), {**added, "op": "save"}, **HX)
    assert saved.status_code == 200
    assert "Saved as <a href=" in saved.content.decode()
    assert ">version 2</a>" in saved.content.decode()
    stored = Trajectory.objects.get(item=item).checkpoints
    assert [c["id"] for c in stored] == ["C2", "C1", "C3", "C4"]
    assert stored[3]["search_check"] == {
        "keywords": ["Willow St", "map"],
        "expected": "Springfield",
        "urls": ["https://www.openstreetmap.org/search?query=willow"],
    }


def test_a_draft_with_mistakes_comes_back_as_typed_with_messages(world: dict[str, Any]) -> None:
    item = world["make"](2)
    client = world["client"]
    data = _form(client.get(_url(item)).content.decode())
    data["steps-1-urls"] = "www.example.org"
    data["steps-0-args"] = '{"angle": "ninety"'
    response = client.post(_url(item), {**data, "op": "save"}, **HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Not saved: 2 problems to fix." in html
    assert "Step 2 (C2) · reference URLs: &#x27;www.example.org&#x27; must start with" in html
    assert "Step 1 (C1) · arguments: write a JSON object" in html
    assert _form(html)["steps-0-args"] == '{"angle": "ninety"'
    # Without htmx the page answers 400.
    assert client.post(_url(item), {**data, "op": "save"}).status_code == 400
    assert Trajectory.objects.get(item=item).checkpoints[1]["search_check"].get("urls") is None


def test_a_stale_save_answers_409_with_their_version_and_keeps_mine(world: dict[str, Any]) -> None:
    item = world["make"](2)
    client = world["client"]
    mine = _form(client.get(_url(item)).content.decode())
    theirs = dict(mine, **{"task-expected": "Birch"})
    assert client.post(_url(item), {**theirs, "op": "save"}, **HX).status_code == 200

    mine["steps-0-intent"] = "My better intent."
    response = client.post(_url(item), {**mine, "op": "save"}, **HX)
    assert response.status_code == 409
    html = response.content.decode()
    assert "Someone saved this trajectory after you opened it" in html
    assert "Birch" in html  # theirs, shown
    again = _form(html)
    assert again["steps-0-intent"] == "My better intent."  # mine, kept
    assert again["task-expected"] == "Willow"
    item.refresh_from_db()
    assert item.expected_answer == "Birch"
    # Saving from the conflict screen is a deliberate overwrite.
    assert client.post(_url(item), {**again, "op": "save"}, **HX).status_code == 200
    item.refresh_from_db()
    assert item.expected_answer == "Willow"


def test_an_unchanged_save_writes_nothing(world: dict[str, Any]) -> None:
    item = world["make"](2)
    client = world["client"]
    before = Item.objects.get(pk=item.pk).updated_at
    data = _form(client.get(_url(item)).content.decode())
    response = client.post(_url(item), {**data, "op": "save"}, **HX)
    assert "Nothing changed" in response.content.decode()
    assert Item.objects.get(pk=item.pk).updated_at == before


def test_the_level_warning_shows_on_the_working_draft(world: dict[str, Any]) -> None:
    item = world["make"](2)
    client = world["client"]
    data = _form(client.get(_url(item)).content.decode())
    response = client.post(_url(item), {**data, "task-level": "1", "op": "refresh"}, **HX)
    assert "Level 1 uses no search" in response.content.decode()


def test_the_item_page_links_to_the_editor(world: dict[str, Any]) -> None:
    item = world["make"](1)
    page = world["client"].get(reverse("benchmark:item_detail", args=[item.project_id, item.pk]))
    assert _url(item) in page.content.decode()


def test_other_projects_and_other_kinds_answer_404(world: dict[str, Any], project: Project) -> None:
    item = world["make"](1)
    atp_item = ItemFactory(project=project)
    MembershipFactory(project=project, user=world["user"], role=Role.ADMIN)
    client = world["client"]
    assert client.get(_url(atp_item)).status_code == 404
    stranger = UserFactory(username="stranger")
    other = Client()
    other.force_login(stranger)
    assert other.get(_url(item)).status_code == 404
    assert other.post(_url(item), {"op": "save"}).status_code == 404
    doc = task_document(item=item, reference=Trajectory.objects.get(item=item))
    assert td.fingerprint(doc)  # untouched


def test_a_malformed_post_answers_400_naming_the_field(world: dict[str, Any]) -> None:
    item = world["make"](2)
    client = world["client"]
    data = _form(client.get(_url(item)).content.decode())
    response = client.post(_url(item), {**data, "ord-count": "101", "op": "save"}, **HX)
    assert response.status_code == 400
    assert response.content.decode() == "ord-count: at most 100 entries (101 posted)"
    assert client.post(_url(item), {**data, "op": "explode"}).status_code == 400
