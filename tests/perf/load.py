"""Many annotators at once: simulated annotators judge through gunicorn on PostgreSQL while a
few reviewers watch the disagreement queue and the agreement page; then the database is checked.

    python tests/perf/load.py                       # 50 annotators + 3 reviewers, 2 minutes
    python tests/perf/load.py --users 20 --minutes 0.5 --workers 2 --threads 4
    python tests/perf/load.py --cache-url redis://127.0.0.1:6379/1   # the workers share one cache

It makes a fresh PostgreSQL database (LOAD_DATABASE_URL, default .../bw_load_run: it is DROPPED
first), migrates it, bulk-creates an ATP-Bench project with --items draft items, its default
judgment task ("Query verification", nominal, overlap 3), --users annotators and --reviewers
reviewers with one known password; collects the static files and starts gunicorn as
``bin/serve web`` does (gthread, --workers x --threads, DEBUG off, a generated SECRET_KEY); runs
locust headless (tests/perf/load_users.py) in a child process: log in (a 503 from the login
throttle is retried after its Retry-After), open the judging page, then again and again
"next", read the item page, think --think seconds, submit; every 5 items the item list and one
item page. Reviewers open the disagreement queue and the agreement page every 5-15 s.

Prints requests per second, median and p95 per endpoint and for "next + submit" together,
errors by kind and the login 503s, and gunicorn's CPU time per request (steadier than the
times when other work shares the machine); then checks the database: no item has more live
assignments (submitted, or leased and not expired) or judgments than the task's overlap, and
every judgment a client saw accepted is stored. Exits 1 when there were errors or a check
failed. Asserts nothing about time (the target is printed next to the figure).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_URL = os.environ.get("LOAD_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bw_load_run")
PASSWORD = "load-test-password-1"
COMBINED = "next + submit"
TARGET_MS = 150.0


# --- pure helpers (tests/benchmark/test_load_checks.py) -----------------------------------


def percentile(values: Iterable[float], q: float) -> float:
    """The nearest-rank ``q`` percentile (0-100) of ``values``; 0 for none."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(1, -(-len(ordered) * q // 100))  # ceil(n * q / 100), at least the first
    return float(ordered[int(rank) - 1])


def summarise(
    times: dict[str, list[tuple[float, float]]], seconds: float, since: float = 0.0
) -> list[dict[str, Any]]:
    """One row per endpoint (requests, per second, median, p95, max in ms), then the row of
    "next" and "submit" together, then all requests. ``times``: per endpoint, (start in s,
    response time in ms) of each request; only requests started at ``since`` or later count,
    over ``seconds - since`` seconds."""
    seconds = max(seconds - since, 1e-9)
    kept = {name: [ms for at, ms in pairs if at >= since] for name, pairs in times.items()}
    groups = dict(sorted(kept.items()))
    groups[COMBINED] = [*kept.get("next", []), *kept.get("submit", [])]
    groups["all"] = [t for values in kept.values() for t in values]
    return [
        {
            "name": name,
            "requests": len(values),
            "rps": len(values) / seconds,
            "median": percentile(values, 50),
            "p95": percentile(values, 95),
            "max": max(values, default=0.0),
        }
        for name, values in groups.items()
    ]


def format_rows(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'endpoint':<20} {'requests':>8} {'req/s':>7} {'median':>8} {'p95':>8} {'max':>8}"]
    for r in rows:
        lines.append(
            f"{r['name']:<20} {r['requests']:>8} {r['rps']:>7.1f} {r['median']:>6.0f}ms "
            f"{r['p95']:>6.0f}ms {r['max']:>6.0f}ms"
        )
    return "\n".join(lines)


# --- the database check -------------------------------------------------------------------


