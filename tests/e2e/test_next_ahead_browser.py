"""Issue 25, finding 3: the next item is on screen at the key press. While an item is judged
the judge page leases the next one and holds its judging area; Enter shows it at once and
sends the judgment in the background. A refusal or a network failure puts the judged item
back with what was typed and says it was not saved. The server side is
tests/annotation/test_next_ahead.py."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, Route, expect

from annotation.judgment_tasks.models import Assignment, Judgment, JudgmentTask
from benchmark.models import Project
from review.demo import demo_load

pytestmark = pytest.mark.django_db(transaction=True)

JUDGE_POST = re.compile(r"/judgment-tasks/\d+/items/\d+/$")


def start(login_page, ready) -> tuple[Page, JudgmentTask]:  # type: ignore[no-untyped-def]
    demo_load()
    project = Project.objects.get(data_format="atp")
    task = JudgmentTask.objects.get(project=project, name="Query verification")
    page = login_page(get_user_model().objects.get(username="annotator1"))
    page.goto(f"/judgment-tasks/{task.pk}/next/")
    expect(page.locator("form#judgment")).to_be_visible()
    ready(page)
    return page, task


def held(page: Page) -> str:
    """The key of the item the page holds ahead, once it holds one."""
    area = page.locator("#judging[data-ahead-held]")
    expect(area).to_have_count(1)
    return str(area.get_attribute("data-ahead-held"))


def test_five_items_judged_by_keyboard_each_shown_from_memory(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    page, task = start(login_page, ready)
    held_posts: list[Route] = []
    page.route(JUDGE_POST, lambda route: held_posts.append(route))
    shown_from: list[str] = []
    page.expose_function("shownFrom", lambda source: shown_from.append(source))
    page.evaluate(
        "document.addEventListener('benchwright:judging-shown', e => shownFrom(e.detail.from))"
    )
    judged: list[str] = []
    for n in range(5):
        ahead = held(page)
        current = page.locator("#judging").get_attribute("data-item-key")
        judged.append(str(current))
        page.keyboard.press("1")
        page.keyboard.press("Enter")
        # The held item is on screen while the judgment's POST is still held back by the
        # test: no answer of the server drew it.
        expect(page.locator("#judging")).to_have_attribute("data-item-key", ahead)
        expect(page).to_have_url(re.compile(rf"/items/{ahead}/$"))
        assert len(held_posts) == 1, n
        route = held_posts.pop()
        assert route.request.method == "POST" and route.request.url.endswith(f"/items/{current}/")
        assert route.request.headers.get("x-benchwright-ahead") == ahead
        route.continue_()
        # The answer updates the progress line and the undo paragraph of the item shown.
        expect(page.locator("#undo")).to_be_visible()
        expect(page.locator("#judge-progress")).to_contain_text(f"{n + 1} judged today")
    assert shown_from == ["prefetch"] * 5
    user = get_user_model().objects.get(username="annotator1")
    saved = Judgment.with_gold.filter(task=task, user=user)
    assert sorted(str(pk) for pk in saved.values_list("item_id", flat=True)) == sorted(judged)
    # One item on screen, one held ahead: never more.
    expect(page.locator("#judging[data-ahead-held]")).to_have_count(1)
    assert Assignment.objects.filter(task=task, user=user, status="active").count() == 2


def test_a_refusal_puts_the_item_back_with_its_input(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    page, task = start(login_page, ready)
    ahead = held(page)
    first = page.locator("#judging h1").inner_text()
    # A relabel the taxonomy does not know: the server refuses it (400, with its reason).
    page.evaluate(
        """() => { const option = document.querySelector("select[name=relabel_category] option:checked");
                   option.value = "Nowhere › Nothing"; }"""
    )
    page.keyboard.press("1")
    page.keyboard.press("c")
    page.keyboard.type("keep this note")
    page.keyboard.press("Control+Enter")
    message = page.locator("#not-saved")
    expect(message).to_contain_text(f"Your judgment of {first} was not saved")
    expect(page.locator("#judging h1")).to_have_text(first)
    expect(page.locator("textarea[name=comment]")).to_have_value("keep this note")
    expect(page.locator("input[name=value]:checked")).to_have_count(1)
    assert not Judgment.with_gold.filter(task=task, comment="keep this note").exists()
    # Put right: Enter sends it, and the item still held ahead comes back at once.
    page.locator("select[name=relabel_category]").select_option(index=0)
    page.locator("#judging h1").click()
    page.keyboard.press("Enter")
    expect(page.locator("#judging")).to_have_attribute("data-item-key", ahead)
    expect(page.locator("#undo")).to_contain_text(first)
    assert Judgment.with_gold.filter(task=task, comment="keep this note").count() == 1


def test_a_network_failure_loses_nothing(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    page, task = start(login_page, ready)
    ahead = held(page)
    first = page.locator("#judging h1").inner_text()
    page.route(JUDGE_POST, lambda route: route.abort())
    page.keyboard.press("2")
    page.keyboard.press("c")
    page.keyboard.type("typed offline")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#not-saved")).to_contain_text("could not be reached")
    expect(page.locator("#judging h1")).to_have_text(first)
    expect(page.locator("textarea[name=comment]")).to_have_value("typed offline")
    page.unroute(JUDGE_POST)
    page.locator("#judging h1").click()
    page.keyboard.press("Enter")
    expect(page.locator("#judging")).to_have_attribute("data-item-key", ahead)
    expect(page.locator("#undo")).to_contain_text(first)
    assert Judgment.with_gold.filter(task=task, comment="typed offline").count() == 1
