"""Tag review statistics: decisions per tool and ATP-Bench's Tables 2 and 9 (#Query, #Doc per Q,
#Img per Q, #TC per GT) over the verified items, on the statistics page and the project page.

The expected figures are worked out by hand from the data built here (see ``atp_data``)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from annotation.tag_review import selectors as tag_selectors
from annotation.tag_review.services import response_save_version
from benchmark.builtin import taxonomies_ensure, toolsets_ensure
from benchmark.models import Item, ItemStatus, Origin, Project, ProjectKind
from tests.factories import ItemFactory, ProjectFactory, ResponseFactory

pytestmark = pytest.mark.django_db

VERIFIED = ItemStatus.VERIFIED


def call(n: int = 0) -> str:
    return f'<tool>{{"tool_name": "Reference", "description": "d{n}", "params": {{"img_index": {n}}}}}</tool>'


def answer(calls: int) -> str:
    return "\n\n".join(["Intro."] + [call(n) for n in range(calls)] + ["The end."])


def refs(documents: int, query: int = 0, role: str = "document") -> list[dict[str, Any]]:
    """Image references as an import writes them (the hashes need no stored image here)."""
    rows = [
        {"sha256": f"{n:064x}", "role": role, "path": f"d{n}.png", "position": n}
        for n in range(documents)
    ]
    rows += [
        {"sha256": f"{n + 100:064x}", "role": "query", "path": f"q{n}.png", "position": n}
        for n in range(query)
    ]
    return rows


def docs(n: int) -> list[dict[str, Any]]:
    return [{"text": f"Document {k}.", "images": []} for k in range(n)]


def make(project: Project, category: str, intent: str, status: str, n_docs: int, n_imgs: int,
         *answers: int, query_images: int = 0) -> Item:  # fmt: skip
    item = ItemFactory(
        project=project,
        category=category,
        intent=intent,
        status=status,
        documents=docs(n_docs),
        image_refs=refs(n_imgs, query_images),
        discard_reason="systemic_errors" if status == ItemStatus.DISCARDED else "",
    )
    for k, calls in enumerate(answers):
        ResponseFactory(item=item, key=f"gt{k}", text=answer(calls))
    return item


@pytest.fixture
def atp(project: Project) -> Project:
    project.toolset = toolsets_ensure()["atp"]
    project.taxonomy = taxonomies_ensure()["atp"]
    project.save(update_fields=["toolset", "taxonomy"])
    return project


@pytest.fixture
def atp_data(atp: Project, users: dict[str, Any]) -> Project:
    """Verified items and what is left out. By hand:

    ============  ==============  =====  ======  ======  ====================  =============
    category      intent          #Q     docs    images  GT answers (calls)    #TC per GT
    ============  ==============  =====  ======  ======  ====================  =============
    Fashion       Makeup          2      1+2     3+2     2 (2, saved 1 -> 3)   5/2 = 2.50
    Fashion       Outfit          1      0       0       2 (4, 0)              4/2 = 2.00
    Manual        Function        1      1       1       1 (1)                 1.00
    Manual        OperationGuide  1      3       0       none                  —
    ============  ==============  =====  ======  ======  ====================  =============

    Fashion: 3 queries, 3 docs (1.00), 5 images (1.67), 9 calls / 4 answers (2.25).
    Manual: 2 queries, 4 docs (2.00), 1 image (0.50), 1 call / 1 answer (1.00).
    Overall: 5 queries, 7 docs (1.40), 6 images (1.20), 10 calls / 5 answers (2.00).
    The ATP taxonomy puts Manual before Fashion (the alphabet would not).
    """
    first = make(atp, "Fashion", "Makeup", VERIFIED, 1, 3, 2, query_images=1)
    # A model answer with many calls and a VQA query image: neither counts.
    ResponseFactory(item=first, key="model", origin=Origin.MODEL, text=answer(7))
    second = make(atp, "Fashion", "Makeup", VERIFIED, 2, 2, 1)
    response_save_version(
        response=second.responses.get(),
        user=users["annotator"],
        text=answer(3),
        base_number=1,
        decisions=[],
    )
    make(atp, "Fashion", "Outfit", VERIFIED, 0, 0, 4, 0)
    make(atp, "Manual", "Function", VERIFIED, 1, 1, 1)
    make(atp, "Manual", "OperationGuide", VERIFIED, 3, 0)
    # Not verified: left out whatever they hold.
    make(atp, "Manual", "Function", ItemStatus.DRAFT, 5, 5, 9)
    make(atp, "Fashion", "Makeup", ItemStatus.IN_REVIEW, 5, 5, 9)
    make(atp, "Fashion", "Outfit", ItemStatus.DISCARDED, 5, 5, 9)
    return atp


def figures(row: dict[str, Any]) -> tuple[Any, ...]:
    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 2)

    return (row["queries"], r(row["docs_per_q"]), r(row["imgs_per_q"]), r(row["tc_per_gt"]))


def test_dataset_stats_per_category_intent_and_overall(atp_data: Project, users: dict[str, Any]):
    stats = tag_selectors.dataset_stats(user=users["reviewer"], project=atp_data)

    assert [(r["category"], r["intents"], *figures(r)) for r in stats["categories"]] == [
        ("Manual", ["Function", "OperationGuide"], 2, 2.0, 0.5, 1.0),
        ("Fashion", ["Makeup", "Outfit"], 3, 1.0, 1.67, 2.25),
    ]
    assert [(r["category"], r["intent"], *figures(r)) for r in stats["intents"]] == [
        ("Manual", "Function", 1, 1.0, 1.0, 1.0),
        ("Manual", "OperationGuide", 1, 3.0, 0.0, None),
        ("Fashion", "Makeup", 2, 1.5, 2.5, 2.5),
        ("Fashion", "Outfit", 1, 0.0, 0.0, 2.0),
    ]
    assert figures(stats["overall"]) == (5, 1.4, 1.2, 2.0)


def test_dataset_stats_follow_the_latest_saved_version(atp_data: Project, users: dict[str, Any]):
    """Removing calls in a review changes #TC per GT; reverting brings them back."""
    item = Item.objects.get(project=atp_data, category="Manual", intent="Function", status=VERIFIED)
    response = item.responses.get()
    response_save_version(
        response=response, user=users["annotator"], text=answer(5), base_number=1, decisions=[]
    )
    stats = tag_selectors.dataset_stats(user=users["reviewer"], project=atp_data)
    assert figures(stats["intents"][0]) == (1, 1.0, 1.0, 5.0)
    assert figures(stats["overall"]) == (5, 1.4, 1.2, 2.8)  # 14 calls / 5 answers


