"""Issue 4's "done when": an annotator opens a flawed ground-truth answer of the ATP-Bench demo
(atp_demo_02), fixes its malformed tag, moves its mid-sentence tag to the paragraph boundary and
removes its redundant call with the keyboard, and saves; a reviewer then sees the version's diff
and per-tag decisions, and the project page counts them per tool."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from annotation.tag_review.models import ResponseVersion
from benchmark.models import Item, ItemStatus
from benchmark.tags import parse, validate
from review.demo import demo_load

pytestmark = pytest.mark.django_db(transaction=True)


def wait_for_htmx(page: Page) -> None:
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def card(page: Page, index: int):  # type: ignore[no-untyped-def]
    return page.locator(f"#tag-{index}")


def select(page: Page, index: int) -> None:
    """Walk the selection to call ``index`` with j/k, as the reviewer would."""
    for _ in range(10):
        selected = page.locator(".tag-card.selected").get_attribute("data-tag")
        if selected == str(index):
            return
        page.keyboard.press("j" if int(selected or 0) < index else "k")
    raise AssertionError(f"could not select call {index}")


def test_annotator_fixes_moves_removes_and_reviewer_sees_the_diff(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    demo_load()
    item = Item.objects.get(external_id="atp_demo_02")
    response = item.responses.get(key="gt")
    codes = {(f.code, f.tag) for f in validate(parse(response.text, "atp"), None, image_count=3)}
    assert codes == {("mid_sentence", 2), ("malformed_payload", 3)}
    users = get_user_model().objects
    review_url = (
        f"/projects/{item.project_id}/tag-review/items/{item.pk}/responses/{response.pk}/review/"
    )

    page = login_page(users.get(username="annotator1"))
    page.goto(f"/projects/{item.project_id}/items/{item.pk}/")
    page.get_by_role("link", name="Review tool calls").first.click()
    expect(page).to_have_url(re.compile(re.escape(review_url) + "$"))
    expect(page.locator(".review-bar")).to_contain_text("4 tool calls · 2 findings")
    expect(card(page, 3).locator('[data-code="malformed_payload"]')).to_be_visible()
    expect(card(page, 2).locator('[data-code="mid_sentence"]')).to_be_visible()
    expect(page.locator(".tag-card.selected")).to_have_attribute("data-tag", "0")
    ready(page)

    # 1. Fix the malformed Reference: e opens the form, prefilled from what can be read.
    select(page, 3)
    page.keyboard.press("e")
    form = card(page, 3).locator("details.tag-edit")
    expect(form.locator('input[name="p-3-img_index"]')).to_have_value("2")
    form.locator('select[name="fixreason-3"]').select_option("malformed_syntax")
    form.get_by_role("button", name="Apply fix").click()
    wait_for_htmx(page)
    expect(card(page, 3)).to_contain_text("fixed")
    expect(card(page, 3).locator('[data-code="malformed_payload"]')).to_have_count(0)
    expect(page.locator(".review-bar")).to_contain_text("4 tool calls · 1 finding")

    # 2. Move the mid-sentence Reference down to the paragraph boundary: m.
    select(page, 2)
    page.keyboard.press("m")
    wait_for_htmx(page)
    expect(card(page, 2)).to_contain_text("moved")
    expect(card(page, 2).locator('[data-code="mid_sentence"]')).to_have_count(0)
    expect(page.locator(".review-bar")).to_contain_text("4 tool calls · 0 findings")

    # 3. Remove the redundant Search: x opens the reason, "Redundant" is the first choice.
    select(page, 1)
    expect(card(page, 1)).to_contain_text("Search")
    page.keyboard.press("x")
    remove = card(page, 1).locator("details.tag-remove")
    expect(remove.locator('select[name="reason-1"]')).to_be_focused()
    expect(remove.locator('select[name="reason-1"]')).to_have_value("redundant")
    remove.locator('input[name="note-1"]').fill("the labelled panel above already shows it")
    remove.get_by_role("button", name="Remove this call").click()
    wait_for_htmx(page)
    expect(page.locator(".review-bar")).to_contain_text("3 tool calls · 0 findings")
    expect(page.locator(".answer-review")).not_to_contain_text(
        "Brio 2 espresso machine front panel"
    )

    # 4. Save: s.
    # keys act outside text fields
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("s")
    expect(page.locator(".alert-success")).to_have_text("Saved as version 2.")

    saved = ResponseVersion.objects.get(response=response, number=2)
    assert [(d.decision, d.tool, d.reason) for d in saved.decisions.all()] == [
        ("fixed", "Reference", "malformed_syntax"),
        ("moved", "Reference", "misplaced"),
        ("removed", "Search", "redundant"),
    ]
    text = saved.text
    assert "sits just below the surface" in text and '"img_index": 2}}' in text
    assert validate(parse(text, "atp"), None, image_count=3) == []

    # The reviewer reads the history: the diff and the decisions.
    reviewer = login_page(users.get(username="reviewer"))
    reviewer.goto(review_url.removesuffix("review/") + "versions/")
    row = reviewer.locator("table.versions tbody tr").first
    expect(row).to_contain_text("annotator1")
    expect(row).to_contain_text("#2 Search removed (redundant)")
    row.get_by_role("link", name="v2").click()
    expect(reviewer.locator("h1")).to_contain_text("atp_demo_02 · v2")
    decisions = reviewer.locator(".decision-list li")
    expect(decisions).to_have_count(3)
    expect(decisions.nth(0)).to_contain_text("Fixed call #4 (Reference) · malformed_syntax")
    expect(decisions.nth(1)).to_contain_text("Moved call #3 (Reference) · misplaced · after")
    expect(decisions.nth(2)).to_contain_text(
        "Removed call #2 (Search) · redundant · “the labelled panel above already shows it”"
    )
    diff = reviewer.locator("pre.diff")
    search = "Brio 2 espresso machine front panel"
    expect(diff.locator(".diff-del", has_text=search)).to_have_count(1)
    expect(diff.locator(".diff-del", has_text="the wand tip sits <tool>")).to_have_count(1)
    expect(diff.locator(".diff-add", has_text="the wand tip sits just below")).to_have_count(1)
    expect(diff.locator(".diff-del", has_text='"img_index": 2,}}')).to_have_count(1)
    expect(diff.locator(".diff-add", has_text='"img_index": 2}}')).to_have_count(1)

    # The project page counts the decisions per tool once the item is verified.
    Item.objects.filter(pk=item.pk).update(status=ItemStatus.VERIFIED)
    reviewer.goto(f"/projects/{item.project_id}/")
    stats = reviewer.locator("#tag-stats")
    reference = stats.locator("table.tag-stats tbody tr", has_text="reference")
    expect(reference.locator("td")).to_have_text(["reference", "0", "0", "1", "1", "0", "0", "2"])
    expect(stats.locator("#dataset-categories tbody tr")).to_have_count(1)
    expect(stats.locator("#dataset-categories tbody tr td")).to_have_text(
        ["Manual", "Function", "1", "3.00", "3.00", "3.00"]
    )
