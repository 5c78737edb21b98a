"""Team page speed (issue 12 "Speed"): a project with 100 annotators and 100,000 judgments
(a binary task, 20,000 items x 3, and a nominal one, 20,000 items x 2) spread over the last
60 days, with their assignments, the outcomes of the items (most settled, some pending or
disputed) and 150 open assignments; then the team page (``review:team``), timed in the server
(Django's test client, no network) with its query count, for each filter.

    python tests/perf/bench_team.py                       # SQLite in a temporary folder
    python tests/perf/bench_team.py --database-url postgres://postgres@127.0.0.1:5432/bw_perf_team
    python tests/perf/bench_team.py --annotators 50 --items 5000 --requests 5

Rows are bulk-inserted (a few seconds). Setup and the page phase run in fresh processes. Prints
the median and the worst of ``--requests`` requests per filter after one warm-up request, and
the queries per page; asserts nothing about time (target: <= 100 ms server time). The page
computes its figures on every request (review.team.selectors; it keeps no cache): "computed"
rows empty the cache before each request anyway, as a check that nothing is kept. The
judgments' agreement credits are stored as the services store them (judgment_agreement_sync).
CPU is this process's (with SQLite, the database's work too; with PostgreSQL, not the
server's).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from _support import atp_project_with_people, child_phase, fresh_postgres, run_phase

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "perf team"
NOMINAL = [
    {"value": "keep", "label": "Keep", "accept": True},
    {"value": "fix", "label": "Fix", "accept": False},
    {"value": "drop", "label": "Drop", "accept": False},
]


def setup(args: argparse.Namespace) -> dict:
    import random
    from collections import Counter
    from datetime import timedelta

    from django.utils import timezone

    from annotation.judgment_tasks.models import Assignment, Judgment, JudgmentTask, Outcome
    from benchmark.models import Item

    project, reviewer, people = atp_project_with_people(PROJECT, args.annotators)
    binary = JudgmentTask.objects.create(
        project=project, name="Keep?", question="Keep?", scheme="binary", overlap=3,
        consensus="majority",
    )  # fmt: skip
    nominal = JudgmentTask.objects.create(
        project=project, name="Label", question="Which?", scheme="nominal", overlap=2,
        consensus="unanimous", labels=NOMINAL,
    )  # fmt: skip
    open_items = 150
    items = Item.objects.bulk_create(
        Item(project=project, external_id=f"q{i:06d}", position=i)
        for i in range(args.items + open_items)
    )
    rng = random.Random(12)
    now = timezone.now()
    # auto_now_add would stamp every row "now"; the chart needs days.
    Judgment._meta.get_field("created_at").auto_now_add = False  # type: ignore[attr-defined]
    assignments: list[Assignment] = []
    judgments: list[Judgment] = []
    outcomes: list[Outcome] = []
    for task, overlap, values in ((binary, 3, [1, 0]), (nominal, 2, ["keep", "fix", "drop"])):
        for item in items[: args.items]:
            truth = rng.choice(values)
            given = []
            for user in rng.sample(people, overlap):
                value = truth if rng.random() < 0.8 else rng.choice(values)
                given.append(value)
                at = now - timedelta(days=rng.random() * 60)
                a = Assignment(
                    task=task, item=item, user=user, status="submitted", leased_at=at,
                    expires_at=at + timedelta(minutes=30), submitted_at=at,
                )  # fmt: skip
                assignments.append(a)
                judgments.append(
                    Judgment(
                        task=task,
                        item=item,
                        user=user,
                        assignment=a,
                        value=value,
                        seconds=round(rng.lognormvariate(3, 0.6), 1),
                        created_at=at,
                    )  # fmt: skip
                )
            top, n = Counter(given).most_common(1)[0]
            if rng.random() < 0.1:
                verdict, value = "pending", None
            elif n * 2 > overlap:
                verdict, value = ("accepted" if top in (1, "keep") else "rejected"), top
            else:
                verdict, value = "disputed", None
            outcomes.append(Outcome(task=task, item=item, verdict=verdict, value=value))
    for k, item in enumerate(items[args.items :]):
        assignments.append(
            Assignment(
                task=binary,
                item=item,
                user=people[k % len(people)],
                status="active",
                leased_at=now,
                expires_at=now + timedelta(minutes=30),
            )  # fmt: skip
        )
    Assignment.objects.bulk_create(assignments, batch_size=5000)
    for j in judgments:
        j.assignment_id = j.assignment.pk
    Judgment.objects.bulk_create(judgments, batch_size=5000)
    Outcome.objects.bulk_create(outcomes, batch_size=5000)
    from annotation.judgment_tasks.services import judgment_agreement_sync

    for task in (binary, nominal):  # as the services that write outcomes do, item by item
        judgment_agreement_sync(task=task)
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # as autovacuum would after such a load (since
            # PostgreSQL 13 inserts alone trigger it): statistics, and the visibility map
            # that lets the page read its indexes without visiting the table.
            cursor.execute("VACUUM ANALYZE")
    return {"annotators": len(people), "judgments": len(judgments), "outcomes": len(outcomes)}


def page(args: argparse.Namespace) -> dict:
    from django.conf import settings
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    # No collectstatic in a throwaway folder: plain static URLs instead of the manifest.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    from annotation.judgment_tasks.models import JudgmentTask
    from benchmark.models import Project
    from benchmark.typing import User

    client = Client()
    client.force_login(User.objects.get(username="perf-reviewer"))
    project = Project.objects.get(name=PROJECT)
    task = JudgmentTask.objects.get(project=project, name="Keep?")
    url = f"/projects/{project.pk}/team/"
    start = time.perf_counter()
    assert client.get(url).status_code == 200
    first_ms = (time.perf_counter() - start) * 1000  # templates compiled, modules imported
    from django.core.cache import cache

    def timed(query: str, *, computed: bool) -> dict:
        """Median wall and CPU time of the requests; ``computed``: the cache emptied before
        each, as after a new judgment or a changed outcome."""
        times, cpus, queries = [], [], set()
        for _ in range(args.requests if not computed else max(3, args.requests // 3)):
            if computed:
                cache.clear()
            with CaptureQueriesContext(connection) as captured:
                start, cpu = time.perf_counter(), time.process_time()
                response = client.get(url + query)
                times.append((time.perf_counter() - start) * 1000)
                cpus.append((time.process_time() - cpu) * 1000)
            assert response.status_code == 200, response.status_code
            queries.add(len(captured.captured_queries))
        return {
            "median_ms": round(statistics.median(times), 1),
            "max_ms": round(max(times), 1),
            "cpu_ms": round(statistics.median(cpus), 1),
            "queries": sorted(queries),
            "kb": round(len(response.content) / 1024, 1),
        }

    figures = {}
    for label, query in (
        ("all days", ""),
        ("last 30 days", "?days=30"),
        ("last 7 days", "?days=7"),
        ("one task", f"?task={task.pk}"),
    ):
        client.get(url + query)  # computed once, then from the cache
        figures[label] = timed(query, computed=False)
        figures[label + ", computed"] = timed(query, computed=True)
    return {"first_ms": round(first_ms, 1), "figures": figures}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--annotators", type=int, default=100)
    parser.add_argument("--items", type=int, default=20_000, help="items per task")
    parser.add_argument("--requests", type=int, default=9, help="requests timed per filter")
    parser.add_argument("--database-url", default="", help="PostgreSQL (default: SQLite)")
    parser.add_argument("--child", choices=["setup", "page"])
    args = parser.parse_args()
    if args.child:
        child_phase({"setup": setup, "page": page}, args, args.child)
        return
    argv = [
        *("--annotators", str(args.annotators), "--items", str(args.items)),
        *("--requests", str(args.requests)),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        if args.database_url:
            fresh_postgres(args.database_url)
            db, where = args.database_url, "postgresql"
        else:
            db, where = f"sqlite:///{Path(tmp) / 'team.sqlite3'}", "sqlite"
        env = {
            "DATABASE_URL": db,
            "MEDIA_ROOT": str(Path(tmp) / "media"),
            "DEBUG": "false",
            "SECRET_KEY": "perf-" + "x9" * 30,
            "ALLOWED_HOSTS": "localhost,testserver",
            "SECURE_SSL_REDIRECT": "false",
        }
        start = time.perf_counter()
        made = run_phase(__file__, "setup", argv, env)
        print(
            f"{where}: {made['annotators']} annotators, {made['judgments']} judgments, "
            f"{made['outcomes']} outcomes (setup {time.perf_counter() - start:.1f} s), "
            f"{os.cpu_count()} CPUs"
        )
        p = run_phase(__file__, "page", argv, env)
        for label, f in p["figures"].items():
            print(
                f"  {label:23s} median {f['median_ms']:6.1f} ms (CPU {f['cpu_ms']:5.1f} ms), "
                f"max {f['max_ms']:6.1f} ms; queries {f['queries']}; {f['kb']} kB"
            )
        print(f"  (the very first request, which compiles the templates: {p['first_ms']:.0f} ms)")
        print(f"  load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)")


if __name__ == "__main__":
    main()
