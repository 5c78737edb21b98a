"""Model drafting in the browser, against the local server that speaks the OpenAI protocol: an
annotator drafts three ATP-Bench queries for a category and intent from the project page,
keeps one with the keyboard, edits one inline, rejects one, and sees the new draft items in
the project, with their provenance.

Celery runs eagerly, inside the live server's request thread: the POST that starts the draft
returns once the model has answered, and the draft page shows the candidates."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from benchmark.builtin import taxonomies_ensure
from benchmark.models import Item, ModelCall, Role
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.llm_server import MODEL, FakeModelServer, point_at

pytestmark = pytest.mark.django_db(transaction=True)

QUERIES = [
    "My grandmother's cast-iron pan has rust spots; what does a well-seasoned pan look like?",
    "Which fresh herbs go into a proper pesto, and how do I tell them apart at the market?",
    "What is the difference between baking soda and baking powder?",
]
EDITED = "Which herbs go into pesto, and how do I recognise each one at the market?"


def settle(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def test_draft_three_queries_keep_edit_reject(  # type: ignore[no-untyped-def]
    login_page, ready, model_server: FakeModelServer
) -> None:
    project = ProjectFactory(name="ATP drafting", taxonomy=taxonomies_ensure()["atp"])
    point_at(project, model_server)
    user = UserFactory(username="annotator1")
    MembershipFactory(project=project, user=user, role=Role.ANNOTATOR)
    model_server.answer = "```json\n" + json.dumps(QUERIES) + "\n```"
    page = login_page(user)

    page.goto(f"/projects/{project.pk}/")
    page.get_by_role("link", name="Draft queries").click()
    expect(page.locator("h1")).to_have_text("Draft queries")
    page.get_by_label("Category").select_option("Recipe")
    page.get_by_label("Intent").select_option("Ingredient")
    page.get_by_label("How many candidates").fill("3")
    page.get_by_role("button", name="Draft queries").click()

    # The job card says it is done; the three candidates wait for a decision.
    expect(page.locator("h1")).to_contain_text("Queries draft")
    expect(page.locator(".job[data-status=succeeded]")).to_be_visible()
    cards = page.locator("[data-candidate]")
    expect(cards).to_have_count(3)
    for n, query in enumerate(QUERIES):
        expect(cards.nth(n).locator(".draft-query")).to_have_text(query)
    ready(page)

    # Keep the first with the keyboard (the first pending candidate is the active one).
    cards.nth(0).focus()
    page.keyboard.press("k")
    expect(cards.nth(0)).to_have_attribute("data-status", "kept")
    settle(page)

    # Edit the second inline: e opens the editor, Ctrl+Enter saves.
    cards.nth(1).focus()
    page.keyboard.press("e")
    field = cards.nth(1).locator("textarea")
    expect(field).to_be_focused()
    field.fill(EDITED)
    page.keyboard.press("Control+Enter")
    expect(cards.nth(1)).to_have_attribute("data-status", "edited")
    expect(cards.nth(1).locator(".draft-query")).to_have_text(EDITED)
    settle(page)

    # Reject the third with its button.
    cards.nth(2).get_by_role("button", name="Reject").click()
    expect(cards.nth(2)).to_have_attribute("data-status", "rejected")
    settle(page)

    # Two new draft items, drafted by the model, in the project.
    items = list(Item.objects.filter(project=project).order_by("id"))
    assert [i.query for i in items] == [QUERIES[0], EDITED]
    assert {i.provenance for i in items} == {f"drafted by {MODEL}"}
    assert {(i.category, i.intent, i.status) for i in items} == {("Recipe", "Ingredient", "draft")}
    assert ModelCall.objects.get().purpose.startswith("model-draft:queries:")

    cards.nth(1).locator("[data-new-item]").click()
    expect(page.get_by_text(EDITED).first).to_be_visible()
    page.goto(f"/projects/{project.pk}/")
    expect(page.get_by_text(items[0].external_id)).to_be_visible()
    expect(page.get_by_text(items[1].external_id)).to_be_visible()

    # The overview counts the decisions.
    page.goto(f"/projects/{project.pk}/model-drafts/")
    row = page.locator("#model-draft-figures tr[data-kind=queries]")
    expect(row.locator("[data-kept]")).to_contain_text("1")
    expect(row.locator("[data-edited]")).to_contain_text("1")
    expect(row.locator("[data-rejected]")).to_contain_text("1")
    expect(row.locator("[data-tokens]")).to_have_text("24")
