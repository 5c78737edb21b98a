"""Issue 25, finding 3: the next item is on screen at the key press. While an item is judged
the judge page leases the items after it (a queue, ``AHEAD_MAX`` deep, filled by one request)
and holds their judging areas; Enter shows the first at once and queues the judgment, the saves
sent one at a time in order. A refusal or a network failure puts the judged item back with what was typed and says
it was not saved. Runs on PostgreSQL too (DATABASE_URL). The server side is
tests/annotation/test_next_ahead.py."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, Route, expect

from annotation.judgment_tasks.models import (
    Assignment,
    GoldItem,
    Judgment,
    JudgmentTask,
    Outcome,
    TaskUnit,
)
from annotation.judgment_tasks.services import AHEAD_MAX
from benchmark.models import Project, Role
from review.demo import demo_load
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory, UserFactory

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


LOADED = 20_000


def queue(page: Page, depth: int = AHEAD_MAX) -> list[str]:
    """The keys of the items the page holds ahead, once it holds ``depth`` of them."""
    area = page.locator("#judging")
    pattern = r"^\S+" + r"( \S+)" * (depth - 1) + "$"
    # A lease-ahead request on a loaded machine (the suite beside it) takes longer than
    # expect()'s default 5 s.
    expect(area).to_have_attribute("data-ahead-held", re.compile(pattern), timeout=LOADED)
    return str(area.get_attribute("data-ahead-held")).split()


def held(page: Page) -> str:
    """The key of the first item the page holds ahead, once it holds one."""
    area = page.locator("#judging")
    expect(area).to_have_attribute("data-ahead-held", re.compile(r"\S"), timeout=LOADED)
    return str(area.get_attribute("data-ahead-held")).split()[0]


def shown_from(page: Page) -> list[tuple[str, str]]:
    """(how, key) of every judging area judge.js shows from here on."""
    seen: list[tuple[str, str]] = []
    page.expose_function("shownFrom", lambda how, key: seen.append((how, key)))
    page.evaluate(
        "document.addEventListener('benchwright:judging-shown', "
        "e => shownFrom(e.detail.from, e.detail.area.dataset.itemKey))"
    )
    return seen


def test_items_judged_by_keyboard_each_shown_from_memory(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    page, task = start(login_page, ready)
    held_posts: list[Route] = []
    page.route(JUDGE_POST, lambda route: held_posts.append(route))
    shown = shown_from(page)
    judged: list[str] = []
    rounds = 8 - 1 - AHEAD_MAX  # the demo's 8 items: the last on screen with a full queue
    for n in range(rounds):
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
    assert [how for how, _ in shown] == ["prefetch"] * rounds
    user = get_user_model().objects.get(username="annotator1")
    saved = Judgment.with_gold.filter(task=task, user=user)
    assert sorted(str(pk) for pk in saved.values_list("item_id", flat=True)) == sorted(judged)
    # One item on screen, AHEAD_MAX held ahead: never more.
    queue(page)
    assert Assignment.objects.filter(task=task, user=user, status="active").count() == 1 + AHEAD_MAX


def test_one_request_fills_the_queue(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    """The page holds AHEAD_MAX items ahead after one request to the lease-ahead route, and
    once it shows the first of them, one more request leases the one missing."""
    demo_load()
    task = JudgmentTask.objects.get(
        project=Project.objects.get(data_format="atp"), name="Query verification"
    )
    user = get_user_model().objects.get(username="annotator1")
    page = login_page(user)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/next/ahead/" in r.url else None)
    page.goto(f"/judgment-tasks/{task.pk}/next/")
    expect(page.locator("form#judgment")).to_be_visible()
    ready(page)
    keys = queue(page)
    assert len(set(keys)) == AHEAD_MAX
    assert len(asked) == 1 and "held=" not in asked[0], asked
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    expect(page.locator("#judging")).to_have_attribute("data-item-key", keys[0])
    again = queue(page)
    assert again[: AHEAD_MAX - 1] == keys[1:] and again[-1] not in keys
    assert len(asked) == 2 and asked[1].count("held=") == AHEAD_MAX - 1, asked
    active = Assignment.objects.filter(task=task, user=user, status="active")
    assert active.count() == 1 + AHEAD_MAX


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


def next_post(page: Page, routes: list[Route], action) -> Route:  # type: ignore[no-untyped-def]
    """The judgment's POST that ``action`` lets go, held back by the test."""
    with page.expect_request(lambda r: r.method == "POST" and bool(JUDGE_POST.search(r.url))):
        action()
    page.evaluate("0")  # the request's route reaches the test before this answers
    assert len(routes) == 1, [r.request.url for r in routes]
    return routes.pop()


