"""Key press to next item on screen, in Chromium, while 50 simulated annotators judge.

    python tests/perf/bench_next_item.py                  # 50 annotators, 60 items measured
    python tests/perf/bench_next_item.py --users 20 --items-measured 30 --warmup 10
    python tests/perf/bench_next_item.py --load-nice 19   # the load generator nice'd
    python tests/perf/bench_next_item.py --pause 0        # the next key press at once

Sets up as tests/perf/load.py does (a fresh PostgreSQL database, LOAD_DATABASE_URL or
--database-url, default .../bw_next_item: it is DROPPED first; an ATP-Bench project with
--items draft items and its "Query verification" task; gunicorn as ``bin/serve web`` runs it,
DEBUG off) and starts the load test's locust annotators (tests/perf/load_users.py) against it.
After --warmup seconds one more annotator judges in headless Chromium (/usr/bin/chromium, or
BENCHWRIGHT_CHROMIUM) on the judge page, with the keyboard as a person would: ``1`` picks
"Keep", then the timer starts at the keydown of ``Enter`` (the submit) and stops at the first
animation frame after the next item's judging area is on the page: shown from the queue of
items the page holds leased ahead (judge.js's ``benchwright:judging-shown`` event; up to
``AHEAD_MAX`` held, all those missing leased in one request as soon as one is shown, the
page's first request filling the whole queue; the judgment joins the page's queue of saves,
sent in the background one at a time in order) or swapped in by htmx
from the server's answer and settled. Every submit is timed: the next key press waits until
the last one was, then --pause seconds (default 1.5, the simulated annotators' median think
time; neither the items ahead nor the saves are waited for); a submit answered by a whole
page load instead is counted apart (and not timed). Prints, for all submits and for each path
("from prefetch", "from the server"), the median, p95 and max over --items-measured items (the
first --skip are left out: the browser's caches warm up), the median time the background
POSTs took (each from its own start, not its wait behind the saves before it), the load
average, and the 150 ms target beside the median and p95. Asserts nothing about time.

The simulated annotators (locust) run on the same machine as the server; on a small machine
they take CPU from it. ``--load-nice 19`` runs them under ``nice`` (clearly labelled in the
output), so the figure reflects the server; report both.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
DEFAULT_URL = os.environ.get("LOAD_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bw_next_item")
TARGET_MS = 150.0
CHROMIUM = os.environ.get("BENCHWRIGHT_CHROMIUM", "/usr/bin/chromium")

# In the page: the keydown of Enter starts the clock; the first frame after the judging area
# is swapped in and settled stops it. Each time goes into window.__nextTimes, which the script
# empties after every submit (so a whole page load, which starts a new document and a new
# list, loses nothing measured before it); window.__freshDocument says a document was loaded.
# The judging area is replaced (outerHTML), so htmx fires afterSettle on the new element with
# ``detail.target`` the old one; both carry the id, and the check is on that id.
# Each entry: [total, until the answer arrived (key press, request, server, network), from
# the answer to the frame (htmx's swap, the page's scripts on it, layout and paint), path (1:
# from the queue held ahead, 2: the same once a lease ahead on its way arrived, the queue
# being empty at the key press, 0: from the server's answer)]. A judgment sent in the background
# puts how long its POST took into window.__sendTimes.
TIMER_JS = """
(() => {
  window.__nextTimes = [];
  window.__sendTimes = [];
  window.__freshDocument = true;
  let start = null;
  let answered = null;
  document.addEventListener("keydown", (e) => { if (e.key === "Enter") start = performance.now(); }, true);
  document.addEventListener("benchwright:judging-shown", (e) => {
    if (start === null || e.detail.from !== "prefetch") return;
    const began = start;
    start = null;
    answered = null;
    requestAnimationFrame(() => {
      const now = performance.now();
      window.__nextTimes.push([now - began, 0, now - began, e.detail.waited ? 2 : 1]);
    });
  });
  document.addEventListener("benchwright:judgment-sent", (e) => window.__sendTimes.push(e.detail.ms));
  document.addEventListener("htmx:beforeSwap", (e) => {
    if (start !== null && e.detail.target && e.detail.target.id === "judging") answered = performance.now();
  });
  document.addEventListener("htmx:afterSettle", (e) => {
    if (start === null || !e.detail.target || e.detail.target.id !== "judging") return;
    const began = start;
    const arrived = answered === null ? began : answered;
    start = null;
    answered = null;
    requestAnimationFrame(() => {
      const now = performance.now();
      window.__nextTimes.push([now - began, arrived - began, now - arrived, 0]);
    });
  });
})();
"""
TAKE_JS = """() => {
  const taken = {
    times: window.__nextTimes.splice(0),
    sends: window.__sendTimes.splice(0),
    fresh: window.__freshDocument,
  };
  window.__freshDocument = false;
  return taken;
}"""
WAIT_JS = "() => window.__nextTimes.length > 0 || window.__freshDocument"


def percentile(values: list[float], q: float) -> float:
    from tests.perf.load import percentile as nearest_rank

    return nearest_rank(values, q)


def measure(
    *, base: str, session: str, task: int, items: int, skip: int, pause: float = 0.0
) -> tuple[list[list[float]], list[str], list[float]]:
    """(the times of the submits answered in place, each [total, until the answer, from the
    answer to the frame, 1 from the item held ahead or 0 from the server], the URLs of the
    submits answered by a whole page load instead, the ms each background POST took). After
    each submit the script waits until that submit was timed (or a new document loaded),
    then ``pause`` seconds, before the next key press, so no swap goes untimed."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect, sync_playwright

    times: list[list[float]] = []
    reloaded: list[str] = []
    sends: list[float] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )  # fmt: skip
        context = browser.new_context(base_url=base)
        context.add_cookies([{"name": "sessionid", "value": session, "url": base}])
        context.set_default_timeout(30_000)
        # In every document the tab loads (not a script tag: the Content-Security-Policy refuses
        # those).
        context.add_init_script(TIMER_JS)
        page = context.new_page()
        # The first page under load may take long on a busy machine (not timed).
        page.goto(f"/judgment-tasks/{task}/next/", timeout=180_000)
        expect(page.locator("html[data-ready]")).to_have_count(1, timeout=180_000)
        page.evaluate(TAKE_JS)
        heading = page.locator("#judging h1")
        for n in range(items + skip):
            shown = heading.inner_text()
            page.keyboard.press("1")
            page.keyboard.press("Enter")
            try:
                expect(heading).not_to_have_text(shown, timeout=30_000)
            except AssertionError:
                error = page.locator("#judging .alert-error, #toast")
                raise SystemExit(f"no next item after {shown}: {error.all_inner_texts()}") from None
            try:
                page.wait_for_function(WAIT_JS, timeout=10_000)
            except PlaywrightTimeout:
                raise SystemExit(f"the submit after {shown} was swapped in but not timed") from None
            if pause:
                page.wait_for_timeout(pause * 1000)  # the person looks at the item
            taken = page.evaluate(TAKE_JS)
            sends.extend(float(x) for x in taken["sends"])
            if taken["fresh"]:  # a whole page load answered this submit
                expect(page.locator("html[data-ready]")).to_have_count(1)
                reloaded.append(page.url)
            elif n >= skip:
                times.extend([float(x) for x in t] for t in taken["times"])
            if heading.inner_text() == "Nothing left to judge":
                break
        browser.close()
    return times, reloaded, sends


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=50, help="simulated annotators")
    parser.add_argument("--reviewers", type=int, default=3)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--items-measured", type=int, default=60)
    parser.add_argument("--skip", type=int, default=3, help="first items left out")
    parser.add_argument("--warmup", type=float, default=20, help="seconds of load before")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=2, help="threads per worker")
    parser.add_argument("--think", default="1,3", help="the simulated annotators' s per item")
    parser.add_argument(
        "--pause", type=float, default=1.5, help="seconds the browser's annotator looks at an item"
    )
    parser.add_argument("--database-url", default=DEFAULT_URL, help="DROPPED and created")
    parser.add_argument(
        "--load-nice",
        type=int,
        default=0,
        metavar="N",
        help="run the load generator (locust) under `nice -n N` (e.g. 19), so on a machine "
        "where it shares the CPUs with the server the figure reflects the server rather than "
        "the simulated annotators' own CPU; default 0: the same priority as the server",
    )
    args = parser.parse_args()
    priority = (
        f"nice'd (nice -n {args.load_nice}: the server's figure)"
        if args.load_nice
        else "at the server's priority (default)"
    )

    from tests.perf.load import free_port, fresh_database, gunicorn, locust_environment

    fresh_database(args.database_url)
    env = {
        **os.environ,
        "DATABASE_URL": args.database_url,
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_SETTINGS_MODULE": "benchmark.settings",
        "DJANGO_ALLOW_ASYNC_UNSAFE": "true",  # Playwright's loop runs in this thread
    }
    os.environ.update(env)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connections
    from django.test import Client
    from django.test.utils import override_settings

    from annotation.judgment_tasks.models import Judgment
    from tests.perf.load import setup_data

    call_command("migrate", verbosity=0)
    data = setup_data(items=args.items, annotators=args.users + 1, reviewers=args.reviewers)
    person = data["annotators"].pop()  # the one in the browser
    with override_settings(ALLOWED_HOSTS=["*"]):
        client = Client()
        client.force_login(get_user_model().objects.get(username=person))
        session = client.cookies["sessionid"].value
    connections.close_all()
    seconds = round(args.warmup + 600)  # stopped when the browser is done
    locust_env = locust_environment(env, data, args)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "gunicorn.log"
        with gunicorn(
            env=env, port=free_port(), workers=args.workers, threads=args.threads, log=log
        ) as (base, _pid):
            print(
                f"gunicorn: {args.workers} workers x {args.threads} threads on {base}; "
                f"{os.cpu_count()} CPUs; locust {args.users} annotators + {args.reviewers} "
                f"reviewers ({priority}); warm-up {args.warmup:.0f} s"
            )
            niced = ["nice", "-n", str(args.load_nice)] if args.load_nice else []
            locust = subprocess.Popen(
                [*niced, sys.executable, "-m", "locust", "-f", str(ROOT / "tests/perf/load_users.py"),
                 "--headless", "--only-summary", "--loglevel", "ERROR", "--host", base,
                 "--users", str(args.users + args.reviewers), "--spawn-rate", "10",
                 "--run-time", f"{seconds}s"],
                cwd=ROOT,
                env={**locust_env, "LOAD_OUT": str(Path(tmp) / "figures.json")},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
            try:
                time.sleep(args.warmup)
                load_before = os.getloadavg()[0]
                timed, reloaded, sends = measure(
                    base=base,
                    session=session,
                    task=data["task"],
                    items=args.items_measured,
                    skip=args.skip,
                    pause=args.pause,
                )
                load_after = os.getloadavg()[0]
                judged = Judgment.objects.filter(task_id=data["task"]).count()
            finally:
                locust.terminate()
                try:
                    locust.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    locust.kill()
    if not timed:
        print("no item measured")
        return 1
    times = [t[0] for t in timed]
    prefetched = [t[0] for t in timed if t[3]]
    waited = [t[0] for t in timed if t[3] == 2]
    served = [t for t in timed if not t[3]]
    print(
        f"key press to next item on screen, {len(times)} submits timed in place: "
        f"{len(prefetched)} from prefetch, {len(served)} from the server "
        f"(+{len(reloaded)} answered by a whole page load, not timed: {reloaded[:3]}), "
        f"{args.users} annotators judging, load generator {priority}, pause {args.pause:g} s:"
    )
    for label, values in (("all", times), ("from prefetch", prefetched),
                          ("from the server", [t[0] for t in served])):  # fmt: skip
        if not values:
            print(f"  {label}: none")
            continue
        print(f"  {label} ({len(values)}):")
        for name, value in (("median", percentile(values, 50)), ("p95", percentile(values, 95))):
            verdict = "meets" if value <= TARGET_MS else "MISSES"
            print(f"    {name:<6} {value:6.0f} ms ({verdict} the {TARGET_MS:.0f} ms target)")
        print(f"    max    {max(values):6.0f} ms")
    if prefetched:
        print(
            f"  from prefetch with the queue empty at the key press (waited for a lease ahead on "
            f"its way): {len(waited)}"
            + (f", median {percentile(waited, 50):.0f} ms" if waited else "")
        )
    if served:
        answer, swap = (percentile([t[n] for t in served], 50) for n in (1, 2))
        print(
            f"  from the server: median until the answer arrived {answer:.0f} ms (request, "
            f"server, network); from the answer to the frame {swap:.0f} ms (swap, scripts, "
            "layout, paint)"
        )
    if sends:
        print(
            f"  background POSTs ({len(sends)}): median {percentile(sends, 50):.0f} ms, "
            f"p95 {percentile(sends, 95):.0f} ms"
        )
    print(f"load average (1 min) {load_before:.1f} before, {load_after:.1f} after")
    print(f"judgments stored by everybody by the end: {judged}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
