"""An evaluation of a saved filter's items: the "Evaluate a model" form offers the project's
saved filters, a run started from it evaluates exactly the items the item list shows for the
filter, and ``manage.py evaluate --items filter:NAME`` does the same; an unknown name is
refused naming it."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from benchmark.models import Item, Project
from benchmark.saved_filters.services import saved_filter_create
from review.evaluation.models import EvaluationResult, EvaluationRun
from tests.llm_server import MODEL, FakeModelServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def fruit(eval_project: Project, users: dict[str, Any]) -> Any:
    """A saved filter of the item list that keeps pear and kiwi (a search)."""
    Item.objects.filter(project=eval_project, external_id="pear").update(query="pear fruit")
    Item.objects.filter(project=eval_project, external_id="kiwi").update(query="kiwi fruit")
    return saved_filter_create(
        project=eval_project, user=users["annotator"], name="fruits", query="q=fruit"
    )


def test_the_form_offers_saved_filters_and_the_run_takes_their_items(
    eval_project: Project, eval_server: FakeModelServer, clients: dict[str, Client], fruit: Any,
    django_capture_on_commit_callbacks: Any, settings: Any,
) -> None:  # fmt: skip
    settings.CELERY_TASK_ALWAYS_EAGER = True
    url = reverse("review:evaluation", args=[eval_project.pk])
    assert b'<option value="filter:fruits">Saved filter fruits</option>' in (
        clients["reviewer"].get(url).content
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = clients["reviewer"].post(
            url,
            {"base_url": eval_server.url, "model": MODEL, "items": "filter:fruits",
             "max_rounds": "5", "max_tool_calls": "5", "workers": "2"},
        )  # fmt: skip
    assert response.status_code == 302
    run = EvaluationRun.objects.get(project=eval_project)
    assert (run.items, run.item_count) == ("filter:fruits", 2)
    done = EvaluationResult.objects.filter(run=run).values_list("item__external_id", flat=True)
    assert sorted(done) == ["kiwi", "pear"]
    # What the item list shows for the same query.
    listed = clients["reviewer"].get(
        reverse("benchmark:project_detail", args=[eval_project.pk]) + "?" + fruit.query
    )
    assert {r["external_id"] for r in listed.context["page"].object_list} == {"kiwi", "pear"}


def test_the_command_evaluates_a_saved_filters_items(
    eval_project: Project, eval_server: FakeModelServer, fruit: Any
) -> None:
    out = StringIO()
    call_command(
        "evaluate", "--project", eval_project.name, "--model", MODEL,
        "--base-url", eval_server.url, "--items", "filter:fruits", stdout=out, stderr=StringIO(),
    )  # fmt: skip
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["item"] for line in lines[:-1]] == ["pear", "kiwi"]
    assert lines[-1]["summary"]["items"] == 2


def test_an_unknown_saved_filter_is_refused_naming_it(
    eval_project: Project, eval_server: FakeModelServer, fruit: Any
) -> None:
    with pytest.raises(CommandError) as caught:
        call_command(
            "evaluate", "--project", eval_project.name, "--items", "filter:vegetables",
            stdout=StringIO(), stderr=StringIO(),
        )  # fmt: skip
    assert caught.value.returncode == 2
    assert str(caught.value) == (
        f"--items: project {eval_project.name!r} has no saved filter 'vegetables' (it has 'fruits')"
    )
