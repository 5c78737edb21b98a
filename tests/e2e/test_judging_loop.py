"""The judging loop of issue 25 on the judge page: ATP-Bench query verification (four choices,
relabel fields) completed from the keyboard alone, with the keys shown (finding 1); the
progress line and undoing the last judgment, kept as a version (finding 2); a submit answered
with the next item in place, one request, its URL pushed (finding 3)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import Page, expect

from annotation.judgment_tasks.models import Judgment, JudgmentTask, JudgmentVersion
from benchmark.models import Project
from review.demo import demo_load

pytestmark = pytest.mark.django_db(transaction=True)


def start(login_page, ready, name: str = "annotator1") -> tuple[Page, JudgmentTask]:  # type: ignore[no-untyped-def]
    demo_load()
    project = Project.objects.get(data_format="atp")
    task = JudgmentTask.objects.get(project=project, name="Query verification")
    page = login_page(get_user_model().objects.get(username=name))
    page.goto(f"/judgment-tasks/{task.pk}/next/")
    expect(page.locator("form#judgment")).to_be_visible()
    ready(page)
    return page, task


# A GET of a judging page (not the read-only ``next/images/`` the page asks to prefetch).
PAGE_GET = re.compile(r"/judgment-tasks/(?!\d+/next/images/)")


def requests_of(page: Page) -> list[str]:
    seen: list[str] = []
    page.on(
        "request",
        lambda r: (
            seen.append(f"{r.method} {r.url}")
            if r.resource_type in ("document", "xhr", "fetch")
            else None
        ),
    )
    return seen


def test_query_verification_is_completed_from_the_keyboard(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    page, task = start(login_page, ready)
    first = page.locator("h1").inner_text()

    # The keys line shows the real range and every choice shows its key.
    keys = page.locator("[data-keys-help]")
    expect(keys).to_contain_text("1–4 choose")
    expect(keys).to_contain_text("Enter submit")
    expect(keys).not_to_contain_text("…")
    choices = page.locator("label.choice kbd")
    expect(choices).to_have_text(["1", "2", "3", "4"])
    expect(page.get_by_text("Relabel category e")).to_be_visible()
    expect(page.get_by_text("Relabel intent i")).to_be_visible()

    # Enter before a choice is picked submits nothing.
    page.keyboard.press("Enter")
    expect(page.locator("h1")).to_have_text(first)

    # 3 picks the third choice; e moves to the category, arrows change it, Esc leaves it;
    # c and text into the comment, where Enter is a new line and Ctrl+Enter submits.
    page.keyboard.press("3")
    expect(page.get_by_label("Remove: not grounded in the image")).to_be_checked()
    page.keyboard.press("e")
    category = page.locator("select[name=relabel_category]")
    expect(category).to_be_focused()
    before = category.input_value()
    page.keyboard.press("ArrowDown")
    changed = category.input_value()
    assert changed != before
    page.keyboard.press("Escape")
    page.keyboard.press("c")
    comment = page.locator("textarea[name=comment]")
    expect(comment).to_be_focused()
    page.keyboard.type("The photo shows another shop.")
    page.keyboard.press("Enter")  # a new line in the comment, not a submit
    expect(comment).to_have_value("The photo shows another shop.\n")
    expect(page.locator("h1")).to_have_text(first)
    page.keyboard.press("Control+Enter")
    expect(page.locator("h1")).not_to_have_text(first)
    # The next item was held ahead: it is shown at once, and the judgment is saved behind it
    # (its answer fills in the undo paragraph).
    expect(page.locator("#undo")).to_contain_text(first)
    judgment = Judgment.objects.get(task=task, user__username="annotator1")
    assert judgment.value == "remove_not_grounded"
    assert judgment.comment == "The photo shows another shop."
    assert judgment.relabel["category"] == changed

    # The next item: 1 and Enter (outside any field) submit it.
    second = page.locator("h1").inner_text()
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    expect(page.locator("h1")).not_to_have_text(second)
    expect(page.locator("#undo")).to_contain_text(second)
    assert Judgment.objects.filter(task=task, user__username="annotator1").count() == 2


def test_submit_swaps_the_next_item_in_with_one_request(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    page, task = start(login_page, ready)
    first = page.locator("h1").inner_text()
    seen = requests_of(page)
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    expect(page.locator("h1")).not_to_have_text(first)
    expect(page).to_have_url(re.compile(rf"/judgment-tasks/{task.pk}/items/\d+/$"))
    expect(page.locator("#undo")).to_contain_text(first)  # saved in the background
    assert page.url.rstrip("/").split("/")[-1] != str(Judgment.objects.get().item_id)
    # One POST of the judgment; the others lease the item after the one shown, ahead
    # (tests/e2e/test_next_ahead_browser.py).
    posts = [r for r in seen if r.startswith("POST") and "/next/ahead/" not in r]
    assert len(posts) == 1, seen
    # No page of the next item is asked for (the likely next one's thumbnails are, to prefetch).
    assert not [r for r in seen if r.startswith("GET") and PAGE_GET.search(r)], seen
    expect(page).to_have_title(re.compile(r"^" + re.escape(page.locator("h1").inner_text())))
    # The keys keep working on the item swapped in, and its time is its own.
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    expect(page.locator("#judge-progress [data-progress=today]")).to_have_text("2 judged today")
    expect(page.locator("#undo")).not_to_contain_text(first)
    assert Judgment.objects.count() == 2
    assert all(j.seconds < 60 for j in Judgment.objects.all())


def test_progress_and_undo_the_last_judgment(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    page, task = start(login_page, ready)
    progress = page.locator("#judge-progress")
    total = task.project.items.count()
    expect(progress.locator("[data-progress=today]")).to_have_text("0 judged today")
    expect(progress.locator("[data-progress=left]")).to_have_text(f"{total} left for you")
    expect(progress.locator("[data-progress=position]")).to_have_text(f"Item 1 of {total}")
    expect(page.locator("#undo")).to_have_count(0)
    first = page.locator("h1").inner_text()

    page.keyboard.press("2")  # remove: ambiguous
    page.keyboard.press("Enter")
    expect(page.locator("h1")).not_to_have_text(first)
    expect(progress.locator("[data-progress=today]")).to_have_text("1 judged today")
    expect(progress.locator("[data-progress=left]")).to_have_text(f"{total - 1} left for you")
    expect(progress.locator("[data-progress=position]")).to_have_text(f"Item 2 of {total}")
    expect(page.locator("#undo")).to_contain_text(first)
    expect(page.locator("[data-keys-help]")).to_contain_text("u undo")

    # u reopens the first item with the judgment editable; 1 and Enter change it.
    page.keyboard.press("u")
    expect(page.locator("h1")).to_have_text(first)
    expect(page.locator("#changing")).to_contain_text("remove_ambiguous")
    expect(page.get_by_label("Remove: ambiguous or unnatural")).to_be_checked()
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    expect(page.locator("h1")).not_to_have_text(first)  # back to the item leased before
    judgment = Judgment.objects.get(task=task, item__external_id=first)
    assert (judgment.value, judgment.version) == ("keep", 2)
    old = JudgmentVersion.objects.get(judgment=judgment)
    assert (old.number, old.value) == (1, "remove_ambiguous")
    expect(progress.locator("[data-progress=today]")).to_have_text("1 judged today")

    # After the window, the undo is refused with a clear message (and no form).
    Judgment.objects.filter(pk=judgment.pk).update(created_at=timezone.now() - timedelta(hours=1))
    page.goto(f"/judgment-tasks/{task.pk}/items/{judgment.item_id}/")
    expect(page.locator("#change-refused")).to_contain_text("can be undone for 10 minutes")
    expect(page.locator("form#judgment")).to_have_count(0)


def test_plan_votes_show_their_keys_and_a_key_votes_in_place(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    demo_load()
    project = Project.objects.get(data_format="mms")
    task = JudgmentTask.objects.get(project=project)
    page = login_page(get_user_model().objects.get(username="annotator2"))
    page.goto(f"/judgment-tasks/{task.pk}/next/")
    ready(page)
    keys = page.locator("[data-keys-help]")
    expect(keys).to_contain_text("1 yes, 0 no (picks and submits)")
    expect(keys).to_contain_text("Ctrl+Enter submit from a field")
    expect(page.locator("label.choice kbd")).to_have_text(["1", "0"])
    first = page.locator("h1").inner_text()
    seen = requests_of(page)
    page.keyboard.press("0")
    expect(page.locator("h1")).not_to_have_text(first)
    expect(page.locator("#undo")).to_contain_text(first)  # saved (in the background)
    assert [r for r in seen if r.startswith("POST")] and not [
        r for r in seen if r.startswith("GET") and PAGE_GET.search(r)
    ], seen
    assert task.judgments.get().value == 0
