"""The project page as a new team meets it (issue 25, findings 9–11): the intent menu follows
the chosen category, actions grouped by what people do and shown by role, columns empty for
the whole list left out, empty states that say the next step, and the admin's first-run
checklist."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from benchmark.models import Project
from tests.factories import ItemFactory

pytestmark = pytest.mark.django_db


def options(html: str, select_id: str) -> list[str]:
    select = re.search(rf'<select[^>]*id="{select_id}"[^>]*>(.*?)</select>', html, re.S)
    assert select, select_id
    return re.findall(r'<option value="([^"]*)"', select.group(1))


def test_the_intent_filter_offers_the_chosen_categorys_intents(
    project: Project, clients: dict[str, Client]
) -> None:
    ItemFactory(project=project, category="Travel", intent="Route planning")
    ItemFactory(project=project, category="Travel", intent="Sightseeing")
    ItemFactory(project=project, category="Cooking", intent="Recipe steps")
    url = f"/projects/{project.pk}/"
    html = clients["annotator"].get(url).content.decode()
    assert options(html, "id_intent") == ["", "Recipe steps", "Route planning", "Sightseeing"]
    # each intent names its category, for the menu to follow a new choice before it is sent
    assert 'value="Recipe steps" data-parents="Cooking"' in html
    assert 'data-parent-select="id_category"' in html
    # without JavaScript: the page sent with a category offers that category's intents only
    html = clients["annotator"].get(url, {"category": "Travel"}).content.decode()
    assert options(html, "id_intent") == ["", "Route planning", "Sightseeing"]


def groups(html: str) -> dict[str, list[str]]:
    """The project page's action groups: group name -> link labels."""
    found = {}
    for slug, body in re.findall(
        r'data-action-group="([^"]+)">(.*?)(?=<div class="action-group"|</nav>)', html, re.S
    ):
        found[slug] = [
            re.sub(r"<[^>]+>", "", a).strip() for a in re.findall(r"<a [^>]*>(.*?)</a>", body)
        ]
    return found


def test_actions_are_grouped_by_what_people_do_and_shown_by_role(
    project: Project, clients: dict[str, Client], django_assert_max_num_queries: Any
) -> None:
    url = f"/projects/{project.pk}/"
    with django_assert_max_num_queries(8):
        annotator = clients["annotator"].get(url).content.decode()
    mine = groups(annotator)
    assert list(mine) == ["annotate", "data"]  # no review, models or settings to offer them
    assert "Judging" in mine["annotate"] and "New item" in mine["annotate"]
    assert "Import data" not in mine["data"] and "Export…" not in annotator
    admin = groups(clients["admin"].get(url).content.decode())
    assert list(admin) == ["annotate", "review", "models", "data", "settings"]
    assert admin["review"][:2] == ["Discard proposals", "Team"]
    assert admin["settings"] == ["Members", "Guidelines"]
    assert admin["data"][0] == "Import data"
    reviewer = groups(clients["reviewer"].get(url).content.decode())
    assert "settings" not in reviewer and "Import data" not in reviewer["data"]
    # hover help on each action
    assert 'title="Who did how much, agreement and pace" data-team-link' in (
        clients["admin"].get(url).content.decode()
    )


def test_columns_the_kind_lacks_or_the_list_leaves_empty_are_not_shown(
    project: Project, clients: dict[str, Client]
) -> None:
    ItemFactory(project=project, category="Travel", intent="Route planning")
    html = clients["annotator"].get(f"/projects/{project.pk}/").content.decode()
    head = re.search(r"<thead>(.*?)</thead>", html, re.S)
    assert head
    assert "<th>Category</th>" in head.group(1) and "<th>Intent</th>" in head.group(1)
    assert "Level" not in head.group(1)  # no item has a level
    project.data_format, project.kind, project.tag_syntax = "mms", "plan", ""
    project.save()
    html = clients["annotator"].get(f"/projects/{project.pk}/").content.decode()
    head = re.search(r"<thead>(.*?)</thead>", html, re.S)
    assert head
    assert "Category" not in head.group(1) and "Intent" not in head.group(1)
    assert 'id="id_category"' not in html and 'id="id_level"' not in html
    row = re.search(r"<tbody>(.*?)</tbody>", html, re.S)
    assert row and "—" not in row.group(1)


