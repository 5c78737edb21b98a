"""Routing by doubt's cost: "next item" latency with the task serving items by doubt against
position order, on a pool of ``--items`` items of which ``--scored`` have a stored doubt, and the
time of recomputing a whole task's doubt (Dawid-Skene included) for ``--judged`` items judged by
three annotators.

    .venv/bin/python tests/perf/bench_doubt_queue.py                 # PostgreSQL
    .venv/bin/python tests/perf/bench_doubt_queue.py --items 5000 --db sqlite
    .venv/bin/python tests/perf/bench_doubt_queue.py --explain       # and the candidate's plan

PostgreSQL: ``DATABASE_TEST_URL`` (default a database ``benchwright_perf_doubt`` on
127.0.0.1:5432, dropped and created again). Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.perf._support import fresh_postgres  # noqa: E402

PG_URL = os.environ.get(
    "DATABASE_TEST_URL", "postgres://postgres@127.0.0.1:5432/benchwright_perf_doubt"
)


def setup_db(db: str, tmp: Path) -> None:
    if db == "postgres":
        fresh_postgres(PG_URL)
        os.environ["DATABASE_URL"] = PG_URL
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'doubt.sqlite3'}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmark.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def explain(services: Any, task: Any, users: list[Any]) -> None:
    """The plan of "next item"'s candidate statement by doubt, for a gated user and one who
    is not (``EXPLAIN ANALYZE`` on PostgreSQL, ``EXPLAIN QUERY PLAN`` on SQLite); nothing
    leased (rolled back)."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    for user in users:
        with CaptureQueriesContext(connection) as queries:
            try:
                with transaction.atomic():
                    services.assignment_next_for_user(task=task, user=user)
                    raise _Rollback
            except _Rollback:
                pass
        sql = next(q["sql"] for q in queries.captured_queries if "ORDER BY d.score" in q["sql"])
        prefix = "EXPLAIN ANALYZE " if connection.vendor == "postgresql" else "EXPLAIN QUERY PLAN "
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(prefix + sql)
            print(f"-- {sql[sql.index('ORDER BY') :]}")
            for row in cursor.fetchall():
                print("   ", row[-1])


class _Rollback(Exception):
    pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--scored", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--judged", type=int, default=2_000)
    parser.add_argument("--db", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument(
        "--explain", action="store_true", help="print the plan of the by-doubt candidate"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        setup_db(args.db, Path(tmp))
        from django.contrib.auth import get_user_model
        from django.utils import timezone

        from annotation.judgment_tasks import services
        from annotation.judgment_tasks.doubt.models import AnnotatorReliability, ItemDoubt
        from annotation.judgment_tasks.doubt.services import task_doubt_recompute
        from annotation.judgment_tasks.models import Assignment, Judgment, JudgmentTask
        from benchmark.datasets.bulk import bulk_insert
        from benchmark.models import Item, Membership, Project, Toolset

        rng = random.Random(1)
        toolset = Toolset.objects.create(name="perf")
        project = Project.objects.create(
            name="perf", kind="plan", data_format="mms", toolset=toolset
        )
        bulk_insert(
            Item,
            (
                {"project_id": project.pk, "external_id": f"i{i}", "position": i}
                for i in range(args.items)
            ),
        )
        task = JudgmentTask.objects.create(
            project=project, name="t", question="?", scheme="binary", overlap=3,
            consensus="majority", updates_item_status=False,
        )  # fmt: skip
        ids = list(Item.objects.filter(project=project).values_list("pk", flat=True))
        position = dict(Item.objects.filter(project=project).values_list("pk", "position"))
        bulk_insert(
            ItemDoubt,
            (
                {"task_id": task.pk, "item_id": pk, "unit": "", "score": rng.random(),
                 "position": position[pk], "judgments": 1, "signals": {"votes": {}},
                 "updated_at": timezone.now()}
                for pk in rng.sample(ids, min(args.scored, len(ids)))
            ),
        )  # fmt: skip
        users = []
        for n in range(3 * args.requests + 4):
            user = get_user_model().objects.create_user(f"u{n}")
            Membership.objects.create(project=project, user=user, role="annotator")
            users.append(user)
        for user in users[::2]:  # half the annotators below the threshold: served the other way
            AnnotatorReliability.objects.create(task=task, user=user, score=0.5, source="gold")

        def time_next(batch: list, label: str) -> float:
            times = []
            for user in batch:
                t0 = time.perf_counter()
                services.assignment_next_for_user(task=task, user=user)
                times.append((time.perf_counter() - t0) * 1000)
            times.sort()
            p95 = times[int(0.95 * (len(times) - 1))]
            median = statistics.median(times)
            print(
                f"next item ({label}): median {median:.1f} ms, p95 {p95:.1f} ms over "
                f"{len(times)} requests"
            )
            return median

        from django.db import connection

        if connection.vendor == "postgresql":  # the statistics autovacuum keeps after a load
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        services.assignment_next_for_user(task=task, user=users[-1])  # warm up
        n = args.requests
        print(f"{args.db}: {args.items} items, {args.scored} with a stored doubt")
        time_next(users[0:n], "position order")
        task.serve_by_doubt = True
        t0 = time.perf_counter()
        task.save()  # the items without a stored doubt get theirs, the prior
        print(
            f"routing turned on: {ItemDoubt.objects.filter(task=task).count()} doubt rows, "
            f"{time.perf_counter() - t0:.2f} s"
        )
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        if args.explain:
            explain(services, task, users[-4:-2])  # not yet served: gated, not gated
        time_next(users[n : 2 * n], "by doubt, half of them gated")
        task.serve_by_doubt = False
        task.save()
        time_next(users[2 * n : 3 * n], "position order again")

        # recompute: --judged items x 3 annotators
        Assignment.objects.all().delete()
        raters = users[-4:-1]
        judged = ids[: args.judged]
        now = timezone.now()
        bulk_insert(
            Assignment,
            (
                {"task_id": task.pk, "item_id": i, "user_id": u.pk, "status": "submitted",
                 "leased_at": now, "expires_at": now}
                for i in judged
                for u in raters
            ),
        )  # fmt: skip
        leases = {
            (a, b): c for a, b, c in Assignment.objects.values_list("item_id", "user_id", "id")
        }
        Judgment.objects.bulk_create(
            (
                Judgment(
                    task_id=task.pk, item_id=i, user_id=u.pk, assignment_id=leases[(i, u.pk)],
                    value=1 if rng.random() < 0.8 else 0,
                )
                for i in judged
                for u in raters
            ),
            batch_size=2000,
        )  # fmt: skip
        t0 = time.perf_counter()
        summary = task_doubt_recompute(task=task)
        print(
            f"recompute doubt, {args.judged} items x 3 judgments, {summary['items']} items "
            f"scored (Dawid-Skene {'on' if summary['dawid_skene'] else 'off'}): "
            f"{time.perf_counter() - t0:.2f} s"
        )


if __name__ == "__main__":
    main()
