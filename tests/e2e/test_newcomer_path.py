"""The newcomer's path (issue 25): a fresh clone, ``bin/run``, log in with the password it
printed at the address it printed, and judge an item.

The clone is of the committed HEAD (``git clone`` of this checkout), in a temporary folder.
``bin/run`` runs there as README prints it, with ``PORT`` set to a free port and
``BENCHWRIGHT_VENV`` pointing at this test run's own environment, which ``bin/_env.sh`` then uses
as it is (nothing is downloaded or installed). Its SQLite database and media folder are the
clone's own; no setting of this test run reaches it."""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

ROOT = Path(__file__).resolve().parents[2]
#: Settings of this test run that must not reach the newcomer's server.
NOT_PASSED = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "CACHE_URL",
    "MEDIA_ROOT",
    "DEBUG",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "DJANGO_SETTINGS_MODULE",
    "PYTHONPATH",
    "BENCHWRIGHT_DEMO_PASSWORD",
    "BENCHWRIGHT_EXTRAS",
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Output:
    """The lines a process prints, read in a thread so a test can wait for one."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        assert process.stdout is not None
        stream = process.stdout

        def pump() -> None:
            for line in stream:
                self._queue.put(line.rstrip("\n"))
            self._queue.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        wanted = re.compile(pattern)
        for line in self.lines:
            if found := wanted.search(line):
                return found
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            self.lines.append(line)
            if found := wanted.search(line):
                return found
        raise AssertionError(f"bin/run never printed {pattern!r}:\n" + "\n".join(self.lines))


@pytest.fixture
def fresh_clone(tmp_path: Path) -> Path:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: nothing to clone")
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    clone = tmp_path / "benchwright"
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "--quiet", head], check=True)
    return clone


@pytest.fixture
def served(fresh_clone: Path) -> Iterator[tuple[Output, int]]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in NOT_PASSED}
    env.update(PORT=str(port), BENCHWRIGHT_VENV=sys.prefix, PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        ["bin/run"],
        cwd=fresh_clone,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: runserver and its children stop with it
    )
    try:
        yield Output(process), port
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def wait_until_up(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url + "accounts/login/", timeout=5) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                raise
        time.sleep(0.25)  # polling a process we started; not a wait on the page under test


@pytest.mark.slow
def test_fresh_clone_bin_run_log_in_and_judge_an_item(browser, served, fresh_clone) -> None:  # type: ignore[no-untyped-def]
    output, port = served
    password = output.wait_for(r"^\s+annotator1 / (\S+)$", timeout=600)[1]
    url = output.wait_for(r"==> open (http://\S+) ", timeout=120)[1]
    # The address it prints is the one it serves, with PORT; nothing printed names another.
    assert url == f"http://127.0.0.1:{port}/"
    addresses = {a for line in output.lines for a in re.findall(r"http://[^\s/]+", line)}
    assert addresses == {url.rstrip("/")}, output.lines
    wait_until_up(url, timeout=120)

    context = browser.new_context(base_url=url)
    context.set_default_timeout(20_000)
    try:
        page = context.new_page()
        page.goto(url)
        page.get_by_label("Username").fill("annotator1")
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("button", name="Log out")).to_be_visible()

        page.get_by_role("link", name="m&m's demo").click()
        page.get_by_role("link", name="Judging", exact=True).click()
        page.get_by_role("button", name="Judge next item").click()
        first = page.locator("h1").inner_text()
        page.locator(".choice").first.click()
        page.get_by_role("button", name="Submit").click()
        expect(page.locator("h1")).not_to_have_text(first)
        # The next item was held ahead and is shown at once; the judgment is saved in the
        # background, and the undo line names the item once it is.
        expect(page.locator("#undo")).to_contain_text(first)
    finally:
        context.close()

    database = sqlite3.connect(fresh_clone / "benchwright.sqlite3")
    try:
        judged = database.execute(
            "SELECT i.external_id FROM annotation_judgment j JOIN auth_user u ON u.id = j.user_id"
            " JOIN benchmark_item i ON i.id = j.item_id WHERE u.username = 'annotator1'"
        ).fetchall()
    finally:
        database.close()
    assert judged == [(first,)]