def test_dataset_statistics_definitions_are_hover_help_and_folded(
    project: Project, clients: dict[str, Client]
) -> None:
    html = clients["annotator"].get(
        f"/projects/{project.pk}/tag-review/decisions/", HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="tag-stats",
    ).content.decode()  # fmt: skip
    assert '<abbr title="documents attached to the query' in html
    definitions = re.search(r"<details[^>]*data-definitions>(.*?)</details>", html, re.S)
    assert definitions and "averaged over the queries" in definitions.group(1)
    outside = html.replace(definitions.group(0), "")
    assert "<dl" not in outside


def steps(html: str) -> dict[str, str]:
    return dict(re.findall(r'data-step="([a-z]+)" data-done="(true|false)"', html))


def test_an_admin_meets_a_first_run_checklist_that_ticks_and_can_be_dismissed(
    client_for: Any, django_assert_max_num_queries: Any
) -> None:
    from annotation.judgment_tasks.models import JudgmentTask
    from benchmark.models import Role
    from tests.factories import JudgmentTaskFactory, MembershipFactory, ProjectFactory, UserFactory

    project = ProjectFactory(name="Brand new")
    admin = UserFactory(username="new-admin")
    MembershipFactory(project=project, user=admin, role=Role.ADMIN)
    client = client_for(admin)
    url = f"/projects/{project.pk}/"
    with django_assert_max_num_queries(11):
        html = client.get(url).content.decode()
    assert "Getting this project started" in html
    assert steps(html) == {"people": "false", "items": "false", "task": "false"}
    # the empty list says what to do next, with links
    empty = re.search(r"data-empty-items>(.*?)</div>", html, re.S)
    assert empty
    assert f"/projects/{project.pk}/datasets/import/" in empty.group(1)
    assert f"/projects/{project.pk}/items/new/" in empty.group(1)
    assert "start a judgment task" in empty.group(1)

    MembershipFactory(project=project, role=Role.ANNOTATOR)
    ItemFactory(project=project)
    html = client.get(url).content.decode()
    assert steps(html) == {"people": "true", "items": "true", "task": "false"}
    assert "data-empty-items" not in html
    # others never see it
    annotator = project.memberships.get(role=Role.ANNOTATOR).user
    assert "data-first-run" not in client_for(annotator).get(url).content.decode()

    JudgmentTaskFactory(project=project)
    assert JudgmentTask.objects.filter(project=project).exists()
    assert "data-first-run" not in client.get(url).content.decode()  # all done

    other = ProjectFactory(name="Dismissed")
    MembershipFactory(project=other, user=admin, role=Role.ADMIN)
    other_url = f"/projects/{other.pk}/"
    assert "data-first-run" in client.get(other_url).content.decode()
    dismiss = f"/projects/{other.pk}/first-run/dismiss/"
    assert client_for(annotator).post(dismiss).status_code in (403, 404)
    answer = client.post(dismiss, HTTP_HX_REQUEST="true")
    assert answer.status_code == 200 and answer.content == b""
    assert "data-first-run" not in client.get(other_url).content.decode()
    assert client.post(dismiss).status_code == 302


def test_an_annotator_on_an_empty_project_is_told_who_imports(
    project: Project, clients: dict[str, Client]
) -> None:
    html = clients["annotator"].get(f"/projects/{project.pk}/").content.decode()
    empty = re.search(r"data-empty-items>(.*?)</div>", html, re.S)
    assert empty and "ask one to import it" in empty.group(1)
    assert "/import/" not in empty.group(1) and "Create an item" in empty.group(1)