def test_dataset_stats_of_an_llmi_project_count_input_images_and_imgen_tags(users: dict[str, Any]):
    project = ProjectFactory(kind=ProjectKind.INTERLEAVED, data_format="llmi")
    from tests.factories import MembershipFactory

    MembershipFactory(project=project, user=users["reviewer"], role="reviewer")
    imgen = "<imgen>{'source': 'search', 'description': 'd', 'params': {'query': 'q'}}</imgen>"
    item = ItemFactory(
        project=project, category="", intent="", status=VERIFIED, documents=[],
        image_refs=refs(2, role="input"),
    )  # fmt: skip
    ResponseFactory(item=item, key="gt", text=f"A.\n\n{imgen}\n\nB.\n\n{imgen}\n\n{call()}")
    stats = tag_selectors.dataset_stats(user=users["reviewer"], project=project)
    assert [(r["category"], r["intent"], *figures(r)) for r in stats["intents"]] == [
        ("", "", 1, 0.0, 2.0, 2.0)  # the ATP tag in an LLM-I answer is text
    ]


def test_nothing_verified_and_outsiders_get_empty_tables(atp: Project, users: dict[str, Any]):
    make(atp, "Fashion", "Makeup", ItemStatus.DRAFT, 1, 1, 1)
    empty = tag_selectors.dataset_stats(user=users["reviewer"], project=atp)
    assert (empty["categories"], empty["intents"], figures(empty["overall"])) == (
        [], [], (0, None, None, None)
    )  # fmt: skip
    make(atp, "Fashion", "Makeup", VERIFIED, 1, 1, 1)
    # the selector scopes to the user's projects, whatever project object it is handed
    assert tag_selectors.dataset_stats(user=users["outsider"], project=atp)["intents"] == []


# --------------------------------------------------------------------------- pages


def cells(html: str, table_id: str) -> list[list[str]]:
    table = re.search(rf'<table[^>]*id="{table_id}".*?</table>', html, re.S)
    assert table is not None, table_id
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(0), re.S)
    return [
        [
            re.sub(r"<[^>]+>", "", c).strip()
            for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", r, re.S)
        ]
        for r in rows
    ]


