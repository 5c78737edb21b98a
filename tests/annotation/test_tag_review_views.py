"""The tag review screen as a reviewer uses it: cards with findings, one edit per POST on the
working text, saving versions, the two-session conflict, permissions and query counts."""

from __future__ import annotations

import re
from html import escape as html_escape
from typing import Any

import pytest
from django.test import Client

from annotation.tag_review.models import ResponseVersion, TagDecision
from benchmark.builtin import toolsets_ensure
from benchmark.models import Item, ItemStatus, Project, Response
from tests.factories import ImageFactory, ItemFactory, ResponseFactory, image_ref

pytestmark = pytest.mark.django_db


def tool(name: str, description: str, params: str) -> str:
    return f'<tool>{{"tool_name": "{name}", "description": "{description}", "params": {params}}}</tool>'


CLEAN = tool("Reference", "The front panel", '{"img_index": 0}')
MID = tool("Reference", "The steam button", '{"img_index": 1}')
# Like atp_demo_04: the payload's closing brace is missing.
MALFORMED = '<tool>{"tool_name": "Diffusion", "description": "A latte", "params": {"prompt": "a latte with foam art"}</tool>'

FLAWED = (
    "The Brio 2 has three buttons on its front panel.\n\n"
    f"{CLEAN}\n\n"
    f"Press the steam button {MID} to froth milk for a latte.\n\n"
    f"{MALFORMED}\n\n"
    "Descale it every two months."
)


@pytest.fixture
def atp(project: Project) -> Project:
    project.toolset = toolsets_ensure()["atp"]
    project.save(update_fields=["toolset"])
    return project


def make_item(project: Project, text: str, n_images: int = 2) -> tuple[Item, Response]:
    images = [ImageFactory(projects=[project]) for _ in range(n_images)]
    item = ItemFactory(
        project=project, image_refs=[image_ref(im, position=i) for i, im in enumerate(images)]
    )
    return item, ResponseFactory(item=item, key="gt", text=text)


@pytest.fixture
def flawed(atp: Project) -> Response:
    return make_item(atp, FLAWED)[1]


def url(response: Response, page: str = "review/") -> str:
    item = response.item
    return f"/projects/{item.project_id}/tag-review/items/{item.pk}/responses/{response.pk}/{page}"


