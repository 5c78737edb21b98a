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
