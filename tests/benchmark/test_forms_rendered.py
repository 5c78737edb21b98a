"""Forms are drawn by Django's own widget templates (no project form renderer re-implementing
them), and the templates are compiled once per process by the cached loader. What the item
list's forms show: the filters with their facets (escaped) and the chosen values selected, the
bulk bar's tasks (escaped)."""

from __future__ import annotations

import re

import pytest
from django.forms.renderers import DjangoTemplates, get_default_renderer
from django.template import engines
from django.template.loaders.cached import Loader as CachedLoader
from django.test import Client

from annotation.judgment_tasks.models import JudgmentTask
from benchmark.models import Project
from tests.factories import ItemFactory

pytestmark = pytest.mark.django_db


def test_forms_use_djangos_renderer_and_templates_come_from_the_cached_loader() -> None:
    assert type(get_default_renderer()) is DjangoTemplates
    loaders = engines["django"].engine.template_loaders  # type: ignore[attr-defined]
    # django-template-partials' loader, around Django's cached loader
    (partials,) = loaders
    assert any(isinstance(inner, CachedLoader) for inner in partials.loaders)


def _select(html: str, name: str) -> str:
    match = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', html, re.S)
    assert match, name
    return match.group(1)


def test_the_item_filters_show_their_facets_escaped_and_the_choice_selected(
    project: Project, clients: dict[str, Client]
) -> None:
    ItemFactory(project=project, category="A & <B>", intent="Framework", level=2)
    ItemFactory(project=project, category="Plain", intent="<i>ntent", level=1)
    page = clients["annotator"].get(
        f"/projects/{project.pk}/?status=draft&category=Plain&q=%22quoted%22+%3Cx%3E"
    )
    html = page.content.decode()
    categories = _select(html, "category")
    assert '<option value="A &amp; &lt;B&gt;">A &amp; &lt;B&gt;</option>' in categories
    assert '<option value="Plain" selected>Plain</option>' in categories
    # each intent names its category (the list follows the chosen category, issue 25)
    assert '<option value="&lt;i&gt;ntent" data-parents="Plain">&lt;i&gt;ntent</option>' in _select(
        html, "intent"
    )
    assert '<option value="draft" selected>' in _select(html, "status")
    assert re.search(r'<input type="search" name="q" value="&quot;quoted&quot; &lt;x&gt;"', html)
    assert "<B>" not in html and "<i>ntent" not in html


def test_the_bulk_bar_lists_the_tasks_escaped(project: Project, clients: dict[str, Client]) -> None:
    ItemFactory(project=project)
    task = JudgmentTask.objects.create(
        project=project, name="T & <t>", scheme="text", question="Q?"
    )
    html = clients["admin"].get(f"/projects/{project.pk}/").content.decode()
    tasks = _select(html, "task")
    assert f'<option value="{task.pk}">T &amp; &lt;t&gt;</option>' in tasks
    assert "<t>" not in html
