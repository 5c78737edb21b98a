"""Where the load test's CPU goes: the requests tests/perf/load.py makes (next, the judge
page, submit; every 5 items the item list and one item page; reviewers' disagreement queue
and agreement page), made in this process through Django's test client on PostgreSQL with
DEBUG off, each timed in CPU seconds of this thread (steadier than wall time when other work
shares the machine; the database server's own CPU is not in it).

    python tests/perf/bench_load_paths.py                 # 50 annotators, 2,000 items, 600 items judged
    python tests/perf/bench_load_paths.py --rounds 300 --database-url postgres://postgres@127.0.0.1:5432/bw_perf_paths

Prints per endpoint the median CPU and wall milliseconds and the request count, then the
CPU per request over the load test's mix and what that mix asks of the machine: 50 annotators
who read an item 1-3 s make about ``annotators / (2 s + latency)`` items a second, 3.4
requests each; with ``CPUS`` cores, the load test's p95 can only stay low when that demand is
well under the cores (at 1.0 the queue grows without end). Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _support import child_phase, fresh_postgres, run_phase

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/bw_perf_paths"
# tests/perf/load_users.py's answers (not imported: it loads locust, which patches sockets)
VALUES = ['"keep"'] * 6 + ['"remove_ambiguous"', '"remove_not_grounded"', '"remove_not_visual"']


def _measure(args: argparse.Namespace) -> dict:
    import random

    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import override_settings

    from benchmark.typing import User
    from tests.perf.load import setup_data

    call_command("migrate", verbosity=0)
    data = setup_data(items=args.items, annotators=args.annotators, reviewers=3)
    random.seed(7)
    times: dict[str, list[tuple[float, float]]] = {}

    def timed(name: str, call, *a, **k):  # type: ignore[no-untyped-def]
        wall, cpu = time.perf_counter(), time.thread_time()
        response = call(*a, **k)
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
        times.setdefault(name, []).append((cpu * 1000, wall * 1000))
        return response

    with override_settings(DEBUG=False, ALLOWED_HOSTS=["testserver"]):
        clients = []
        for name in data["annotators"]:
            client = Client()
            client.force_login(User.objects.get(username=name))
            client.get(f"/projects/{data['project']}/judge/")
            clients.append(client)
        reviewers = []
        for name in data["reviewers"]:
            client = Client()
            client.force_login(User.objects.get(username=name))
            reviewers.append(client)
        task, project = data["task"], data["project"]
        first, last = data["items"]
        judged = 0
        for n in range(args.rounds):
            client = clients[n % len(clients)]
            r = timed("next", client.post, f"/judge/{task}/next/")
            if r.status_code != 302:
                continue
            location = r["Location"]
            timed("judge page", client.get, location)
            value = random.choice(VALUES)
            r = timed("submit", client.post, location, {"value": value, "seconds": "4.2"})
            assert r.status_code == 302, r.status_code
            judged += 1
            if n % 5 == 4:
                timed("item list", client.get, f"/projects/{project}/")
                other = random.randint(first, last)
                timed("item page", client.get, f"/projects/{project}/items/{other}/")
            if n % 40 == 39:  # 3 reviewers every 5-15 s while 50 people judge ~20 items/s
                reviewer = reviewers[n % len(reviewers)]
                timed("disagreement queue", reviewer.get, f"/review/{task}/disputes/")
                timed("agreement page", reviewer.get, f"/review/{task}/agreement/")
    figures = {
        name: {
            "n": len(rows),
            "cpu": statistics.median(r[0] for r in rows),
            "wall": statistics.median(r[1] for r in rows),
            "cpu_total": sum(r[0] for r in rows),
        }
        for name, rows in times.items()
    }
    return {"figures": figures, "judged": judged}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=600, help="items judged")
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--database-url", default=DEFAULT_URL, help="DROPPED and created")
    args = parser.parse_args()
    if args.child:
        child_phase({"measure": _measure}, args, args.child)
        return
    fresh_postgres(args.database_url)
    argv = [
        "--rounds",
        str(args.rounds),
        "--items",
        str(args.items),
        "--annotators",
        str(args.annotators),
    ]
    env = {
        "DATABASE_URL": args.database_url,
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(60),
        "ALLOWED_HOSTS": "testserver",
        "CELERY_BROKER_URL": "",
    }
    subprocess.run(  # DEBUG off serves hashed static names from the manifest
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, **env},
        check=True,
    )
    out = run_phase(__file__, "measure", argv, env)
    figures = out["figures"]
    requests = sum(f["n"] for f in figures.values())
    cpu = sum(f["cpu_total"] for f in figures.values())
    for name, f in figures.items():
        print(f"  {name:20} median CPU {f['cpu']:6.1f} ms, wall {f['wall']:6.1f} ms  ({f['n']})")
    per_request = cpu / requests
    per_item = cpu / max(1, out["judged"])
    cpus = os.cpu_count() or 1
    demand = args.annotators / 2.0 * per_item / 1000
    print(f"  CPU per request over the load test's mix: {per_request:.1f} ms ({requests} requests)")
    print(
        f"  CPU per judged item (next + page + submit + its share of the rest): {per_item:.1f} ms;"
        f" {args.annotators} annotators reading 2 s an item ask {demand:.2f} of {cpus} CPUs"
        " (the web process alone; the database and the load generator come on top)"
    )
    print(f"  load: {' '.join(f'{x:.2f}' for x in os.getloadavg()[:2])} (1, 5 min)")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
