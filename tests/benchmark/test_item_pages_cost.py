"""Issue 14, the item list, the item page and the API item without per-request costs that grow:
the hiding rules add no subquery for a user no task can hide anything from (decided in Python
with one small query), the list's rows are filled in once in Python (same markup as the
template had), and the query counts stay bounded."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.template import Context, Template
from django.test import Client
from django.test.utils import CaptureQueriesContext

from benchmark import presenters, visibility
from benchmark.models import Item, Project
from benchmark.projects import selectors
from tests.annotation.test_blind_answer_edits import world as world  # noqa: F401 - fixture
from tests.factories import ItemFactory

pytestmark = pytest.mark.django_db

# The row markup as templates/benchmark/project_detail.html had it before the rows were
# filled in by benchmark.presenters.item_table_rows: the two must print the same bytes.
TEMPLATE_ROW = Template(
    """{% for item in items %}
      <tr{% if bulk_form %} data-bulk-row tabindex="0"{% endif %}>
        {% if bulk_form %}<td class="bulk-cell"><input type="checkbox" class="bulk-check" name="ids" value="{{ item.pk }}:{{ item.status }}" form="bulk-form" aria-label="Select {{ item.external_id }}"></td>{% endif %}
        <td class="nowrap"><a class="mono" href="{% url 'benchmark:item_detail' item.project_id item.pk %}" hx-get="{% url 'benchmark:item_detail' item.project_id item.pk %}" hx-target="#main" hx-push-url="true">{{ item.external_id }}</a></td>
        <td class="query-cell">{{ item.query|truncatechars:140 }}</td>
        <td>{{ item.category|default:"—" }}</td>
        <td>{{ item.intent|default:"—" }}</td>
        <td class="num">{{ item.level|default:"—" }}</td>
        <td>{% if item.modality == "image" %}<span class="chip">image</span>{% else %}<span class="chip chip-muted">text</span>{% endif %}</td>
        <td class="num">{{ item.image_refs|length }}</td>
        <td>{% include "partials/status_badge.html" with status=item.status label=item.get_status_display %}</td>
      </tr>
    {% endfor %}"""  # noqa: E501
)


def _sqls(client: Client, url: str) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return [q["sql"] for q in queries.captured_queries]


@pytest.mark.parametrize("bulk", [True, False])
def test_list_rows_print_what_the_template_printed(project: Project, bulk: bool) -> None:
    long = "A long query, " + "é" * 10 + "e\u0301" * 5 + " <b>&</b> " * 30 + "end"
    ItemFactory(project=project, external_id='x"<1>', query="Short & <i>sweet</i>?")
    ItemFactory(project=project, query=long, category="", intent="", level=None)
    ItemFactory(
        project=project,
        query="b" * 141,
        modality="image",
        status="discarded",
        discard_reason="Broken",
    )
    ItemFactory(project=project, query="c" * 140, level=3, category="A & B", intent="<x>")
    items = list(Item.objects.filter(project=project).order_by("pk"))
    expected = TEMPLATE_ROW.render(Context({"items": items, "bulk_form": bulk}))
    url = f"/projects/{project.pk}/items/0/"
    rows = presenters.item_table_rows(items, item_url=url, bulk=bulk)
    assert "".join(row.row_html for row in rows) == expected  # type: ignore[attr-defined]
    assert "&lt;b&gt;&amp;&lt;/b&gt;" in expected and "…" in expected


def test_no_rule_subquery_for_a_user_nothing_can_be_hidden_from(
    project: Project, clients: dict[str, Client], django_assert_max_num_queries: Any
) -> None:
    item = ItemFactory(project=project, expected_answer="The answer")
    client = clients["annotator"]
    pages = {
        f"/projects/{project.pk}/": 9,
        f"/projects/{project.pk}/?q=widget": 10,
        f"/projects/{project.pk}/?status=draft&level=1": 10,
        f"/projects/{project.pk}/items/{item.pk}/": 10,
        f"/api/items/{item.pk}/": 4,
    }
    for url, budget in pages.items():
        with django_assert_max_num_queries(budget):
            sqls = _sqls(client, url)
        assert not any('"annotation_judgment"' in sql for sql in sqls), url
        assert not any("annotation_outcome" in sql for sql in sqls), url
        assert not any("annotation_taskunit" in sql for sql in sqls), url
    assert client.get(f"/api/items/{item.pk}/").json()["expected_answer"] == "The answer"


def test_a_blind_verifier_still_gets_the_rule_and_an_empty_answer(
    world: dict[str, Any],  # noqa: F811
    django_assert_max_num_queries: Any,
) -> None:
    verifier, item = world["u"]["annotator1"], world["item"]
    assert not visibility.hidden_items(user=verifier).query.is_empty()
    assert visibility.hidden_items(user=world["u"]["reviewer"]).query.is_empty()
    client = world["c"]["annotator1"]
    with django_assert_max_num_queries(5):
        sqls = _sqls(client, f"/api/items/{item.pk}/")
    assert any("annotation_outcome" in sql for sql in sqls)
    assert client.get(f"/api/items/{item.pk}/").json()["expected_answer"] == ""
    (row,) = selectors.item_list_rows(user=verifier, project=world["project"])
    assert row.answer_hidden  # type: ignore[attr-defined]
    reviewer = world["c"]["reviewer"]
    assert reviewer.get(f"/api/items/{item.pk}/").json()["expected_answer"] == "Pack order"


def test_a_search_reads_the_text_index_once_and_pages_in_order(
    project: Project, clients: dict[str, Client]
) -> None:
    made = [ItemFactory(project=project, query=f"Widget number {i}") for i in range(60)]
    ItemFactory(project=project, query="Something else")
    client = clients["annotator"]
    url = f"/projects/{project.pk}/?q=widg"
    sqls = _sqls(client, url)
    assert sum(("benchmark_item_fts" in sql or "to_tsquery" in sql) for sql in sqls) == 1
    first = client.get(url).content.decode()
    second = client.get(url + "&page=2").content.decode()
    assert 'id="match-count">60<' in first
    shown = [i for i, item in enumerate(made) if f"/items/{item.pk}/" in first]
    assert shown == list(range(50))
    assert [i for i, item in enumerate(made) if f"/items/{item.pk}/" in second] == list(
        range(50, 60)
    )
    assert "Something else" not in first + second


def test_a_remembered_decision_does_not_outlive_a_write(
    world: dict[str, Any],  # noqa: F811
    django_assert_num_queries: Any,
) -> None:
    verifier, task = world["u"]["annotator1"], world["task"]
    task.active = False
    task.save(update_fields=["active"])
    assert visibility.hidden_items(user=verifier).query.is_empty()
    with django_assert_num_queries(0):  # asked once per user object (one request's)
        assert visibility.hidden_items(user=verifier).query.is_empty()
    task.active = True
    task.save(update_fields=["active"])
    assert not visibility.hidden_items(user=verifier).query.is_empty()
    assert selectors.item_get(
        user=verifier, project=world["project"], pk=world["item"].pk
    ).answer_hidden  # type: ignore[attr-defined]
