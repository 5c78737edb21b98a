"""Pages that must not grow with the project: the project page reads kept tallies (exact status
counts and facets, whatever wrote the items) and searches through the text index (SQLite FTS5
or PostgreSQL full-text search, same results)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from benchmark import selectors
from benchmark.datasets.services import dataset_import
from benchmark.models import Item, ItemStatus, Project
from benchmark.projects.services import item_restore, item_status_set
from benchmark.selectors import ItemFilters
from tests.factories import ItemFactory, ProjectFactory


def _counts(project: Project, user: Any) -> dict[str, int]:
    return selectors.item_status_counts(user=user, project=project)


def _page_queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


def test_the_project_page_runs_as_many_queries_for_50_items_as_for_10(
    project: Project, clients: dict[str, Client]
) -> None:
    url = reverse("benchmark:project_detail", kwargs={"project_id": project.pk})
    ItemFactory.create_batch(10, project=project)
    client = clients["annotator"]
    small = [_page_queries(client, url), _page_queries(client, url + "?q=widget")]
    ItemFactory.create_batch(40, project=project, category="Recipe", intent="Cooking")
    large = [_page_queries(client, url), _page_queries(client, url + "?q=widget")]
    assert small == large
    html = client.get(url).content.decode()
    assert 'id="match-count">50<' in html
    assert "Recipe" in html  # the new category reached the filter menu


def test_a_long_filtered_list_shows_a_capped_count_and_still_pages(
    project: Project, clients: dict[str, Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selectors, "COUNT_CAP", 60)
    ItemFactory.create_batch(120, project=project, level=2)
    url = reverse("benchmark:project_detail", kwargs={"project_id": project.pk})
    html = clients["annotator"].get(url + "?level=2").content.decode()
    assert 'id="match-count">60+<' in html  # not a count of the whole project
    assert 'id="match-count">120<' in clients["annotator"].get(url).content.decode()
    page3 = clients["annotator"].get(url + "?level=2&page=3").content.decode()
    assert "Showing <strong>101–120</strong>" in page3


def test_counts_stay_exact_through_import_status_changes_discard_and_delete(
    project: Project, users: dict[str, Any], tmp_path: Path
) -> None:
    reviewer = users["reviewer"]
    rows = [
        {"trace_id": f"atp_{i}", "query": f"Question {i}", "doc": [], "images": [], "gt": "A.",
         "category": "Travel" if i % 2 else "Academic", "intent": "Identification"}
        for i in range(7)
    ]  # fmt: skip
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    dataset_import(project=project, path=tmp_path)
    ItemFactory.create_batch(3, project=project, status=ItemStatus.IN_REVIEW)
    other = ItemFactory(project=ProjectFactory(name="Elsewhere"))
    assert _counts(project, reviewer) == {
        "total": 10, "draft": 7, "in_review": 3, "verified": 0, "discarded": 0
    }  # fmt: skip
    facets = selectors.item_facets(user=reviewer, project=project)
    assert facets.categories == ["Academic", "Travel"]

    item = Item.objects.get(project=project, external_id="atp_1")
    item_status_set(item=item, user=reviewer, status=ItemStatus.VERIFIED, reason="")
    discarded = Item.objects.get(project=project, external_id="atp_2")
    item_status_set(item=discarded, user=reviewer, status=ItemStatus.DISCARDED, reason="Broken")
    assert _counts(project, reviewer) == {
        "total": 10, "draft": 5, "in_review": 3, "verified": 1, "discarded": 1
    }  # fmt: skip
    item_restore(item=discarded, user=reviewer, reason="Fixed")
    Item.objects.filter(project=project, status=ItemStatus.IN_REVIEW).update(status="verified")
    Item.objects.filter(project=project, category="Travel").delete()
    assert _counts(project, reviewer) == {
        "total": 7, "draft": 4, "in_review": 0, "verified": 3, "discarded": 0
    }  # fmt: skip
    assert selectors.item_facets(user=reviewer, project=project).categories == ["Academic"]
    # the same as counting the items
    for status in ItemStatus.values:
        n = Item.objects.filter(project=project, status=status).count()
        assert _counts(project, reviewer)[status] == n
    # re-importing the same file adds nothing, nor counts anything twice
    dataset_import(project=project, path=tmp_path)
    assert _counts(project, reviewer)["total"] == 10
    assert (
        selectors.item_count(user=reviewer, project=project, filters=ItemFilters(status="draft")).n
        == Item.objects.filter(project=project, status="draft").count()
    )
    other.project.delete()
    assert _counts(project, users["outsider"])["total"] == 0  # not their project


def _search(user: Any, project: Project, text: str) -> list[str]:
    rows = selectors.item_list(user=user, project=project, filters=ItemFilters(q=text))
    return sorted(rows.values_list("external_id", flat=True))


def test_search_finds_words_prefixes_and_ids_in_the_users_projects_only(
    project: Project, other_project: Project, users: dict[str, Any]
) -> None:
    ItemFactory(project=project, external_id="atp-00123", query="Which framework is shown?")
    ItemFactory(project=project, external_id="mme_7", query="Where is the Frame made? Café.")
    ItemFactory(project=project, external_id="x.42", query="Count the apples.")
    ItemFactory(project=other_project, external_id="theirs", query="Which framework is it?")
    Item.objects.bulk_create(
        [Item(project=project, external_id="bulk-1", query="A bulk framework question")]
    )
    user = users["annotator"]
    assert _search(user, project, "framework") == ["atp-00123", "bulk-1"]
    assert _search(user, project, "FRAME") == ["atp-00123", "bulk-1", "mme_7"]  # prefix
    assert _search(user, project, "which frame") == ["atp-00123"]  # every word
    assert _search(user, project, "shown frame") == ["atp-00123"]  # in any order
    assert _search(user, project, "atp-00123") == ["atp-00123"]  # an external id
    assert _search(user, project, "00123") == ["atp-00123"]
    assert _search(user, project, "mme_7") == ["mme_7"]
    assert _search(user, project, "x.42") == ["x.42"]
    assert _search(user, project, "café") == ["mme_7"]
    assert _search(user, project, "rk") == []  # words, not substrings
    assert _search(user, project, "---") == []
    assert _search(user, project, 'appl*"(') == ["x.42"]  # no query syntax gets through
    # another project's items are never found, whoever asks
    assert _search(users["outsider"], project, "framework") == []
    assert _search(user, other_project, "framework") == []
    assert _search(users["outsider"], other_project, "framework") == ["theirs"]
    # edits and deletes reach the index
    Item.objects.filter(external_id="atp-00123").update(query="Nothing to see")
    assert _search(user, project, "framework") == ["bulk-1"]
    Item.objects.filter(external_id="bulk-1").delete()
    assert _search(user, project, "framework") == []
    assert _search(user, project, "nothing see") == ["atp-00123"]


def test_search_on_the_page_and_in_the_api(
    project: Project, clients: dict[str, Client], users: dict[str, Any]
) -> None:
    ItemFactory(project=project, external_id="atp-1", query="Which framework is shown?")
    ItemFactory(project=project, external_id="atp-2", query="What is on the sign?")
    page = reverse("benchmark:project_detail", kwargs={"project_id": project.pk})
    html = clients["annotator"].get(page + "?q=framew").content.decode()
    assert "atp-1" in html and "atp-2" not in html
    assert 'id="match-count">1<' in html
    api = clients["annotator"].get("/api/items/", {"q": "sign", "project": project.pk}).json()
    assert [row["external_id"] for row in api["results"]] == ["atp-2"]


def test_lost_triggers_come_back_with_exact_counts_and_index(
    project: Project, users: dict[str, Any]
) -> None:
    """SQLite drops a table's triggers when a migration rebuilds it; ``ensure`` (run after
    every migrate) puts them back and recounts."""
    from benchmark.models import indexing

    ItemFactory(project=project, external_id="kept", query="Kept framework")
    indexing.drop(connection)
    ItemFactory(project=project, external_id="unseen", query="Unseen framework")
    indexing.ensure(connection)
    ItemFactory(project=project, external_id="after", query="Later framework")
    assert _counts(project, users["annotator"])["total"] == 3
    assert _search(users["annotator"], project, "framework") == ["after", "kept", "unseen"]


def test_the_api_list_of_a_project_is_counted_from_the_tallies_and_pages_to_the_end(
    project: Project, other_project: Project, clients: dict[str, Client]
) -> None:
    """One project's items through the API: the count comes from the kept tallies (no COUNT
    over the items, whose cost grows with the project), is exact, and the ``next`` links
    reach every item; a filter the tallies cannot answer (level) is counted over the rows;
    a project the user is not a member of lists nothing."""
    ItemFactory.create_batch(60, project=project, status=ItemStatus.DRAFT, level=1)
    ItemFactory.create_batch(45, project=project, status=ItemStatus.VERIFIED, level=2)
    ItemFactory.create_batch(5, project=other_project)
    client = clients["annotator"]

    def pages(url: str) -> tuple[int, list[str], list[str]]:
        seen: list[str] = []
        counts: list[str] = []
        count = -1
        while url:
            with CaptureQueriesContext(connection) as ctx:
                answer = client.get(url).json()
            counts += [q["sql"] for q in ctx.captured_queries if "COUNT(" in q["sql"].upper()]
            count = answer["count"]
            seen += [row["external_id"] for row in answer["results"]]
            url = answer["next"]
        return count, seen, counts

    count, seen, counted = pages(f"/api/items/?project={project.pk}")
    assert count == 105 and len(seen) == len(set(seen)) == 105
    assert not any('"benchmark_item"' in sql for sql in counted), counted
    count, seen, counted = pages(f"/api/items/?project={project.pk}&status=verified")
    assert count == 45 and len(set(seen)) == 45
    assert not any('"benchmark_item"' in sql for sql in counted), counted
    count, seen, counted = pages(f"/api/items/?project={project.pk}&level=2")
    assert count == 45 and len(set(seen)) == 45
    assert any('"benchmark_item"' in sql for sql in counted)  # counted over the rows
    answer = client.get(f"/api/items/?project={other_project.pk}").json()
    assert (answer["count"], answer["results"]) == (0, [])
