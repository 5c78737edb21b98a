"""ATP-Bench query verification relabels category and intent: the intent menu names each
intent's category, so the judging screen offers only the chosen category's intents
(static/js/app.js; the browser test is tests/e2e/test_project_page_ui_browser.py)."""

from __future__ import annotations

import re

import pytest

from annotation.judgment_tasks.forms import JudgmentForm
from benchmark.builtin import taxonomies_ensure
from benchmark.models import TaxonomyTerm, TermKind
from tests.factories import ItemFactory, JudgmentTaskFactory, ProjectFactory

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