def state(page: bytes) -> dict[str, str]:
    """The hidden working state of a rendered review form."""
    html = page.decode()
    out = {}
    for name in ("text", "base", "decisions", "marks", "preview"):
        m = re.search(rf'<input type="hidden" name="{name}" value="([^"]*)"', html)
        assert m is not None, name
        out[name] = (
            m.group(1)
            .replace("&quot;", '"')
            .replace("&#x27;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
        )
    return out


def post(client: Client, response: Response, current: dict[str, str], op: str, **fields: Any):
    return client.post(url(response), {**current, "op": op, **fields}, HTTP_HX_REQUEST="true")


def card(page: bytes, index: int) -> str:
    html = page.decode()
    start = html.index(f'id="tag-{index}"')
    end = html.find('id="tag-', start + 10)
    return html[start : end if end > 0 else len(html)]


# --------------------------------------------------------------------------- the screen


def test_page_shows_cards_findings_and_the_query(flawed: Response, clients: dict[str, Client]):
    page = clients["annotator"].get(url(flawed))
    assert page.status_code == 200
    html = page.content.decode()
    assert html.count('data-tag="') == 3
    assert flawed.item.query in html
    assert "img_index 0" in html and "img_index 1" in html  # the query panel's image indexes
    assert 'data-code="mid_sentence"' in card(page.content, 1)
    assert 'data-code="malformed_payload"' in card(page.content, 2)
    assert "data-code" not in card(page.content, 0)
    assert ">Image in mid-sentence</strong>" in card(page.content, 1)  # words, not mid_sentence
    assert "<code>mid_sentence</code>" not in html
    assert state(page.content)["base"] == "1"
    # the malformed call's fix form is prefilled from what can be read of it
    assert 'name="p-2-prompt" rows="3">a latte with foam art</textarea>' in html


def test_fixing_the_malformed_payload_removes_its_finding(
    flawed: Response, clients: dict[str, Client]
):
    client = clients["annotator"]
    page = client.get(url(flawed))
    fixed = post(
        client,
        flawed,
        state(page.content),
        "fix:2",
        **{"desc-2": "A latte", "p-2-prompt": "a latte with foam art"},
    )
    assert fixed.status_code == 200
    assert 'data-code="malformed_payload"' not in fixed.content.decode()
    assert "fixed" in card(fixed.content, 2)
    new = state(fixed.content)
    assert (
        '{"tool_name": "Diffusion", "description": "A latte", "params": {"prompt": "a latte with foam art"}}'
        in new["text"]
    )
    # Nothing is saved until Save.
    flawed.refresh_from_db()
    assert flawed.text == FLAWED
    saved = post(client, flawed, new, "save", note="fixed the payload")
    assert saved.status_code == 200 and saved["HX-Redirect"].endswith("?saved=2")
    decision = TagDecision.objects.get()
    assert (decision.decision, decision.tool, decision.reason) == (
        "fixed",
        "Diffusion",
        "malformed_syntax",
    )
    flawed.refresh_from_db()
    assert flawed.text == new["text"]


def test_raw_payload_fix(flawed: Response, clients: dict[str, Client]):
    client = clients["annotator"]
    current = state(client.get(url(flawed)).content)
    raw = '{"tool_name": "Diffusion", "description": "A latte", "params": {"prompt": "foam"}}'
    fixed = post(client, flawed, current, "raw:2", **{"payload-2": raw})
    assert 'data-code="malformed_payload"' not in fixed.content.decode()
    assert raw in state(fixed.content)["text"]


def test_moving_a_mid_sentence_tag_to_the_boundary(flawed: Response, clients: dict[str, Client]):
    client = clients["annotator"]
    current = state(client.get(url(flawed)).content)
    moved = post(client, flawed, current, "after:1")
    assert moved.status_code == 200
    assert 'data-code="mid_sentence"' not in moved.content.decode()
    text = state(moved.content)["text"]
    assert f"Press the steam button to froth milk for a latte.\n\n{MID}\n\n" in text
    assert "moved" in card(moved.content, 1)


def test_removing_a_tag_records_a_removed_decision(flawed: Response, clients: dict[str, Client]):
    client = clients["reviewer"]
    current = state(client.get(url(flawed)).content)
    removed = post(client, flawed, current, "remove:0", **{"reason-0": "redundant"})
    assert removed.content.decode().count('data-tag="') == 2
    after = state(removed.content)
    assert CLEAN not in after["text"]
    assert post(client, flawed, after, "save").status_code == 200
    decision = TagDecision.objects.get()
    assert (decision.decision, decision.reason, decision.tag, decision.tool) == (
        "removed",
        "redundant",
        0,
        "Reference",
    )
    assert decision.version.number == 2 and decision.version.author.username == "reviewer-user"


def test_remove_without_reason_is_refused_with_a_message(
    flawed: Response, clients: dict[str, Client]
):
    client = clients["annotator"]
    current = state(client.get(url(flawed)).content)
    answer = post(client, flawed, current, "remove:0", **{"reason-0": "other"})
    assert answer.status_code == 200
    assert "say why in the note" in answer.content.decode()
    assert state(answer.content)["text"] == FLAWED


def test_keep_change_tool_and_insert(flawed: Response, clients: dict[str, Client]):
    client = clients["annotator"]
    current = state(client.get(url(flawed)).content)
    kept = post(client, flawed, current, "keep:0")
    assert "kept" in card(kept.content, 0)
    retooled = post(client, flawed, state(kept.content), "retool:1", **{"tool-1": "Edit"})
    assert '"tool_name": "Edit"' in state(retooled.content)["text"]
    assert 'data-code="missing_param"' in card(retooled.content, 1)  # Edit also needs a prompt
    assert "kept" in card(retooled.content, 0)
    inserted = post(
        client,
        flawed,
        state(retooled.content),
        "insert",
        **{
            "insert-at": str(len(state(retooled.content)["text"])),
            "insert-tool": "Search",
            "insert-desc": "A descaling kit",
            "insert-params": '{"query": "Brio 2 descaling kit"}',
        },
    )
    text = state(inserted.content)["text"]
    assert text.endswith(tool("Search", "A descaling kit", '{"query": "Brio 2 descaling kit"}'))
    assert inserted.content.decode().count('data-tag="') == 4
    post(client, flawed, state(inserted.content), "save")
    kinds = list(TagDecision.objects.order_by("position").values_list("decision", flat=True))
    assert kinds == ["kept", "retooled", "inserted"]


def test_preview_shows_referenced_image_and_escapes_html(atp: Project, clients: dict[str, Client]):
    _, response = make_item(atp, f"<script>alert(1)</script> Hello.\n\n{CLEAN}")
    html = clients["annotator"].get(url(response)).content.decode()
    image = response.item.image_refs[0]["sha256"]
    assert f'<img src="/images/{image}/thumb/"' in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert" not in html


def test_each_card_offers_its_menus_and_the_thumb_of_its_image(
    flawed: Response, clients: dict[str, Client]
):
    page = clients["annotator"].get(url(flawed))
    first = card(page.content, 0)
    # the "change tool" menu selects the tool as written; the reasons come from edits.py
    tools = re.search(r'<select name="tool-0">(.*?)</select>', first, re.S).group(1)  # type: ignore[union-attr]
    assert '<option value="Reference" selected>Reference</option>' in tools
    assert tools.count("<option") > 1 and tools.count(" selected") == 1
    diffusion = re.search(r'<select name="tool-2">(.*?)</select>', card(page.content, 2), re.S)
    assert '<option value="Diffusion" selected>Diffusion</option>' in diffusion.group(1)  # type: ignore[union-attr]
    assert (
        '<select name="reason-0"><option value="redundant">Redundant</option>'
        '<option value="mismatched">Semantically mismatched</option>'
    ) in first
    assert '<option value="">(guess)</option><option value="malformed_syntax">' in first
    # the referenced image as a thumb linking to the full image
    sha = flawed.item.image_refs[0]["sha256"]
    assert f'<a href="/images/{sha}/" data-lightbox' in first
    assert f'<img src="/images/{sha}/thumb/"' in first
    html = page.content.decode()
    where = re.search(r'<select name="insert-at">(.*?)</select>', html, re.S).group(1)  # type: ignore[union-attr]
    assert where.startswith('<option value="0">At the start</option>')
    assert where.endswith(f'<option value="{len(FLAWED)}">At the end</option>')
    assert "After “…The Brio 2 has three buttons on its front panel.”" in where


# --------------------------------------------------------------------------- versions


def test_two_sessions_second_save_gets_the_conflict(flawed: Response, client_for: Any, users: dict):
    first, second = client_for(users["annotator"]), client_for(users["reviewer"])
    mine = state(first.get(url(flawed)).content)
    theirs = state(second.get(url(flawed)).content)
    assert mine["base"] == theirs["base"] == "1"

    moved = post(first, flawed, mine, "after:1")
    assert post(first, flawed, state(moved.content), "save", note="moved").status_code == 200

    removed = post(second, flawed, theirs, "remove:2", **{"reason-2": "mismatched"})
    conflict = post(second, flawed, state(removed.content), "save")
    assert conflict.status_code == 409
    html = conflict.content.decode()
    assert "Someone else saved first" in html and "annotator-user" in html
    assert "Press the steam button to froth milk for a latte." in html  # the first one's change
    assert ResponseVersion.objects.filter(response=flawed).count() == 2
    flawed.refresh_from_db()
    assert MALFORMED in flawed.text  # the second one's removal was not written
    # Their working state survives the conflict; saving on top of v2 is an explicit choice.
    again = post(second, flawed, state(conflict.content), "save_over:2")
    assert again.status_code == 200
    assert list(flawed.versions.values_list("number", flat=True)) == [1, 2, 3]


def test_full_page_post_without_htmx(flawed: Response, clients: dict[str, Client]):
    client = clients["annotator"]
    current = state(client.get(url(flawed)).content)
    page = client.post(url(flawed), {**current, "op": "keep:0"})
    assert page.status_code == 200 and "<!doctype html>" in page.content.decode()
    saved = client.post(url(flawed), {**state(page.content), "op": "save"})
    assert saved.status_code == 302 and saved["Location"].endswith("?saved=2")


def test_history_diff_and_revert(flawed: Response, clients: dict[str, Client]):
    client = clients["annotator"]
    current = state(client.get(url(flawed)).content)
    removed = post(client, flawed, current, "remove:0", **{"reason-0": "redundant"})
    post(client, flawed, state(removed.content), "save", note="drop the panel")

    history = client.get(url(flawed, "versions/"))
    assert history.status_code == 200
    html = history.content.decode()
    assert "drop the panel" in html and "annotator-user" in html and "imported" in html
    assert "removed" in html

    v2 = client.get(url(flawed, "versions/2/")).content.decode()
    assert '<span class="diff-del">-' + html_escape(CLEAN) + "</span>" in v2
    assert "Removed</strong> call #1 (Reference)" in v2

    reverted = client.post(url(flawed, "versions/1/revert/"), {"base": "2"})
    assert reverted.status_code == 302 and reverted["Location"].endswith("/versions/3/")
    flawed.refresh_from_db()
    assert flawed.text == FLAWED
    assert list(flawed.versions.values_list("number", flat=True)) == [1, 2, 3]


def test_discard_the_sample(flawed: Response, clients: dict[str, Client]):
    client = clients["reviewer"]  # annotators propose it (tests/annotation/test_discarding.py)
    refused = client.post(url(flawed, "discard/"), {"reason": "other", "detail": ""})
    assert refused.status_code == 200 and "Say why" in refused.content.decode()
    done = client.post(url(flawed, "discard/"), {"reason": "broken_markdown"})
    assert done.status_code == 302
    flawed.item.refresh_from_db()
    assert (flawed.item.status, flawed.item.discard_reason) == (
        ItemStatus.DISCARDED,
        "broken_markdown",
    )
    assert "This sample is discarded" in client.get(url(flawed)).content.decode()


def test_stats_counts_decisions_per_tool(flawed: Response, clients: dict[str, Client]):
    client = clients["annotator"]
    current = state(client.get(url(flawed)).content)
    kept = post(client, flawed, current, "keep:0")
    removed = post(client, flawed, state(kept.content), "remove:1", **{"reason-1": "redundant"})
    post(client, flawed, state(removed.content), "save")
    page = client.get(f"/projects/{flawed.item.project_id}/tag-review/decisions/").content.decode()
    row = re.search(r"<td class=\"strong\">reference</td>(.*?)</tr>", page).group(1)
    assert re.findall(r">(\d+)<", row) == ["1", "1", "0", "0", "0", "0", "2"]


# --------------------------------------------------------------------------- permissions


def test_permissions(flawed: Response, clients: dict[str, Client]):
    assert clients["outsider"].get(url(flawed)).status_code == 404
    anonymous = clients["anonymous"].get(url(flawed))
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    current = state(clients["annotator"].get(url(flawed)).content)
    # A non-member cannot save (404: the answer does not exist for them); nothing is written.
    assert clients["outsider"].post(url(flawed), {**current, "op": "save"}).status_code == 404
    assert clients["anonymous"].post(url(flawed), {**current, "op": "save"}).status_code == 302
    assert not ResponseVersion.objects.exists()
    kept = post(clients["annotator"], flawed, current, "keep:0")
    assert post(clients["annotator"], flawed, state(kept.content), "save").status_code == 200
    assert ResponseVersion.objects.filter(response=flawed).count() == 2


def test_another_projects_response_is_not_found(
    flawed: Response, other_project: Project, clients: dict[str, Client]
):
    _, foreign = make_item(other_project, FLAWED, n_images=0)
    wrong = f"/projects/{flawed.item.project_id}/tag-review/items/{foreign.item_id}/responses/{foreign.pk}/review/"
    assert clients["admin"].get(wrong).status_code == 404


@pytest.mark.parametrize("n_tags", [5, 50])
def test_review_page_queries_do_not_grow_with_tags(
    atp: Project, clients: dict[str, Client], django_assert_max_num_queries: Any, n_tags: int
):
    index = '{"img_index": 0}'
    text = "\n\n".join(
        f"Paragraph {i}.\n\n" + tool("Reference", f"d{i}", index) for i in range(n_tags)
    )
    _, response = make_item(atp, text)
    client = clients["annotator"]
    # 9: the models'-names hiding rule first asks, in one small query, whether it can hide
    # anything from the user
    with django_assert_max_num_queries(9):
        page = client.get(url(response))
    assert page.content.decode().count('data-tag="') == n_tags
    current = state(page.content)
    with django_assert_max_num_queries(8):
        post(client, response, current, "keep:3")
