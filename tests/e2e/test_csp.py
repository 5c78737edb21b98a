"""The Content-Security-Policy (issue 9, defect 9) in a real browser: an admin browses the demo,
following every link from page to page, plus the API docs, the Django admin, the login page and
the locked-out page, and Chromium reports no violation of the policy on any of them."""

from __future__ import annotations

import re
from collections import Counter, deque
from urllib.parse import urldefrag, urlparse

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from benchmark.models import Project
from review.demo import demo_load

pytestmark = pytest.mark.django_db(transaction=True)

MAX_PAGES = 150
# Downloads, raw files and actions, not pages.
SKIP = re.compile(
    r"/logout/|/export/|\.csv$|\.jsonl$|/images/[0-9a-f]{64}/(thumb/)?$|/media/|/static/|/api/"
    r"|/admin/"
)


def violations(messages: list[str]) -> list[str]:
    return [m for m in messages if "Content Security Policy" in m or "Content-Security" in m]


def watch(page, seen: list[str]) -> None:  # type: ignore[no-untyped-def]
    """Collect the page's console messages (where Chromium reports CSP violations) and errors."""
    page.on("console", lambda msg: seen.append(f"{page.url}: {msg.text}"))
    page.on("pageerror", lambda exc: seen.append(f"{page.url}: {exc}"))


def wait_for_htmx(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_load_state("load")
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def test_browsing_the_demo_reports_no_csp_violation(  # type: ignore[no-untyped-def]
    login_page, browser, live_server, settings
) -> None:
    demo_load()
    admin = get_user_model().objects.get(username="admin")
    page = login_page(admin)
    seen: list[str] = []
    watch(page, seen)

    first = page.goto("/")
    assert first is not None
    policy = first.headers.get("content-security-policy", "")
    assert "script-src 'self'" in policy and "'unsafe-inline'" not in policy

    # Every page a link leads to, breadth first from the project list.
    queue: deque[str] = deque(["/"])
    queue.extend(f"/projects/{p.pk}/" for p in Project.objects.order_by("pk"))
    visited: set[str] = set()
    # At most two pages of each kind in each project: /projects/3/items/N/, ...
    per_shape: Counter[str] = Counter()
    while queue and len(visited) < MAX_PAGES:
        path = queue.popleft()
        shape = re.sub(r"(?<!/projects/)\b\d+", "N", re.sub(r"[0-9a-f]{64}", "H", path))
        if path in visited or per_shape[shape] >= 2:
            continue
        visited.add(path)
        per_shape[shape] += 1
        response = page.goto(path)
        assert response is not None and response.ok, (path, response and response.status)
        wait_for_htmx(page)
        for href in page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)"):
            url = urlparse(urldefrag(href).url)
            if url.netloc != urlparse(live_server.url).netloc or SKIP.search(url.path):
                continue
            target = url.path + (f"?{url.query}" if url.query else "")
            if target not in visited and "page=" not in url.query:
                queue.append(target)
    assert len(visited) > 30, visited  # the crawl did reach the demo's pages

    # Pages no link above leads to: the API docs and the Django admin.
    project = Project.objects.order_by("pk").first()
    assert project is not None
    page.goto("/api/docs/")
    expect(page.locator(".swagger-ui .info")).to_be_visible()
    for path in [
        "/admin/",
        "/admin/benchmark/project/",
        f"/admin/benchmark/project/{project.pk}/change/",
    ]:
        response = page.goto(path)
        assert response is not None and response.ok, path
        expect(page.locator("#content")).to_be_visible()

    # The login page, and the page of someone locked out after too many wrong passwords.
    settings.AXES_ENABLED = True
    anonymous = browser.new_context(base_url=live_server.url)
    try:
        # The check can fail: Chromium reports an inline style attribute on the console.
        probe = anonymous.new_page()
        probe.goto("/accounts/login/")
        with probe.expect_console_message(lambda m: bool(violations([m.text]))):
            probe.evaluate("document.body.insertAdjacentHTML('beforeend', '<i style=\"x\"></i>')")
        probe.close()
        login = anonymous.new_page()
        watch(login, seen)
        for _ in range(settings.LOGIN_FAILURE_LIMIT):
            login.goto("/accounts/login/")
            login.fill("input[name=username]", "admin")
            login.fill("input[name=password]", "wrong")
            login.click("button[type=submit]")
            login.wait_for_load_state("load")
        expect(login.locator("#locked-out-reason")).to_contain_text("Try again in 15 minutes")
    finally:
        anonymous.close()

    assert violations(seen) == []