def check_database(*, task_id: int, accepted: Iterable[tuple[str, int]]) -> list[str]:
    """What is wrong in the database after the run: items (or units) with more live
    assignments or judgments than the task's overlap, and judgments a client saw accepted
    (``(user name, item id)``) that are not stored. Empty: all is well."""
    from django.db.models import Count
    from django.utils import timezone

    from annotation.judgment_tasks.models import Judgment, JudgmentTask
    from annotation.judgment_tasks.services import assignments_live

    task = JudgmentTask.objects.get(pk=task_id)
    problems = []
    live = (
        assignments_live(task=task, now=timezone.now())
        .values("item_id", "unit")
        .annotate(n=Count("id"))
        .filter(n__gt=task.overlap)
    )
    for row in live:
        problems.append(
            f"item {row['item_id']}{' unit ' + row['unit'] if row['unit'] else ''}: "
            f"{row['n']} live assignments, overlap {task.overlap}"
        )
    judged = (
        Judgment.objects.filter(task=task)
        .values("item_id", "unit")
        .annotate(n=Count("id"))
        .filter(n__gt=task.overlap)
    )
    for row in judged:
        problems.append(f"item {row['item_id']}: {row['n']} judgments, overlap {task.overlap}")
    stored = set(Judgment.objects.filter(task=task).values_list("user__username", "item_id"))
    lost = sorted({(user, int(item)) for user, item in accepted} - stored)
    for user, item in lost[:20]:
        problems.append(f"lost: the judgment of {user} on item {item} was accepted, not stored")
    if len(lost) > 20:
        problems.append(f"... {len(lost) - 20} more lost judgments")
    return problems


# --- set-up ---------------------------------------------------------------------------------


def fresh_database(url: str) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.perf._support import fresh_postgres

    fresh_postgres(url)


def setup_data(*, items: int, annotators: int, reviewers: int) -> dict[str, Any]:
    """A project of ``items`` ATP-Bench draft items, its default judgment task, the people.
    Bulk inserts, and one password hash shared by everybody."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    from annotation.judgment_tasks.services import judgment_task_ensure_defaults
    from benchmark.datasets.bulk import bulk_insert
    from benchmark.models import Item, Membership, Project, Toolset

    toolset = Toolset.objects.create(name="load")
    project = Project.objects.create(
        name="Load test", kind="interleaved", data_format="atp", tag_syntax="atp", toolset=toolset
    )
    categories = ["Search", "Recommendation", "Navigation", "Shopping"]
    bulk_insert(
        Item,
        (
            {
                "project_id": project.pk,
                "external_id": f"atp-{i:05d}",
                "position": i,
                "query": f"Which of the shops in the photo opens earliest on Sunday? ({i})",
                "category": categories[i % len(categories)],
                "intent": "information seeking",
            }
            for i in range(items)
        ),
    )
    (task,) = judgment_task_ensure_defaults(project=project)
    User = get_user_model()
    hashed = make_password(PASSWORD)
    names = [f"annotator{n:02d}" for n in range(annotators)]
    reviewer_names = [f"reviewer{n}" for n in range(reviewers)]
    User.objects.bulk_create([User(username=n, password=hashed) for n in names + reviewer_names])
    ids = dict(User.objects.values_list("username", "id"))
    Membership.objects.bulk_create(
        [Membership(project=project, user_id=ids[n], role="annotator") for n in names]
        + [Membership(project=project, user_id=ids[n], role="reviewer") for n in reviewer_names]
    )
    first, last = (
        Item.objects.filter(project=project).order_by("pk").values_list("pk", flat=True)[i]
        for i in (0, items - 1)
    )
    return {
        "project": project.pk,
        "task": task.pk,
        "overlap": task.overlap,
        "items": (first, last),
        "annotators": names,
        "reviewers": reviewer_names,
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) used so far by gunicorn's workers (the children of
    ``pid``) and by gunicorn itself: the steadier figure on a machine other work shares."""
    import psutil  # locust's own dependency

    total = 0.0
    master = psutil.Process(pid)
    for proc in [master, *master.children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


@contextmanager
def cpu_sampler(pid: int, every: float = 0.5) -> Iterator[list[tuple[float, float]]]:
    """While the block runs, (time since the epoch, :func:`server_cpu_seconds`) every
    ``every`` seconds, the first before the block and the last after it."""
    import threading

    samples = [(time.time(), server_cpu_seconds(pid))]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(every):
            samples.append((time.time(), server_cpu_seconds(pid)))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield samples
    finally:
        done.set()
        thread.join()
        samples.append((time.time(), server_cpu_seconds(pid)))


def cpu_between(samples: list[tuple[float, float]], start: float) -> float:
    """CPU seconds used from the first sample at or after ``start`` (0: the first sample) to
    the last sample."""
    first = next((cpu for at, cpu in samples if at >= start), samples[-1][1])
    return samples[-1][1] - first


@contextmanager
def gunicorn(
    *, env: dict[str, str], port: int, workers: int, threads: int, log: Path
) -> Iterator[tuple[str, int]]:
    """Collect the static files and serve as ``bin/serve web`` does; answers the base URL and
    gunicorn's process id."""
    python = sys.executable
    subprocess.run(
        [python, "manage.py", "collectstatic", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                python,
                "-m",
                "gunicorn",
                "benchmark.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(workers),
                "--threads",
                str(threads),
                "--worker-class",
                "gthread",
                "--timeout",
                "120",
                "--forwarded-allow-ips",
                "127.0.0.1",
                "--access-logfile",
                "-",
            ],  # fmt: skip
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/accounts/login/", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"gunicorn did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.3)
        yield base, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def run_locust(
    *, base: str, env: dict[str, str], users: int, spawn_rate: float, seconds: int, out: Path
) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(ROOT / "tests/perf/load_users.py"),
            "--headless",
            "--only-summary",
            "--loglevel",
            "WARNING",
            "--host",
            base,
            "--users",
            str(users),
            "--spawn-rate",
            str(spawn_rate),
            "--run-time",
            f"{seconds}s",
            "--stop-timeout",
            "10",
        ],  # fmt: skip
        cwd=ROOT,
        env={**env, "LOAD_OUT": str(out)},
        check=False,  # locust exits 1 on any failure; the figures say which
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if not out.exists():
        raise SystemExit(f"locust wrote no figures:\n{done.stderr[-3000:]}")
    return json.loads(out.read_text())


