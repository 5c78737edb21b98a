"""Project pages as the project grows (issue 14 "Cost that grows with the project"): one
database holding projects of 10,000, 100,000 and 1,000,000 items (random queries drawn from a
Zipf-like vocabulary of 5,000 words, 8 categories x 4 intents, every status, levels and
modalities), then for each project the server time (Django's test client, no network; median
and worst of ``--requests`` after a warm-up) and the query count of: the item list, its page
50, a filtered list (status; level, whose count is capped), searches (a common word, a rare
word, a prefix, an external id), an item page, the API item and the API list of the
project (its first page and page 100).

    python tests/perf/bench_item_list_scale.py                     # SQLite, temporary folder
    python tests/perf/bench_item_list_scale.py --sizes 10000,100000
    python tests/perf/bench_item_list_scale.py --db /tmp/scale.sqlite3   # built once, reused
    python tests/perf/bench_item_list_scale.py --database-url postgres://postgres@127.0.0.1:5432/bw_perf
    python tests/perf/bench_item_list_scale.py --debug             # DEBUG on (as in the issue)

Items are inserted with raw SQL (executemany on SQLite, COPY on PostgreSQL) through the
table's triggers, so the kept tallies and the search index are built as an import builds
them; the build time is printed. Targets at 1M items: list page <= 10 ms, search <= 30 ms,
item page and API item <= 10 ms, and query counts that do not grow. Prints figures, asserts
nothing about time. CPU is this process's (with SQLite, the database's work too); SQL is the
summed time of the request's queries (what grows with the project, if anything does): on a
loaded machine these two say more than the wall time.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import tempfile
import time
from pathlib import Path

from _support import child_phase, fresh_postgres, run_phase

ROOT = Path(__file__).resolve().parents[2]
VOCABULARY = 5000
CATEGORIES = [f"Category {c}" for c in "ABCDEFGH"]
INTENTS = ["Framework", "Identification", "Comparison", "Reasoning"]
STATUSES = ["draft"] * 5 + ["in_review"] * 2 + ["verified"] * 2 + ["discarded"]


def _words() -> list[str]:
    """The vocabulary, most frequent first (the same in every process)."""
    rng = random.Random(7)
    out: set[str] = set()
    while len(out) < VOCABULARY:
        out.add("".join(rng.choice("bcdfghklmnprstvz") + rng.choice("aeiou") for _ in range(3)))
    words = sorted(out)
    rng.shuffle(words)
    return words


def _rows(project_id: int, n: int, words: list[str], now: str):
    rng = random.Random(project_id)
    weights = [1 / (k + 1) for k in range(len(words))]
    cumulative = []
    total = 0.0
    for w in weights:
        total += w
        cumulative.append(total)
    for i in range(n):
        query = " ".join(rng.choices(words, cum_weights=cumulative, k=12)).capitalize() + "?"
        status = rng.choice(STATUSES)
        yield (
            project_id, f"item-{i:07d}", i, "data.jsonl", query,
            "image" if i % 3 == 0 else "text", "[]", "[]", "{}", "An answer.", "[]", "", "[]",
            CATEGORIES[i % 8], INTENTS[(i // 8) % 4], "", 1 + i % 3, status,
            "Broken" if status == "discarded" else "", "perf", "", "[]", now, now,
        )  # fmt: skip


COLUMNS = (
    "project_id, external_id, position, source_file, query, modality, documents, image_refs, "
    "constraints, expected_answer, accepted_variants, match_type, rubric, category, intent, "
    "domain, level, status, discard_reason, provenance, raw, raw_holes, created_at, updated_at"
)


def setup(args: argparse.Namespace) -> dict:
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from benchmark.models import Membership, Project, Toolset
    from benchmark.typing import User

    call_command("migrate", verbosity=0)
    if Project.objects.filter(name__startswith="scale ").exists():
        return {"built": {}}
    toolset, _ = Toolset.objects.get_or_create(name="atp")
    user = User.objects.create_user("perf-annotator", password="x")
    words = _words()
    now = timezone.now().isoformat()
    built = {}
    for size in args.sizes:
        project = Project.objects.create(
            toolset=toolset, name=f"scale {size}", kind="interleaved", tag_syntax="atp",
            data_format="atp",
        )  # fmt: skip
        Membership.objects.create(project=project, user=user, role="annotator")
        start = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor:
            rows = _rows(project.pk, size, words, now)
            if connection.vendor == "postgresql":
                with cursor.cursor.copy(f"COPY benchmark_item ({COLUMNS}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            else:
                marks = ", ".join(["%s"] * len(COLUMNS.split(",")))
                sql = f"INSERT INTO benchmark_item ({COLUMNS}) VALUES ({marks})"
                batch: list[tuple] = []
                for row in rows:
                    batch.append(row)
                    if len(batch) == 20_000:
                        cursor.executemany(sql, batch)
                        batch = []
                cursor.executemany(sql, batch)
        built[size] = round(time.perf_counter() - start, 1)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")
    return {"built": built}


def page(args: argparse.Namespace) -> dict:
    from django.conf import settings
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    from benchmark.models import Item, Project
    from benchmark.typing import User

    client = Client()
    client.force_login(User.objects.get(username="perf-annotator"))
    words = _words()
    out: dict[str, dict] = {}
    for size in args.sizes:
        project = Project.objects.get(name=f"scale {size}")
        item = Item.objects.filter(project=project, position=size // 2).get()
        base = f"/projects/{project.pk}/"
        cases = {
            "list page": base,
            "list page 50": base + "?page=50",
            "filter status": base + "?status=verified",
            "filter level (capped)": base + "?level=2",
            "search common word": base + f"?q={words[0]}",
            "search rare word": base + f"?q={words[3000]}",
            "search 2 words + prefix": base + f"?q={words[1]}+{words[20][:3]}",
            "search external id": base + f"?q=item-{size // 3:07d}",
            "item page": f"{base}items/{item.pk}/",
            "API item": f"/api/items/{item.pk}/",
            "API list": f"/api/items/?project={project.pk}",
            "API list page 100": f"/api/items/?project={project.pk}&page=100",
        }
        figures = {}
        for label, url in cases.items():
            assert client.get(url).status_code == 200, url  # warm-up
            times, cpus, sqls, queries = [], [], [], set()
            for _ in range(args.requests):
                reset_queries()
                with CaptureQueriesContext(connection) as captured:
                    start, cpu = time.perf_counter(), time.process_time()
                    response = client.get(url)
                    times.append((time.perf_counter() - start) * 1000)
                    cpus.append((time.process_time() - cpu) * 1000)
                assert response.status_code == 200, (url, response.status_code)
                queries.add(len(captured.captured_queries))
                sqls.append(sum(float(q["time"]) for q in captured.captured_queries) * 1000)
            figures[label] = {
                "median_ms": round(statistics.median(times), 1),
                "max_ms": round(max(times), 1),
                "cpu_ms": round(statistics.median(cpus), 1),
                "sql_ms": round(statistics.median(sqls), 1),
                "queries": sorted(queries),
                "shown": (
                    re.findall(r'id="match-count"[^>]*>([^<]+)<', response.content.decode())
                    or ["-"]
                )[0],
            }
        out[str(size)] = figures
    return {"figures": out}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--requests", type=int, default=9, help="requests timed per page")
    parser.add_argument("--database-url", default="", help="PostgreSQL (default: SQLite)")
    parser.add_argument("--db", default="", help="SQLite file to build once and reuse")
    parser.add_argument("--debug", action="store_true", help="DEBUG on, as in the issue")
    parser.add_argument("--child", choices=["setup", "page"])
    args = parser.parse_args()
    args.sizes = [int(s) for s in str(args.sizes).split(",")]
    if args.child:
        child_phase({"setup": setup, "page": page}, args, args.child)
        return
    argv = ["--sizes", ",".join(map(str, args.sizes)), "--requests", str(args.requests)]
    with tempfile.TemporaryDirectory() as tmp:
        if args.database_url:
            fresh_postgres(args.database_url)
            db, where = args.database_url, "postgresql"
        else:
            db, where = f"sqlite:///{args.db or Path(tmp) / 'scale.sqlite3'}", "sqlite"
        env = {
            "DATABASE_URL": db,
            "MEDIA_ROOT": str(Path(tmp) / "media"),
            "DEBUG": "true" if args.debug else "false",
            "SECRET_KEY": "perf-" + "x9" * 30,
            "ALLOWED_HOSTS": "localhost,testserver",
            "SECURE_SSL_REDIRECT": "false",
        }
        made = run_phase(__file__, "setup", argv, env)
        for size, seconds in made["built"].items():
            print(f"{where}: built {int(size):,} items in {seconds} s (triggers included)")
        p = run_phase(__file__, "page", argv, env)
        print(f"{where}, DEBUG {'on' if args.debug else 'off'}, {os.cpu_count()} CPUs")
        for size, figures in p["figures"].items():
            print(f"  {int(size):,} items")
            for label, f in figures.items():
                print(
                    f"    {label:24s} median {f['median_ms']:6.1f} ms (CPU {f['cpu_ms']:6.1f},"
                    f" SQL {f['sql_ms']:6.1f}), max {f['max_ms']:6.1f} ms; queries {f['queries']};"
                    f" {f['shown']}"
                )
        print(f"  load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)")


if __name__ == "__main__":
    main()
