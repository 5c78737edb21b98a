"""Issue 14, the item list, the item page and the API item without per-request costs that grow:
the hiding rules add no subquery for a user no task can hide anything from (decided in Python
with one small query), the list's rows (drawn by the template) show each item escaped and cut
as before, and the query counts stay bounded."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from pytest_django.asserts import assertContains

from annotation.judgment_tasks.models import JudgmentTask
from benchmark import selectors, visibility
from benchmark.models import Project
from tests.annotation.test_blind_answer_edits import world as world  # noqa: F401 - fixture
from tests.factories import ItemFactory

pytestmark = pytest.mark.django_db


def _sqls(client: Client, url: str) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return [q["sql"] for q in queries.captured_queries]


def test_list_rows_show_each_item_as_the_user_reads_it(
    project: Project, clients: dict[str, Client]
) -> None:
    long = "A long query, " + "é" * 10 + "e\u0301" * 5 + " <b>&</b> " * 30 + "end"
    first = ItemFactory(project=project, external_id='x"<1>', query="Short & <i>sweet</i>?")
    second = ItemFactory(project=project, query=long, category="", intent="", level=None)
    third = ItemFactory(
        project=project,
        query="b" * 141,
        modality="image",
        status="discarded",
        discard_reason="Broken",
        image_refs=[{"sha256": "a" * 64, "role": "document", "path": "a.png", "position": 0}],
    )
    ItemFactory(project=project, query="c" * 140, level=3, category="A & B", intent="<x>")
    page = clients["admin"].get(f"/projects/{project.pk}/")
    url = f"/projects/{project.pk}/items/{first.pk}/"
    # the link carries href and hx-get; every value is escaped
    assertContains(
        page,
        f'<td class="nowrap"><a class="mono" href="{url}" hx-get="{url}" hx-target="#main"'
        ' hx-push-url="true">x&quot;&lt;1&gt;</a></td>',
        html=True,
    )
    assertContains(
        page,
        f'<td class="bulk-cell"><input type="checkbox" class="bulk-check" name="ids"'
        f' value="{first.pk}:draft" form="bulk-form" aria-label="Select x&quot;&lt;1&gt;"></td>',
        html=True,
    )
    assertContains(
        page, '<td class="query-cell">Short &amp; &lt;i&gt;sweet&lt;/i&gt;?</td>', html=True
    )
    # a query longer than 140 characters is cut to 139 and "…" (by the database)
    assertContains(page, f'<td class="query-cell">{"b" * 139}…</td>', html=True)
    assertContains(page, f'<td class="query-cell">{"c" * 140}</td>', html=True)
    shown_long = page.content.decode().split(f"/items/{second.pk}/")[2]
    assert "&lt;b&gt;&amp;&lt;/b&gt;" in shown_long and "…" in shown_long
    assert "<b>&</b>" not in page.content.decode()
    # empty facets show a dash; the modality a chip; the image count; the status badge
    assertContains(page, "<td>—</td>", count=2, html=True)
    # ATP-Bench has no levels: the kind lists no level column (issue 25, finding 10)
    assert '<th class="num">Level</th>' not in page.content.decode()
    assertContains(page, '<td><span class="chip">image</span></td>', count=1, html=True)
    assertContains(page, '<td><span class="chip chip-muted">text</span></td>', count=3, html=True)
    assertContains(page, "<td>A &amp; B</td>", html=True)
    assertContains(page, "<td>&lt;x&gt;</td>", html=True)
    assertContains(page, '<td class="num">1</td>', html=True)
    assertContains(
        page, '<td><span class="badge status-discarded">Discarded</span></td>', html=True
    )
    assert f'value="{third.pk}:discarded"' in page.content.decode()
    # an annotator's list has the same rows
    assertContains(clients["annotator"].get(f"/projects/{project.pk}/"), url, count=2)


def test_no_rule_subquery_for_a_user_nothing_can_be_hidden_from(
    project: Project, clients: dict[str, Client], django_assert_max_num_queries: Any
) -> None:
    item = ItemFactory(project=project, expected_answer="The answer")
    client = clients["annotator"]
    pages = {
        # the saved filters above the list are one query of their own (issue 24)
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
    selectors.item_rows_flag(user=verifier, rows=[row])  # for the rows a page shows
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


def test_a_remembered_decision_does_not_outlive_its_request(
    world: dict[str, Any],  # noqa: F811
    django_assert_num_queries: Any,
) -> None:
    verifier, task = world["u"]["annotator1"], world["task"]
    task.active = False
    task.save(update_fields=["active"])
    with visibility.decisions_remembered():  # one request
        assert visibility.hidden_items(user=verifier).query.is_empty()
        with django_assert_num_queries(0):  # asked once per request
            assert visibility.hidden_items(user=verifier).query.is_empty()
    # a write that sends no signal (another process, update(), bulk_create)
    JudgmentTask.objects.filter(pk=task.pk).update(active=True)
    with visibility.decisions_remembered():  # the next request
        assert not visibility.hidden_items(user=verifier).query.is_empty()
        assert selectors.item_get(
            user=verifier, project=world["project"], pk=world["item"].pk
        ).answer_hidden  # type: ignore[attr-defined]