def test_items_judged_in_a_row_from_the_queue_are_saved_in_order(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    page, task = start(login_page, ready)
    keys = queue(page)
    first = str(page.locator("#judging").get_attribute("data-item-key"))
    routes: list[Route] = []
    page.route(JUDGE_POST, lambda route: routes.append(route))
    shown = shown_from(page)

    def judge() -> None:
        page.keyboard.press("1")
        page.keyboard.press("Enter")

    # The items held judged in a row while no save is answered: each next one is on screen at
    # once, from the queue; one POST at a time goes out, the first judged first.
    post = next_post(page, routes, judge)
    for key in keys[:-1]:
        expect(page.locator("#judging")).to_have_attribute("data-item-key", key)
        judge()
    expect(page.locator("#judging")).to_have_attribute("data-item-key", keys[-1])
    assert [how for how, _ in shown] == ["prefetch"] * len(keys)
    assert [key for _, key in shown] == keys
    assert routes == []  # the others wait in the page's queue of saves
    posted = [post.request.url]
    for _ in keys[:-1]:
        post = next_post(page, routes, post.continue_)
        posted.append(post.request.url)
    post.continue_()
    judged = [first, *keys[:-1]]
    assert posted == [page.url.rsplit("/items/", 1)[0] + f"/items/{key}/" for key in judged]
    expect(page.locator("#judge-progress")).to_contain_text(f"{len(judged)} judged today")
    user = get_user_model().objects.get(username="annotator1")
    saved = Judgment.with_gold.filter(task=task, user=user).order_by("created_at", "pk")
    assert [str(pk) for pk in saved.values_list("item_id", flat=True)] == judged
    # Topped up meanwhile, each asked for as an item was shown: AHEAD_MAX held again, or
    # what the demo's 8 items have left after those judged and the one on screen.
    depth = min(AHEAD_MAX, 8 - len(judged) - 1)
    queue(page, depth)
    assert Assignment.objects.filter(task=task, user=user, status="active").count() == 1 + depth


def test_a_refused_save_in_the_middle_of_the_queue(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    page, task = start(login_page, ready)
    keys = queue(page)
    first = str(page.locator("#judging").get_attribute("data-item-key"))
    routes: list[Route] = []
    page.route(JUDGE_POST, lambda route: routes.append(route))

    def judge() -> None:
        page.keyboard.press("1")
        page.keyboard.press("Enter")

    # The first judged as usual; the second with a relabel the taxonomy does not know (the
    # server refuses it) and a comment; the third as usual. No save answered yet.
    post_a = next_post(page, routes, judge)
    expect(page.locator("#judging")).to_have_attribute("data-item-key", keys[0])
    refused_name = page.locator("#judging h1").inner_text()
    page.evaluate(
        """() => { const option = document.querySelector("select[name=relabel_category] option:checked");
                   option.value = "Nowhere › Nothing"; }"""
    )
    page.keyboard.press("1")
    page.keyboard.press("c")
    page.keyboard.type("keep this note")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#judging")).to_have_attribute("data-item-key", keys[1])
    third_name = page.locator("#judging h1").inner_text()
    judge()
    expect(page.locator("#judging")).to_have_attribute("data-item-key", keys[2])
    page.keyboard.press("1")  # picked on the item on screen, not submitted
    # Saved in order: the first, then the refused one (put back on screen with its input and
    # the server's reason), then the third all the same.
    post_b = next_post(page, routes, post_a.continue_)
    assert post_b.request.url.endswith(f"/items/{keys[0]}/")
    post_c = next_post(page, routes, post_b.continue_)
    assert post_c.request.url.endswith(f"/items/{keys[1]}/")
    message = page.locator("#not-saved")
    expect(message).to_contain_text(f"Your judgment of {refused_name} was not saved")
    expect(page.locator("#judging")).to_have_attribute("data-item-key", keys[0])
    expect(page.locator("textarea[name=comment]")).to_have_value("keep this note")
    post_c.continue_()
    # The third saved all the same (its answer draws the undo line on the item put back).
    expect(page.locator("#undo")).to_contain_text(third_name)
    user = get_user_model().objects.get(username="annotator1")
    saved = Judgment.with_gold.filter(task=task, user=user)
    assert not saved.filter(comment="keep this note").exists()
    # Put right and sent again: the item that was on screen comes back as it was left (its
    # pick kept), and the refused one is saved after the others.
    page.locator("select[name=relabel_category]").select_option(index=0)
    page.locator("#judging h1").click()
    post_b2 = next_post(page, routes, lambda: page.keyboard.press("Enter"))
    expect(page.locator("#judging")).to_have_attribute("data-item-key", keys[2])
    expect(page.locator("input[name=value]:checked")).to_have_count(1)
    post_b2.continue_()
    expect(page.locator("#undo")).to_contain_text(refused_name)
    order = saved.order_by("created_at", "pk").values_list("item_id", flat=True)
    assert [str(pk) for pk in order] == [first, keys[1], keys[0]]
    assert saved.get(item_id=keys[0]).comment == "keep this note"


def test_units_and_gold_units_are_judged_from_the_queue(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    """A task with units (rate the judge) on the same path: each unit after the first comes
    from the queue at the key press (0-2: the pick submits), gold units among them where the
    schedule puts them, nothing telling them apart; every rating saved, in order."""
    project = ProjectFactory(name="Rating reports")
    ann = UserFactory(username="ann")
    MembershipFactory(project=project, user=ann, role=Role.ANNOTATOR)
    task = JudgmentTask.objects.create(
        project=project, name="Rate the judge", question="Agree with the report?",
        scheme="ordinal", overlap=1, consensus="majority", updates_item_status=False,
        labels=[{"value": 0, "label": "0 · disagree"}, {"value": 1, "label": "1 · partly"},
                {"value": 2, "label": "2 · agree", "accept": True}],
        unit_kind="judge-report", gold_rate=50, gold_min_judgments=1,
    )  # fmt: skip
    position = 0
    for n in range(2):
        item = ItemFactory(project=project, external_id=f"answer-{n}", position=n)
        for label in ("precision", "recall", "chief"):
            TaskUnit.objects.create(
                task=task, item=item, key=f"response:{n + 1}:{label}", position=position
            )
            position += 1
    known = ItemFactory(project=project, external_id="answer-known", position=9)
    for label in ("precision", "recall"):
        key = f"response:9:{label}"
        TaskUnit.objects.create(task=task, item=known, key=key, position=90)
        Outcome.objects.create(task=task, item=known, unit=key, verdict="accepted", value=2)
        GoldItem.objects.create(task=task, item=known, unit=key, value=2)

    page = login_page(ann)
    page.goto(f"/judgment-tasks/{task.pk}/next/")
    expect(page.locator("form#judgment")).to_be_visible()
    ready(page)
    queue(page)
    shown = shown_from(page)
    rated = []
    while len(rated) < 8:
        area = page.locator("#judging")
        key = str(area.get_attribute("data-item-key"))
        rated.append(key)
        expect(page.locator("main")).not_to_contain_text("gold")
        page.keyboard.press("2")
        expect(area).not_to_have_attribute("data-item-key", key)
    expect(page.locator("h1")).to_have_text("Nothing left to judge")
    # Every unit after the first came from the queue, at the key press.
    assert [how for how, _ in shown] == ["prefetch"] * 7
    assert [k for _, k in shown] == rated[1:]
    gold_keys = set(
        Assignment.objects.filter(task=task, user=ann, gold=True).values_list("unit", flat=True)
    )
    assert gold_keys == {"response:9:precision", "response:9:recall"}
    assert gold_keys & {k for _, k in shown}  # a gold unit leased ahead, shown from the queue
    saved = Judgment.with_gold.filter(task=task, user=ann).order_by("created_at", "pk")
    assert list(saved.values_list("unit", flat=True)) == rated


def until(page: Page, done, timeout_ms: int = LOADED) -> None:  # type: ignore[no-untyped-def]
    """Wait until ``done()`` (the page's events dispatched meanwhile); fail on timeout."""
    for _ in range(timeout_ms // 100):
        if done():
            return
        page.wait_for_timeout(100)
    assert done()


def _live(task: JudgmentTask, user) -> list[int]:  # type: ignore[no-untyped-def]
    """The item ids of the user's leases still running in ``task``."""
    from django.utils import timezone

    rows = Assignment.objects.filter(
        task=task, user=user, status="active", expires_at__gt=timezone.now()
    )
    return sorted(rows.values_list("item_id", flat=True))


def test_leaving_with_a_save_on_its_way_asks_first_and_gives_back_the_items_ahead(
    login_page, ready
) -> None:  # type: ignore[no-untyped-def]
    """A judgment not sent yet is never lost to a link clicked: the browser asks first (the
    page stays when told to). Once left, the items the page held ahead are given back at
    once (their leases end), the item on screen keeps its lease."""
    page, task = start(login_page, ready)
    user = get_user_model().objects.get(username="annotator1")
    keys = queue(page)
    routes: list[Route] = []
    page.route(JUDGE_POST, lambda route: routes.append(route))
    dialogs: list[str] = []

    def stay(dialog) -> None:  # type: ignore[no-untyped-def]
        dialogs.append(dialog.type)
        dialog.dismiss()

    page.on("dialog", stay)
    post = next_post(page, routes, lambda: (page.keyboard.press("1"), page.keyboard.press("Enter")))
    expect(page.locator("#judging")).to_have_attribute("data-item-key", keys[0])
    queue(page)  # topped up again
    page.locator("nav.breadcrumb a").first.click()
    until(page, lambda: dialogs == ["beforeunload"])
    expect(page.locator("#judging")).to_have_attribute("data-item-key", keys[0])  # stayed
    post.continue_()
    expect(page.locator("#undo")).to_be_visible()  # saved
    held = [int(key) for key in queue(page, min(AHEAD_MAX, 8 - 2))]
    assert set(held) <= set(_live(task, user))
    page.remove_listener("dialog", stay)
    page.locator("nav.breadcrumb a").first.click()
    expect(page).not_to_have_url(re.compile(r"/items/"))
    assert dialogs == ["beforeunload"]  # nothing left to send: not asked again
    on_screen = int(keys[0])
    until(page, lambda: _live(task, user) == [on_screen])
