"""The statistics page's ATP-Bench Tables 2 and 9 (issue 13): time and queries of
``tag_review.selectors.dataset_stats`` (the release statistics' rule,
``benchmark.datastats.atp_summary``) over N verified items, each with 3 documents, 4
document images and one ground-truth answer of 4 tool calls.

    python tests/perf/bench_tag_stats.py                  # SQLite in a temporary folder
    python tests/perf/bench_tag_stats.py --items 20000 --database-url postgres://postgres@127.0.0.1:5432/bw_perf_stats

Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _support import fresh_postgres

ROOT = Path(__file__).resolve().parents[2]
CATEGORIES = ["Academic", "Manual", "Recipe", "Fashion"]
INTENTS = ["Explain", "Guide", "Compare"]


def call(n: int) -> str:
    payload = {"tool_name": "Reference", "description": f"fig {n}", "params": {"img_index": n}}
    return "<tool>" + json.dumps(payload) + "</tool>"


def run(n_items: int, repeats: int) -> dict:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.tag_review.selectors import dataset_stats
    from benchmark.models import Item, ItemStatus, Membership, Project, Response

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("perf", "perf@example.org", "x")
    from benchmark.builtin import taxonomies_ensure, toolsets_ensure

    project = Project.objects.create(
        name="perf stats", data_format="atp", kind="interleaved", tag_syntax="atp",
        toolset=toolsets_ensure()["atp"], taxonomy=taxonomies_ensure()["atp"],
    )  # fmt: skip
    Membership.objects.create(project=project, user=user, role="reviewer")
    text = "Intro.\n\n" + "\n\n".join(call(k) for k in range(4)) + "\n\nThe end."
    docs = [{"text": "A document of some length. " * 20, "images": []} for _ in range(3)]
    refs = [
        {"sha256": f"{k:064x}", "role": "document", "path": f"d{k}.png", "position": k}
        for k in range(4)
    ]
    Item.objects.bulk_create(
        Item(
            project=project,
            external_id=f"q{i}",
            position=i,
            query="Q?",
            category=CATEGORIES[i % 4],
            intent=INTENTS[i % 3],
            status=ItemStatus.VERIFIED,
            documents=docs,
            image_refs=refs,
        )  # fmt: skip
        for i in range(n_items)
    )
    Response.objects.bulk_create(
        Response(item_id=pk, key="gt", text=text, origin="ground_truth", position=0)
        for pk in project.items.values_list("pk", flat=True)
    )
    times, queries = [], set()
    stats: dict = {}
    for _ in range(repeats):
        with CaptureQueriesContext(connection) as ctx:
            start = time.perf_counter()
            stats = dataset_stats(user=user, project=project)
            times.append((time.perf_counter() - start) * 1000)
        queries.add(len(ctx.captured_queries))
    return {
        "items": n_items,
        "median_ms": round(statistics.median(times), 1),
        "max_ms": round(max(times), 1),
        "queries": sorted(queries),
        "overall": stats["overall"],
        "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--database-url", default="", help="PostgreSQL (default: SQLite)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.database_url:
            fresh_postgres(args.database_url)
            db, where = args.database_url, "postgresql"
        else:
            db, where = f"sqlite:///{Path(tmp) / 'stats.sqlite3'}", "sqlite"
        os.environ.update(
            DATABASE_URL=db,
            MEDIA_ROOT=str(Path(tmp) / "media"),
            DEBUG="false",
            SECRET_KEY="perf-" + "x9" * 30,
            ALLOWED_HOSTS="localhost,testserver",
            SECURE_SSL_REDIRECT="false",
            DJANGO_SETTINGS_MODULE="benchmark.settings",
        )
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        r = run(args.items, args.repeats)
    o = r["overall"]
    print(
        f"{where}: dataset_stats over {r['items']} verified items (1 answer x 4 calls each): "
        f"median {r['median_ms']:.1f} ms, max {r['max_ms']:.1f} ms over {args.repeats} runs; "
        f"queries {r['queries']}; peak {r['peak_mb']:.1f} MB; overall #Q {o['queries']}, "
        f"#Doc/Q {o['docs_per_q']:.2f}, #Img/Q {o['imgs_per_q']:.2f}, #TC/GT {o['tc_per_gt']:.2f}"
    )
    print(f"  load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)")


if __name__ == "__main__":
    main()
