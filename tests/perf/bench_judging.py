"""Judging speed: "next item" latency with 100,000 items in the pool, and agreement figures for
10,000 items x 3 annotators.

    python tests/perf/bench_judging.py                 # PostgreSQL (DATABASE_TEST_URL or local)
    python tests/perf/bench_judging.py --items 20000 --db sqlite

Prints figures; asserts nothing about time.
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

ROOT = Path(__file__).resolve().parents[2]
PG_URL = os.environ.get(
    "DATABASE_TEST_URL", "postgres://postgres@127.0.0.1:5432/benchwright_perf_judging"
)


def setup_db(db: str, tmp: Path) -> None:
    if db == "postgres":
        import urllib.parse

        import psycopg

        p = urllib.parse.urlparse(PG_URL)
        with psycopg.connect(
            host=p.hostname,
            port=p.port or 5432,
            user=p.username,
            dbname="postgres",
            autocommit=True,
        ) as conn:
            name = p.path.lstrip("/")
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        os.environ["DATABASE_URL"] = PG_URL
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'judging.sqlite3'}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmark.settings"
    os.environ.setdefault("DEBUG", "false")  # as in production: no query log
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--db", choices=["postgres", "sqlite"], default="postgres")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        setup_db(args.db, Path(tmp))
        from django.contrib.auth import get_user_model

        from annotation.judgment_tasks import services
        from annotation.judgment_tasks.models import Assignment, JudgmentTask
        from benchmark.datasets.bulk import bulk_insert
        from benchmark.models import Item, Membership, Project, Toolset
        from review.agreement.services import agreement_compute

        toolset = Toolset.objects.create(name="perf")
        project = Project.objects.create(
            name="perf", kind="plan", data_format="mms", toolset=toolset
        )
        start = time.perf_counter()
        bulk_insert(
            Item,
            (
                {
                    "project_id": project.pk,
                    "external_id": f"i{i}",
                    "position": i,
                    "query": f"query {i}",
                }
                for i in range(args.items)
            ),
        )
        print(f"{args.db}: {args.items} items inserted in {time.perf_counter() - start:.1f} s")
        task = JudgmentTask.objects.create(
            project=project,
            name="t",
            question="?",
            scheme="binary",
            overlap=3,
            consensus="all_required",
            required_value=1,
        )
        users = []
        for n in range(args.requests):
            user = get_user_model().objects.create_user(f"u{n}", password="x")
            Membership.objects.create(project=project, user=user, role="annotator")
            users.append(user)

        def time_next(batch: list, label: str) -> None:
            times = []
            for user in batch:
                t0 = time.perf_counter()
                services.assignment_next_for_user(task=task, user=user)
                times.append((time.perf_counter() - t0) * 1000)
            times.sort()
            p95 = times[int(0.95 * (len(times) - 1))]
            print(
                f"next item ({label}): median {statistics.median(times):.1f} ms, "
                f"p95 {p95:.1f} ms, max {times[-1]:.1f} ms over {len(times)} requests"
            )

        # warm up, then time one "next item" per user (each gets a fresh lease)
        half = len(users) // 2
        services.assignment_next_for_user(task=task, user=users[0])
        time_next(users[1:half], "fresh pool")
        # late in a project: the first half of the pool is already verified
        Item.objects.filter(project=project, position__lt=args.items // 2).update(status="verified")
        time_next(users[half:], "half the pool verified")
        print(f"{Assignment.objects.count()} leases")

        # agreement: 10,000 items x 3 annotators
        from annotation.judgment_tasks.models import Judgment

        rng = random.Random(1)
        raters = users[:3]
        items = list(
            Item.objects.filter(project=project)
            .order_by("position")
            .values_list("id", flat=True)[:10_000]
        )
        Assignment.objects.all().delete()
        from django.utils import timezone

        now = timezone.now()
        bulk_insert(
            Assignment,
            (
                {
                    "task_id": task.pk,
                    "item_id": i,
                    "user_id": u.pk,
                    "status": "submitted",
                    "leased_at": now,
                    "expires_at": now,
                }
                for i in items
                for u in raters
            ),
        )
        ids = dict(
            ((a, b), c) for a, b, c in Assignment.objects.values_list("item_id", "user_id", "id")
        )
        bulk_insert(
            Judgment,
            (
                {
                    "task_id": task.pk,
                    "item_id": i,
                    "user_id": u.pk,
                    "assignment_id": ids[(i, u.pk)],
                    "value": 1 if rng.random() < 0.8 else 0,
                    "seconds": rng.uniform(5, 60),
                    "relabel": {},
                }
                for i in items
                for u in raters
            ),
        )
        agreement_compute(task=task, bootstrap=10)  # warm imports
        t0 = time.perf_counter()
        report = agreement_compute(task=task)
        print(
            f"agreement, 10,000 items x 3 annotators (1,000 bootstrap resamples): "
            f"{time.perf_counter() - t0:.2f} s; alpha {report['krippendorff_alpha']['value']:.3f}"
        )


if __name__ == "__main__":
    main()