def locust_environment(env: dict[str, str], data: dict[str, Any], args: Any) -> dict[str, str]:
    """The environment the locust users (tests/perf/load_users.py) read: the task, project,
    items and people ``setup_data`` made, the password and the think time."""
    return {
        **env,
        "LOAD_TASK": str(data["task"]),
        "LOAD_PROJECT": str(data["project"]),
        "LOAD_ITEMS": ",".join(map(str, data["items"])),
        "LOAD_ANNOTATORS": ",".join(data["annotators"]),
        "LOAD_REVIEWERS": ",".join(data["reviewers"]),
        "LOAD_REVIEWER_COUNT": str(args.reviewers),
        "LOAD_PASSWORD": PASSWORD,
        "LOAD_THINK": args.think,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=50, help="simulated annotators")
    parser.add_argument("--reviewers", type=int, default=3)
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--spawn-rate", type=float, default=10)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=2, help="threads per worker")
    parser.add_argument("--think", default="1,3", help="seconds reading an item: low,high")
    parser.add_argument("--database-url", default=DEFAULT_URL, help="DROPPED and created")
    parser.add_argument(
        "--cache-url",
        default=os.environ.get("CACHE_URL", ""),
        help="CACHE_URL of the web processes, e.g. redis://127.0.0.1:6379/1 (shared); "
        "default: the environment's (no CACHE_URL and no Redis broker: each worker's memory)",
    )
    args = parser.parse_args()

    fresh_database(args.database_url)
    env = {
        **os.environ,
        "DATABASE_URL": args.database_url,
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_SETTINGS_MODULE": "benchmark.settings",
        **({"CACHE_URL": args.cache_url} if args.cache_url else {}),
    }
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    from benchmark.cache_settings import cache_describe

    print(
        f"cache: {cache_describe(config=settings.CACHES['default'], source=settings.CACHE_SOURCE)}"
    )
    t0 = time.perf_counter()
    call_command("migrate", verbosity=0)
    data = setup_data(items=args.items, annotators=args.users, reviewers=args.reviewers)
    connections.close_all()
    print(
        f"set-up: {args.items} items, task {data['task']} (overlap {data['overlap']}), "
        f"{args.users} annotators, {args.reviewers} reviewers in {time.perf_counter() - t0:.1f} s"
    )
    seconds = max(1, round(args.minutes * 60))
    locust_env = locust_environment(env, data, args)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "gunicorn.log"
        with gunicorn(
            env=env, port=free_port(), workers=args.workers, threads=args.threads, log=log
        ) as (base, pid):
            print(
                f"gunicorn: {args.workers} workers x {args.threads} threads (gthread) on {base}; "
                f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; locust "
                f"{args.users + args.reviewers} users, spawn rate {args.spawn_rate}/s, {seconds} s"
            )
            with cpu_sampler(pid) as cpu_samples:
                figures = run_locust(
                    base=base,
                    env=locust_env,
                    users=args.users + args.reviewers,
                    spawn_rate=args.spawn_rate,
                    seconds=seconds,
                    out=Path(tmp) / "figures.json",
                )
        server_errors = len(re.findall(r'HTTP/1\.[01]" 500 ', log.read_text()))

    print(f"whole run ({figures['seconds']:.0f} s, logins included):")
    print(format_rows(summarise(figures["times"], figures["seconds"])))
    combined = {}
    logged_in = max(figures["logged_in"], default=0.0)
    windows = [("whole run", 0.0)]
    if 0 < logged_in < figures["seconds"] - 10:
        windows.append(("after the last login", logged_in))
        print(f"after the last login (from {logged_in:.0f} s on, everybody judging):")
        print(format_rows(summarise(figures["times"], figures["seconds"], since=logged_in)))
    for label, since in windows:
        rows = summarise(figures["times"], figures["seconds"], since=since)
        combined[label] = next(r for r in rows if r["name"] == COMBINED)["p95"]
    for label, p95 in combined.items():
        verdict = "meets" if p95 <= TARGET_MS else "MISSES"
        print(f"p95 of {COMBINED}, {label}: {p95:.0f} ms ({verdict} the {TARGET_MS:.0f} ms target)")
    errors: dict[str, int] = figures["errors"]
    print(f"errors: {sum(errors.values())}")
    for kind, n in sorted(errors.items(), key=lambda kv: -kv[1]):
        print(f"  {n:>5}  {kind}")
    print(
        f"logins: {len(figures['logged_in'])}; answered 503 (busy, retried after "
        f"Retry-After): {figures['login_503']}; the last one done at {logged_in:.0f} s"
    )
    print(f"'next' found the queue empty: {figures['queue_empty']}")
    print(f"HTTP 500 in the gunicorn access log: {server_errors}")
    for label, since in windows:
        n_requests = sum(1 for pairs in figures["times"].values() for at, _ in pairs if at >= since)
        start = figures.get("started", 0.0) + since if since else 0.0
        cpu = cpu_between(cpu_samples, start)
        print(
            f"server CPU (gunicorn, not PostgreSQL), {label}: {cpu:.1f} s for {n_requests} "
            f"requests, {1000 * cpu / max(n_requests, 1):.1f} ms per request"
        )

    problems = check_database(task_id=data["task"], accepted=figures["accepted"])
    from annotation.judgment_tasks.models import Judgment

    stored = Judgment.objects.filter(task_id=data["task"]).count()
    print(
        f"database: {len(figures['accepted'])} judgments accepted by the clients, "
        f"{stored} stored; over-assigned or lost: {len(problems)}"
    )
    for problem in problems:
        print(f"  {problem}")
    return 1 if problems or errors else 0


if __name__ == "__main__":
    sys.exit(main())
