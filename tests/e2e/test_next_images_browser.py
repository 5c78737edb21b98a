"""Issue 25, finding 3: while an item is judged, the browser fetches the thumbnails of the
items it will be given next (those leased ahead, the page's queue), so they are in its cache before the submit swaps
that item in. The server side (nothing leased, nothing a blind rule hides, nothing for blind
solving) is tests/annotation/test_next_images.py."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from annotation.judgment_tasks.models import Assignment, JudgmentTask
from annotation.judgment_tasks.services import AHEAD_MAX
from benchmark.models import Project
from review.demo import demo_load

pytestmark = pytest.mark.django_db(transaction=True)

# Every resource the page has fetched whose address ends with one of ``urls``.
ALL_FETCHED = """urls => urls.every(u => performance.getEntriesByType("resource")
  .some(e => e.name.endsWith(u)))"""


def test_the_next_items_thumbnails_are_requested_before_the_submit(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    demo_load()
    project = Project.objects.get(data_format="atp")
    task = JudgmentTask.objects.get(project=project, name="Query verification")
    user = get_user_model().objects.get(username="annotator1")
    page = login_page(user)
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(f"/judgment-tasks/{task.pk}/next/")
    expect(page.locator("form#judgment")).to_be_visible()
    ready(page)
    first = page.locator("#judging h1").inner_text()
    # The queue full: AHEAD_MAX items held ahead (test_next_ahead_browser.py).
    full = re.compile(r"^\S+" + r"( \S+)" * (AHEAD_MAX - 1) + "$")
    expect(page.locator("#judging")).to_have_attribute("data-ahead-held", full)
    links = page.locator("#next-images link[rel=prefetch]")
    expect(links.first).to_be_attached()
    hrefs = [h for h in (links.nth(n).get_attribute("href") for n in range(links.count())) if h]
    assert hrefs
    page.wait_for_function(ALL_FETCHED, arg=hrefs)  # fetched while this item is judged
    before_submit = list(requested)
    # The items after this one are leased ahead: the current lease and AHEAD_MAX, no more.
    leases = list(Assignment.objects.values_list("item_id", flat=True))
    assert len(leases) == 1 + AHEAD_MAX

    page.keyboard.press("1")
    page.keyboard.press("Enter")
    expect(page.locator("#judging h1")).not_to_have_text(first)
    # Each thumbnail of the item swapped in (the first held) had been named and requested
    # before the submit.
    thumbs = page.locator("#judging .thumbs img")
    expect(thumbs.first).to_be_attached()
    shown = [thumbs.nth(n).get_attribute("src") for n in range(thumbs.count())]
    assert shown and set(shown) <= set(hrefs), (shown, hrefs)
    for src in shown:
        assert any(url.endswith(str(src)) for url in before_submit), (src, before_submit)
    # Leave once the page is done: the save through and the queue full again (a lease-ahead
    # request still running holds row locks while the test database is flushed: a deadlock
    # on PostgreSQL).
    expect(page.locator("#undo")).to_be_visible()
    expect(page.locator("#judging")).to_have_attribute("data-ahead-held", full)
