""" "Next" in a task with units when gold units are mixed in (issue 26): does asking for the next
unit cost the same whether a gold unit or an ordinary one is served?

    python tests/perf/bench_gold_units.py                       # SQLite, 3 runs
    python tests/perf/bench_gold_units.py --database-url postgres://postgres@127.0.0.1:5432/bw_x

Makes a fresh database (SQLite in a temporary folder, or the PostgreSQL database given, which
is DROPPED and created again), a "rate the judge" task with --units units (0-2) of which
--gold are settled and marked gold, gold rate --rate percent, and one annotator who asks
"next" and rates, --rounds times, in process (the service, as every page and the API call
it). Each "next" is timed in CPU time of this process (``time.process_time``; the machine is
shared, so wall time is printed beside it) and counted in statements, apart for gold and
ordinary units. Prints each run's medians, then the median over --runs. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def run_once(units: int, gold: int, rate: int, rounds: int) -> dict[str, list[float]]:
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model

    from annotation.judgment_tasks import services
    from annotation.judgment_tasks.models import GoldItem, JudgmentTask, Outcome, TaskUnit
    from benchmark.models import Item, Membership, Project, Toolset

    toolset = Toolset.objects.create(name="perf-gold")
    project = Project.objects.create(
        name="perf gold units",
        kind="interleaved",
        data_format="atp",
        tag_syntax="atp",
        toolset=toolset,
    )
    task = JudgmentTask.objects.create(
        project=project, name="rate", question="?", scheme="ordinal",
        labels=[{"value": v, "label": str(v)} for v in (0, 1, 2)], overlap=3,
        consensus="majority", updates_item_status=False, unit_kind="judge-report",
        gold_rate=rate,
    )  # fmt: skip
    per_item = 5
    items = Item.objects.bulk_create(
        [Item(project=project, external_id=f"i{n}", position=n) for n in range(units // per_item)]
    )
    TaskUnit.objects.bulk_create(
        [
            TaskUnit(task=task, item=item, key=f"response:{n + 1}:r{k}", position=n * per_item + k)
            for n, item in enumerate(items)
            for k in range(per_item)
        ]
    )
    marked = list(TaskUnit.objects.filter(task=task).order_by("-position")[:gold])
    Outcome.objects.bulk_create(
        [
            Outcome(task=task, item_id=u.item_id, unit=u.key, verdict="accepted", value=2)
            for u in marked
        ]
    )
    GoldItem.objects.bulk_create(
        [GoldItem(task=task, item_id=u.item_id, unit=u.key, value=2) for u in marked]
    )
    user = get_user_model().objects.create_user("perf-annotator", password="x")
    Membership.objects.create(project=project, user=user, role="annotator")
    figures: dict[str, list[float]] = {
        f"{kind} {what}": []
        for kind in ("gold", "other")
        for what in ("cpu ms", "wall ms", "stmts")
    }
    for _ in range(rounds):
        cpu, wall = time.process_time(), time.perf_counter()
        with CaptureQueriesContext(connection) as ctx:
            lease = services.assignment_next_for_user(task=task, user=user)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if lease is None:
            break
        kind = "gold" if lease.gold else "other"
        figures[f"{kind} cpu ms"].append(cpu * 1000)
        figures[f"{kind} wall ms"].append(wall * 1000)
        figures[f"{kind} stmts"].append(len(ctx.captured_queries))
        services.judgment_submit(task=task, item=lease.item, user=user, value=1, unit=lease.unit)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=5000)
    parser.add_argument("--gold", type=int, default=40)
    parser.add_argument("--rate", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--database-url", default="")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        figures = run_once(args.units, args.gold, args.rate, args.rounds)
        print(
            " ".join(
                f"{k.replace(' ', '_')}={statistics.median(v) if v else 0:.3f}"
                for k, v in figures.items()
            )
        )
        return
    results: list[dict[str, float]] = []
    for run in range(args.runs):
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "benchmark.settings"}
        with tempfile.TemporaryDirectory() as folder:
            if args.database_url:
                name = args.database_url.rsplit("/", 1)[1]
                base = args.database_url.rsplit("/", 1)[0] + "/postgres"
                for sql in (f"DROP DATABASE IF EXISTS {name}", f"CREATE DATABASE {name}"):
                    subprocess.run(["psql", base, "-qc", sql], check=True)
                env["DATABASE_URL"] = args.database_url
            else:
                env["DATABASE_URL"] = f"sqlite:///{folder}/perf.sqlite3"
            out = subprocess.run(
                [sys.executable, __file__, "--child", *sys.argv[1:]],
                env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True,
            ).stdout.strip().splitlines()[-1]  # fmt: skip
        row = {k.replace("_", " "): float(v) for k, v in (p.split("=") for p in out.split())}
        results.append(row)
        print(f"run {run + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in row.items()))
    print(os.popen("uptime").read().strip())
    print(
        "median of runs: "
        + ", ".join(f"{k} {statistics.median(r[k] for r in results):.2f}" for k in results[0])
    )


if __name__ == "__main__":
    main()
