"""ATP-Bench query verification relabels category and intent: the intent menu names each
intent's category, so the judging screen offers only the chosen category's intents
(static/js/app.js; the browser test is tests/e2e/test_project_page_ui_browser.py), and the
judgment services check the relabel against the project's taxonomy (400 with the reason)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.judgment_tasks import services
from annotation.judgment_tasks.forms import JudgmentForm
from annotation.judgment_tasks.models import Judgment
from benchmark.builtin import taxonomies_ensure
from benchmark.exceptions import ValidationFailed
from benchmark.models import TaxonomyTerm, TermKind
from tests.factories import (
    ItemFactory,
    JudgmentTaskFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def test_the_relabel_intent_menu_follows_the_relabel_category() -> None:
    taxonomy = taxonomies_ensure()["atp"]
    project = ProjectFactory(taxonomy=taxonomy)
    task = JudgmentTaskFactory(project=project, relabel_fields=["category", "intent"])
    form = JudgmentForm(task=task, item=ItemFactory(project=project))
    html = str(form["relabel_intent"])
    assert 'data-parent-select="id_relabel_category"' in html
    intent = TaxonomyTerm.objects.filter(taxonomy=taxonomy, kind=TermKind.INTENT).select_related(
        "parent"
    ).first()  # fmt: skip
    assert intent is not None and intent.parent is not None
    option = re.search(rf'<option value="{re.escape(intent.name)}"[^>]*>', html)
    assert option and f'data-parents="{intent.parent.name}"' in option.group(0)
    # a task relabelling the intent alone has nothing to follow
    alone = JudgmentTaskFactory(project=project, relabel_fields=["intent"], name="Intent only")
    assert "data-parent-select" not in str(
        JudgmentForm(task=alone, item=ItemFactory(project=project))["relabel_intent"]
    )


# ---------------------------------------------------------------- checked on the server
# The judging screen narrows the intent menu in the browser; the judgment services check the
# relabel against the project's taxonomy as well (the API and a hand-made form post too).


def _relabel_world() -> dict[str, Any]:
    taxonomy = taxonomies_ensure()["atp"]
    project = ProjectFactory(taxonomy=taxonomy)
    intent = (
        TaxonomyTerm.objects.filter(taxonomy=taxonomy, kind=TermKind.INTENT)
        .exclude(parent=None)
        .select_related("parent")
        .first()
    )
    assert intent is not None and intent.parent is not None
    parents = set(
        TaxonomyTerm.objects.filter(taxonomy=taxonomy, kind=TermKind.INTENT, name=intent.name)
        .exclude(parent=None)
        .values_list("parent__name", flat=True)
    )
    other = (
        TaxonomyTerm.objects.filter(taxonomy=taxonomy, kind=TermKind.CATEGORY)
        .exclude(name__in=parents)
        .first()
    )
    assert other is not None
    task = JudgmentTaskFactory(
        project=project, relabel_fields=["category", "intent"], scheme="nominal",
        labels=[{"value": "keep", "label": "Keep"}], overlap=1,
    )  # fmt: skip
    # An imported item whose pair the taxonomy does not know.
    item = ItemFactory(project=project, category="Imported cat", intent="Imported intent")
    user = UserFactory(username="relabeller")
    MembershipFactory(project=project, user=user, role="annotator")
    return {"task": task, "item": item, "user": user, "intent": intent, "other": other}


def _submit(w: dict[str, Any], relabel: dict[str, str]) -> Any:
    lease = services.assignment_next_for_user(task=w["task"], user=w["user"])
    assert lease is not None and lease.item_id == w["item"].pk
    return services.judgment_submit(
        task=w["task"], item=w["item"], user=w["user"], value="keep", relabel=relabel
    )


def test_a_relabel_outside_the_taxonomy_is_refused_with_the_reason() -> None:
    w = _relabel_world()
    with pytest.raises(
        ValidationFailed, match="relabel category: 'Cookery' is not a term of the project's"
    ):
        _submit(w, {"category": "Cookery"})
    with pytest.raises(
        ValidationFailed, match="relabel intent: 'Whatever' is not a term"
    ) as refused:
        _submit(w, {"category": w["intent"].parent.name, "intent": "Whatever"})
    assert refused.value.status_code == 400
    assert not Judgment.objects.exists()


def test_an_intent_of_another_category_is_refused() -> None:
    w = _relabel_world()
    intent, other = w["intent"], w["other"]
    with pytest.raises(ValidationFailed, match=f"not an intent of the category '{other.name}'"):
        _submit(w, {"category": other.name, "intent": intent.name})
    # The intent changed alone is checked against the item's category after the relabel.
    w["item"].category = other.name
    w["item"].save(update_fields=["category"])
    with pytest.raises(ValidationFailed, match=f"belongs to {intent.parent.name}"):
        _submit(w, {"intent": intent.name})
    judgment = _submit(w, {"category": intent.parent.name, "intent": intent.name})
    assert judgment.relabel == {"category": intent.parent.name, "intent": intent.name}


def test_the_items_own_values_pass_and_a_category_alone_may_change() -> None:
    """The form posts the item's own values when nothing is relabelled (imported items may
    pair them as the taxonomy does not); the browser clears an intent that no longer fits a
    new category, which leaves the intent as it was."""
    w = _relabel_world()
    judgment = _submit(w, {"category": "Imported cat", "intent": "Imported intent"})
    assert judgment.relabel == {"category": "Imported cat", "intent": "Imported intent"}
    second = ItemFactory(
        project=w["task"].project, category="Imported cat", intent="Imported intent"
    )
    w["item"] = second
    assert _submit(w, {"category": w["other"].name, "intent": ""}).relabel == {
        "category": w["other"].name
    }


def test_the_api_and_the_judging_screen_answer_400_with_the_reason() -> None:
    w = _relabel_world()
    intent, other = w["intent"], w["other"]
    api = APIClient()
    api.force_authenticate(w["user"])
    base = f"/api/judgment-tasks/{w['task'].pk}"
    assert api.post(f"{base}/next/").status_code == 200
    answer = api.post(
        f"{base}/judgments/",
        {"item": w["item"].pk, "value": "keep", "relabel": {"category": other.name, "intent": intent.name}},
        format="json",
    )  # fmt: skip
    assert answer.status_code == 400
    assert "is not an intent of the category" in answer.content.decode()
    client = Client()
    client.force_login(w["user"])
    url = reverse("annotation:judge", args=[w["task"].pk, w["item"].pk])
    page = client.post(
        url,
        {"value": '"keep"', "relabel_category": other.name, "relabel_intent": intent.name,
         "comment": "Typed and kept."},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="judging",
    )  # fmt: skip
    assert page.status_code == 400
    body = page.content.decode()
    assert f"is not an intent of the category &#x27;{other.name}&#x27;" in body
    assert "Typed and kept." in body and '<div id="judging"' in body
    assert not Judgment.objects.exists()