def test_stats_page_shows_both_tables_with_a_total_row_and_the_definitions(
    atp_data: Project, clients: dict[str, Client]
):
    html = (
        clients["annotator"].get(f"/projects/{atp_data.pk}/tag-review/decisions/").content.decode()
    )
    assert cells(html, "dataset-categories") == [
        ["Category", "Intent", "#Query", "#Doc per Q", "#Img per Q", "#TC per GT"],
        ["Manual", "Function, OperationGuide", "2", "2.00", "0.50", "1.00"],
        ["Fashion", "Makeup, Outfit", "3", "1.00", "1.67", "2.25"],
        ["Overall", "–", "5", "1.40", "1.20", "2.00"],
    ]
    assert cells(html, "dataset-intents")[1:] == [
        ["Manual", "Function", "1", "1.00", "1.00", "1.00"],
        ["", "OperationGuide", "1", "3.00", "0.00", "—"],
        ["Fashion", "Makeup", "2", "1.50", "2.50", "2.50"],
        ["", "Outfit", "1", "0.00", "0.00", "2.00"],
        ["Overall", "–", "5", "1.40", "1.20", "2.00"],
    ]
    assert "whether a VQA query image counts; here it does not" in html
    assert "latest saved version" in html
    assert "a call kept in version 2 and fixed in version 3 counts once as kept" in html


def test_project_page_loads_the_tables_into_its_section(
    atp_data: Project, clients: dict[str, Client]
):
    client = clients["reviewer"]
    page = client.get(f"/projects/{atp_data.pk}/").content.decode()
    stats_url = f"/projects/{atp_data.pk}/tag-review/decisions/"
    section = re.search(r'<div id="tag-stats"[^>]*>', page)
    assert section is not None and f'hx-get="{stats_url}"' in section.group(0)
    assert f'href="{stats_url}"' in page  # works without JavaScript too

    fragment = client.get(stats_url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="tag-stats")
    html = fragment.content.decode()
    assert "<html" not in html and "<nav" not in html
    assert cells(html, "dataset-categories")[-1] == ["Overall", "–", "5", "1.40", "1.20", "2.00"]
    assert "Tag decisions per tool" in html


def test_project_page_of_other_kinds_has_no_tag_section(users: dict[str, Any], client_for: Any):
    plans = ProjectFactory(kind=ProjectKind.PLAN, data_format="mms")
    from tests.factories import MembershipFactory

    MembershipFactory(project=plans, user=users["reviewer"], role="reviewer")
    page = client_for(users["reviewer"]).get(f"/projects/{plans.pk}/").content.decode()
    assert 'id="tag-stats"' not in page


def test_another_projects_stats_answer_404(atp_data: Project, clients: dict[str, Client]):
    url = f"/projects/{atp_data.pk}/tag-review/decisions/"
    assert clients["outsider"].get(url).status_code == 404
    assert (
        clients["outsider"].get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="tag-stats").status_code
        == 404
    )


def _grow(project: Project, n: int) -> None:
    for k in range(n):
        item = make(
            project, ["Fashion", "Manual", "Travel"][k % 3], f"I{k % 4}", VERIFIED, k % 3, k % 5, 2
        )
        ResponseFactory(item=item, key="model", origin=Origin.MODEL, text=answer(1))


def test_stats_queries_do_not_grow_with_items(
    atp_data: Project, clients: dict[str, Client], django_assert_max_num_queries: Any
):
    client = clients["annotator"]
    url = f"/projects/{atp_data.pk}/tag-review/decisions/"
    # session, user, project, decisions, items, answers, taxonomy order
    with django_assert_max_num_queries(7):
        small = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="tag-stats")
    _grow(atp_data, 60)
    with django_assert_max_num_queries(7):
        large = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="tag-stats")
    assert cells(small.content.decode(), "dataset-categories")[-1][2] == "5"
    assert cells(large.content.decode(), "dataset-categories")[-1][2] == "65"
    # the project page itself does not compute them
    with django_assert_max_num_queries(9):
        client.get(f"/projects/{atp_data.pk}/")


def test_the_page_and_the_release_tables_follow_one_rule(atp_data: Project, users: dict[str, Any]):
    """The page's figures are those of the release statistics (benchmark.datastats) over the
    same verified items."""
    from benchmark.datastats import tables_for
    from review.releases.services import item_records

    verified = Item.objects.filter(project=atp_data, status=VERIFIED)
    _, table9 = tables_for("atp", [row for _, row in item_records(verified)])
    stats = tag_selectors.dataset_stats(user=users["reviewer"], project=atp_data)

    def r(x: Any) -> Any:
        return round(x, 2) if isinstance(x, float) else x

    page = [(row["category"], row["intent"], *figures(row)) for row in stats["intents"]]
    assert page == [tuple(r(v) for v in row) for row in table9.rows[:-1]]
    assert ("Overall", "–", *figures(stats["overall"])) == tuple(r(v) for v in table9.rows[-1])
