"""Browser tests: Playwright driving the system Chromium against pytest-django's live_server."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator

import pytest

from tests.e2e.axe import Checker

# Playwright's sync API runs an event loop in this thread; the test's own ORM calls are safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("BENCHWRIGHT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def _require(reason: str) -> None:
    if os.environ.get("BENCHWRIGHT_REQUIRE_SERVICES"):
        pytest.fail(f"{reason} (required in CI)")
    pytest.skip(reason)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.e2e)


class LiveRequests:
    """What the live server is answering. Tracks the requests in flight, so a test's end can
    wait for them, and, once ``quiet()`` is called, answers new ones 503 without touching the
    database.

    A browser test's page can still be talking to the server when the test's last assertion
    passes: the judge page tops up its queue of items held ahead after the last key press, and
    gives its held items back (``sendBeacon``) as its context closes. pytest-django then empties
    the database (``TRUNCATE`` on PostgreSQL) while such a request holds a lock on one table
    inside its transaction and waits for another: PostgreSQL reports a deadlock and the test
    errors at teardown. ``quiet()`` runs before that, after the test's contexts are closed."""

    WAIT = 30.0

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.in_flight = 0
        self.closed = False
        self.refused = 0

    def open(self) -> None:
        with self._changed:
            self.closed = False

    def enter(self) -> bool:
        """Counts a request in; False if the server is quiet and the request is to be refused."""
        with self._changed:
            if self.closed:
                self.refused += 1
                return False
            self.in_flight += 1
            return True

    def leave(self) -> None:
        with self._changed:
            self.in_flight -= 1
            self._changed.notify_all()

    def quiet(self, wait: float = WAIT) -> None:
        """Refuses new requests and returns once those in flight are answered."""
        with self._changed:
            self.closed = True
            if not self._changed.wait_for(lambda: self.in_flight == 0, timeout=wait):
                raise RuntimeError(
                    f"{self.in_flight} live-server request(s) still running {wait:.0f} s after "
                    "the test: the database cannot be emptied under them"
                )


def _refuse(environ, start_response):  # type: ignore[no-untyped-def]
    start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
    return [b"the test is over"]


@pytest.fixture(scope="session", autouse=True)
def live_requests() -> Iterator[LiveRequests]:
    """Wraps how the live server answers a request (``ServerHandler.run``) for two reasons.

    - **Requests in flight are tracked** (``LiveRequests``), so that ``_quiet_server`` can wait
      for them at each test's end.
    - **On a shared in-memory SQLite, one request is answered at a time.** There the test
      database lives in memory, shared between the live server's request threads
      (``cache=shared``). A table written by one connection is locked for the others at once
      ("database table is locked": no busy timeout, unlike the file database of a real
      server). Two requests at once (the judge page sends a judgment while it leases the next
      item ahead) would fail there. SQLite serialises writers anyway. On PostgreSQL requests
      run concurrently, as in production. Only the answering is serialised, not a kept-alive
      connection's wait for its next request."""
    from django.core.servers import basehttp
    from django.db import connections

    original = basehttp.ServerHandler.run
    lock = threading.Lock()
    requests = LiveRequests()

    def shared_memory() -> bool:
        conn = connections["default"]
        return conn.vendor == "sqlite" and conn.is_in_memory_db()

    def answer(self, application):  # type: ignore[no-untyped-def]
        if not shared_memory():
            return original(self, application)
        with lock:
            return original(self, application)

    def run(self, application):  # type: ignore[no-untyped-def]
        if not requests.enter():
            return original(self, _refuse)
        try:
            return answer(self, application)
        finally:
            requests.leave()

    basehttp.ServerHandler.run = run  # type: ignore[method-assign]
    yield requests
    basehttp.ServerHandler.run = original  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _quiet_server(live_requests: LiveRequests) -> Iterator[None]:
    """At a browser test's end, after its pages are closed (``login_page``'s teardown runs
    before this one's) and before pytest-django empties the database: no request of the test
    still running, and none let in."""
    live_requests.open()
    yield
    live_requests.quiet()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        _require(f"Chromium not found at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def axe_checker() -> Checker:
    """The pages the accessibility check has seen in this session (each checked once)."""
    return Checker()


@pytest.fixture
def ready():  # type: ignore[no-untyped-def]
    """Returns a function that waits until a page's deferred scripts have run (app.js marks
    ``<html data-ready>`` on load), so a key pressed next reaches its shortcut handler."""
    from playwright.sync_api import expect

    def wait(page):  # type: ignore[no-untyped-def]
        expect(page.locator("html[data-ready]")).to_have_count(1)

    return wait


@pytest.fixture
def login_page(browser, live_server, client, axe_checker, request):  # type: ignore[no-untyped-def]
    """Returns a function that opens a page logged in as the given user, by session cookie.
    Every browser test also checks that Chromium reported no Content-Security-Policy
    violation on its pages, and (tests/e2e/axe.py) that each page it opened has no serious or
    critical accessibility violation in the light and the dark theme: after a test that
    passed, every page of a kind not yet checked in this session is opened again and checked."""
    contexts = []
    violations: list[str] = []
    opened: list[tuple[object, str]] = []

    def record(page, message):  # type: ignore[no-untyped-def]
        if "Content Security Policy" in message.text:
            violations.append(f"{page.url}: {message.text}")

    def navigated(context, page, frame):  # type: ignore[no-untyped-def]
        if frame == page.main_frame:
            opened.append((context, frame.url))

    def open_as(user):  # type: ignore[no-untyped-def]
        client.force_login(user)
        cookie = client.cookies["sessionid"]
        context = browser.new_context(base_url=live_server.url)
        context.add_cookies([{"name": "sessionid", "value": cookie.value, "url": live_server.url}])
        context.set_default_timeout(15_000)
        contexts.append(context)
        page = context.new_page()
        page.on("console", lambda message: record(page, message))
        page.on("framenavigated", lambda frame: navigated(context, page, frame))
        return page

    yield open_as
    inaccessible: list[str] = []
    if not _failed(request):
        for context in contexts:
            urls = [url for owner, url in opened if owner is context]
            inaccessible += axe_checker.check(context, urls)
    for context in contexts:
        context.close()
    assert violations == [], "the Content-Security-Policy blocked something"
    assert inaccessible == [], "accessibility (axe) violations:\n" + "\n".join(inaccessible)


def _failed(request: pytest.FixtureRequest) -> bool:
    report = getattr(request.node, "rep_call", None)
    return report is None or report.failed


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """Keeps each phase's report on the test, so a fixture knows whether the test passed."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
