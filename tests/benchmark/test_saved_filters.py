"""Saved filters of the item list: a member saves the list's current filters under a name,
the project's members see and apply them, only the creator or a project admin deletes one,
and the items a saved filter gives are the item list's for the same query."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.models import ItemStatus, Project, SavedFilter
from benchmark.saved_filters import selectors, services
from tests.factories import ItemFactory, SavedFilterFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def items(project: Project) -> dict[str, Any]:
    spec = [
        ("chart-1", ItemStatus.VERIFIED, "Chart", 1, "image", "Which bar is tallest?"),
        ("chart-2", ItemStatus.DRAFT, "Chart", 2, "text", "Which line grows fastest?"),
        ("map-1", ItemStatus.VERIFIED, "Map", 1, "image", "Which river is longest?"),
        ("map-2", ItemStatus.DISCARDED, "Map", 3, "text", "Which bar is on the map?"),
        ("doc-1", ItemStatus.VERIFIED, "Document", 2, "text", "Which bar association?"),
    ]
    return {
        ext: ItemFactory(
            project=project, external_id=ext, status=status, category=category, level=level,
            modality=modality, query=query,
            discard_reason="duplicate" if status == ItemStatus.DISCARDED else "",
        )
        for ext, status, category, level, modality, query in spec
    }  # fmt: skip


def _list_ids(client: Client, project: Project, query: str) -> set[int]:
    """What the project page's item list shows for ``query``."""
    response = client.get(reverse("benchmark:project_detail", args=[project.pk]) + "?" + query)
    assert response.status_code == 200
    return {row["pk"] for row in response.context["page"].object_list}


@pytest.mark.parametrize(
    "query",
    [
        "status=verified",
        "category=Chart",
        "category=Map&level=3",
        "modality=image&status=verified",
        "q=which+bar",
        "q=bar&status=verified",
    ],
)
def test_a_saved_filter_gives_what_the_item_list_shows_for_its_query(
    project: Project, users: dict[str, Any], clients: dict[str, Client], items: Any, query: str
) -> None:
    saved = services.saved_filter_create(
        project=project, user=users["annotator"], name="mine", query=query
    )
    shown = _list_ids(clients["annotator"], project, query)
    assert shown  # every query keeps some items, and not all of them
    assert shown != {item.pk for item in items.values()}
    given = selectors.saved_filter_item_ids(user=users["reviewer"], project=project, name="mine")
    assert set(given) == shown
    # The command line (no user) gets the same items.
    assert selectors.saved_filter_item_ids(user=None, project=project, name="mine") == given
    assert _list_ids(clients["annotator"], project, saved.query) == shown


def test_saving_from_the_item_list_keeps_only_its_filters_and_shows_them_applied(
    project: Project, users: dict[str, Any], clients: dict[str, Client], items: Any
) -> None:
    page = reverse("benchmark:project_detail", args=[project.pk])
    listed = clients["annotator"].get(page + "?status=verified&category=Chart")
    assert b"Save this filter" in listed.content
    assert b'name="query" value="status=verified&amp;category=Chart"' in listed.content
    assert b"Save this filter" not in clients["annotator"].get(page).content  # nothing to save
    response = clients["annotator"].post(
        reverse("benchmark:saved_filters", args=[project.pk]),
        {"name": "  Verified   charts ", "query": "page=3&category=Chart&status=verified&x=1"},
    )
    saved = SavedFilter.objects.get(project=project)
    assert (saved.name, saved.query, saved.created_by) == (
        "Verified charts",
        "status=verified&category=Chart",
        users["annotator"],
    )
    assert response.status_code == 302
    assert response["Location"] == page + "?status=verified&category=Chart"
    # Every member sees it on the item list, as a link that applies it.
    shown = clients["reviewer"].get(page).content.decode()
    assert "Verified charts</a>" in shown
    assert f'href="{page}?status=verified&amp;category=Chart"' in shown
    listing = clients["admin"].get(reverse("benchmark:saved_filters", args=[project.pk]))
    assert "Verified charts" in listing.content.decode()


def test_bad_names_and_queries_are_refused_with_a_message(
    project: Project, users: dict[str, Any], clients: dict[str, Client], items: Any
) -> None:
    annotator = users["annotator"]
    with pytest.raises(ValidationFailed, match="set at least one filter"):
        services.saved_filter_create(project=project, user=annotator, name="all", query="page=2")
    with pytest.raises(ValidationFailed, match="does not offer the filter category='Poetry'"):
        services.saved_filter_create(
            project=project, user=annotator, name="poems", query="category=Poetry"
        )
    with pytest.raises(ValidationFailed, match="give the saved filter a name"):
        services.saved_filter_create(project=project, user=annotator, name="  ", query="level=1")
    services.saved_filter_create(project=project, user=annotator, name="one", query="level=1")
    with pytest.raises(Conflict, match="already has a saved filter 'one'"):
        services.saved_filter_create(project=project, user=annotator, name="one", query="level=2")
    # On the page: the form again with the message, not an error page.
    response = clients["annotator"].post(
        reverse("benchmark:saved_filters", args=[project.pk]), {"name": "one", "query": "level=2"}
    )
    assert response.status_code == 409
    assert "already has a saved filter" in response.content.decode()
    response = clients["annotator"].post(
        reverse("benchmark:saved_filters", args=[project.pk]), {"name": "", "query": "level=2"}
    )
    assert response.status_code == 200 and "data-save-filter-errors" in response.content.decode()
    assert SavedFilter.objects.count() == 1


def test_only_members_see_them_and_only_the_creator_or_an_admin_deletes(
    project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    saved = SavedFilterFactory(project=project, name="theirs", created_by=users["annotator"])
    assert list(selectors.saved_filter_list(user=users["outsider"], project=project)) == []
    url = reverse("benchmark:saved_filters", args=[project.pk])
    assert clients["outsider"].get(url).status_code == 404
    with pytest.raises(ValidationFailed, match="has no saved filter 'theirs'"):
        selectors.saved_filter_item_ids(user=users["outsider"], project=project, name="theirs")
    delete = reverse("benchmark:saved_filter_delete", args=[project.pk, saved.pk])
    assert clients["reviewer"].post(delete).status_code == 403
    with pytest.raises(Forbidden, match="only the person who saved 'theirs' or a project admin"):
        services.saved_filter_delete(saved_filter=saved, user=users["reviewer"])
    # The list offers Delete only where it works.
    assert b"Delete theirs" not in clients["reviewer"].get(url).content
    assert b"Delete theirs" in clients["annotator"].get(url).content
    assert clients["annotator"].post(delete).status_code == 302
    assert not SavedFilter.objects.exists()
    other = SavedFilterFactory(project=project, name="by someone", created_by=users["reviewer"])
    response = clients["admin"].post(
        reverse("benchmark:saved_filter_delete", args=[project.pk, other.pk])
    )
    assert response.status_code == 302 and not SavedFilter.objects.exists()


def test_the_project_page_reads_them_in_one_query(
    project: Project, users: dict[str, Any], clients: dict[str, Client],
    django_assert_num_queries: Any,
) -> None:  # fmt: skip
    for n in range(5):
        SavedFilterFactory(project=project, name=f"f{n}", created_by=users["annotator"])
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    page = reverse("benchmark:project_detail", args=[project.pk])
    with CaptureQueriesContext(connection) as seen:
        response = clients["annotator"].get(page)
    assert response.content.decode().count("data-saved-filter>") == 5
    assert sum("benchmark_savedfilter" in q["sql"] for q in seen.captured_queries) == 1
