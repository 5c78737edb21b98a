"""Speed of the agreement report on 10,000 items x 3 raters (bootstrap included), and with
``--page`` the agreement page itself (issue 14).

    python tests/perf/bench_agreement.py
    python tests/perf/bench_agreement.py --items 50000 --raters 5 --bootstrap 2000 --repeat 3
    python tests/perf/bench_agreement.py --page      # 50 annotators, 750 judgments, SQLite
    python tests/perf/bench_agreement.py --page --annotators 200 --items 600 \\
        --database-url postgres://postgres@127.0.0.1:5432/bw_perf_agreement

``--page``: a nominal task on a 5-label scale, ``--items`` (default 150) items judged by 5
annotators each drawn from ``--annotators`` (default 50), so 750 judgments; then the page
(``review:agreement``) timed in the server (Django's test client, no network): median wall and
CPU time of ``--requests`` requests after one warm-up, its HTML size and query count, with the
figures cached ("cached") and with the cache emptied before each request ("computed", as after
a new judgment), with an outcome written before each request ("judgments coming in", as while
annotators judge); and a pair's confusion fragment when the page has that route.

Synthetic, seeded judgments: each item has a latent label on a 1-5 scale, each rater gives it
with probability 0.7 (else a random label) and skips about 5% of items. The same judgments are
reported at the nominal level (as text labels), ordinal (1-5) and interval (unequal values), with
final labels and per-judgment times. Prints the full report's time and its parts (best and median
of --repeat runs after one warm-up, and the median CPU time of this process, which is steadier
when other processes compete for the cores); asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

_t0 = time.perf_counter()
import numpy as np  # noqa: E402
from _support import atp_project_with_people, fresh_postgres, run_phase  # noqa: E402

from benchmark.metrics import agreement as ag  # noqa: E402

IMPORT_SECONDS = time.perf_counter() - _t0

SCALES: dict[str, list[Any]] = {
    "nominal": ["wrong", "weak", "partial", "good", "correct"],
    "ordinal": [1, 2, 3, 4, 5],
    "interval": [0.0, 1.0, 2.5, 5.0, 10.0],
}


def synthetic(
    n_items: int, n_raters: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(item index, rater index, label index 0-4, seconds) for every judgment made."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 5, n_items)
    item = np.repeat(np.arange(n_items), n_raters)
    rater = np.tile(np.arange(n_raters), n_items)
    label = np.where(rng.random(item.size) < 0.7, truth[item], rng.integers(0, 5, item.size))
    seconds = rng.lognormal(mean=3.5, sigma=0.6, size=item.size).round(1)
    kept = rng.random(item.size) >= 0.05
    return item[kept], rater[kept], label[kept], seconds[kept]


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, float]:
    """(best wall time, median wall time, median CPU time of this process) after a warm-up.

    CPU time is the better guide when other processes compete for the cores.
    """
    fn()
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return min(wall), statistics.median(wall), statistics.median(cpu)


PAGE_PROJECT = "perf agreement"
PAGE_LABELS = ["wrong", "weak", "partial", "good", "correct"]


def page_setup(args: argparse.Namespace) -> dict:
    import random

    from django.utils import timezone

    from annotation.judgment_tasks.models import Assignment, Judgment, JudgmentTask
    from benchmark.models import Item

    project, reviewer, people = atp_project_with_people(PAGE_PROJECT, args.annotators)
    task = JudgmentTask.objects.create(
        project=project, name="Grade", question="How good?", scheme="nominal", overlap=5,
        consensus="majority",
        labels=[{"value": v, "label": v.title(), "accept": v == "correct"} for v in PAGE_LABELS],
    )  # fmt: skip
    items = Item.objects.bulk_create(
        Item(project=project, external_id=f"q{i:05d}", position=i) for i in range(args.items)
    )
    rng = random.Random(14)
    now = timezone.now()
    assignments, judgments = [], []
    for item in items:
        truth = rng.choice(PAGE_LABELS)
        for user in rng.sample(people, min(5, len(people))):
            value = truth if rng.random() < 0.7 else rng.choice(PAGE_LABELS)
            a = Assignment(
                task=task, item=item, user=user, status="submitted", leased_at=now,
                expires_at=now, submitted_at=now,
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
                )  # fmt: skip
            )
    Assignment.objects.bulk_create(assignments, batch_size=2000)
    for j in judgments:
        j.assignment_id = j.assignment.pk
    Judgment.objects.bulk_create(judgments, batch_size=2000)
    return {"annotators": len(people), "judgments": len(judgments), "task": task.pk}


def page_time(args: argparse.Namespace) -> dict:
    from django.conf import settings
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import NoReverseMatch, reverse

    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    from annotation.judgment_tasks.models import JudgmentTask
    from benchmark.typing import User

    client = Client()
    client.force_login(User.objects.get(username="perf-reviewer"))
    task = JudgmentTask.objects.get(project__name=PAGE_PROJECT)
    url = reverse("review:agreement", args=[task.pk])
    assert client.get(url).status_code == 200  # templates compiled, modules imported

    def changed(n: int) -> None:
        """An outcome written (as when a judgment settles one): the figures' inputs change."""
        from annotation.judgment_tasks.models import Judgment, Outcome

        first = Judgment.objects.filter(task=task).order_by("pk").first()
        Outcome.objects.update_or_create(
            task=task, item_id=first.item_id, unit="", defaults={"reason": f"bench {n}"}
        )

    def timed(target: str, *, computed: bool, changing: bool = False) -> dict:
        times, cpus, queries = [], [], set()
        for n in range(args.requests):
            if computed:
                cache.clear()
            if changing:
                changed(n)
            with CaptureQueriesContext(connection) as captured:
                start, cpu = time.perf_counter(), time.process_time()
                response = client.get(target)
                times.append((time.perf_counter() - start) * 1000)
                cpus.append((time.process_time() - cpu) * 1000)
            assert response.status_code == 200, response.status_code
            queries.add(len(captured.captured_queries))
        return {
            "median_ms": round(statistics.median(times), 1),
            "cpu_ms": round(statistics.median(cpus), 1),
            "queries": sorted(queries),
            "kb": round(len(response.content) / 1024, 1),
        }

    figures = {"page, cached": timed(url, computed=False)}
    figures["page, computed"] = timed(url, computed=True)
    # Inputs changing before every request, as while annotators judge: recomputed each time
    # before issue 14's second round; now the latest figures while at most STALE_SECONDS old.
    figures["page, judgments coming in"] = timed(url, computed=False, changing=True)
    try:
        pair = reverse("review:agreement_pair", args=[task.pk])
    except NoReverseMatch:  # before issue 14: the pictures are all on the page
        pass
    else:
        pair += "?a=annotator000&b=annotator001"
        client.get(pair)
        figures["one pair's confusion"] = timed(pair, computed=False)
    return {"figures": figures}


def page_main(args: argparse.Namespace) -> None:
    argv = [
        *("--annotators", str(args.annotators), "--items", str(args.items)),
        *("--requests", str(args.requests), "--page"),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        if args.database_url:
            fresh_postgres(args.database_url)
            db, where = args.database_url, "postgresql"
        else:
            db, where = f"sqlite:///{Path(tmp) / 'agreement.sqlite3'}", "sqlite"
        env = {
            "DATABASE_URL": db,
            "MEDIA_ROOT": str(Path(tmp) / "media"),
            "DEBUG": "false",
            "SECRET_KEY": "perf-" + "x9" * 30,
            "ALLOWED_HOSTS": "localhost,testserver",
            "SECURE_SSL_REDIRECT": "false",
        }
        made = run_phase(__file__, "setup", argv, env)
        print(
            f"{where}: agreement page, {made['annotators']} annotators, {made['judgments']} "
            f"judgments; median of {args.requests} requests; {os.cpu_count()} CPUs"
        )
        p = run_phase(__file__, "page", argv, env)
        for label, f in p["figures"].items():
            print(
                f"  {label:26s} median {f['median_ms']:7.1f} ms (CPU {f['cpu_ms']:7.1f} ms); "
                f"queries {f['queries']}; {f['kb']:,} kB HTML"
            )
        print(f"  load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)")


def page_child(args: argparse.Namespace) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmark.settings"
    import django

    django.setup()
    phase = {"setup": page_setup, "page": page_time}[args.child]
    print(json.dumps(phase(args)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--page", action="store_true", help="time the agreement page")
    parser.add_argument("--annotators", type=int, default=50, help="with --page")
    parser.add_argument("--requests", type=int, default=9, help="with --page")
    parser.add_argument("--database-url", default="", help="with --page (default: SQLite)")
    parser.add_argument("--child", choices=["setup", "page"], help=argparse.SUPPRESS)
    parser.add_argument("--items", type=int, default=None)
    parser.add_argument("--raters", type=int, default=3)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--levels", nargs="+", default=list(SCALES), choices=list(SCALES))
    args = parser.parse_args()
    if args.page:
        args.items = args.items or 150
        (page_child if args.child else page_main)(args)
        return
    args.items = args.items or 10_000

    item, rater, label, seconds = synthetic(args.items, args.raters, args.seed)
    item_ids = [f"item-{i:06d}" for i in range(args.items)]
    rater_ids = [f"rater-{r}" for r in range(args.raters)]
    print(
        f"{args.items:,} items x {args.raters} raters: {item.size:,} judgments; "
        f"bootstrap {args.bootstrap} resamples; best / median of {args.repeat} runs; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
        f"importing the module took {IMPORT_SECONDS:.2f} s"
    )
    cold = True
    for level in args.levels:
        scale = SCALES[level]
        rows = [
            (item_ids[i], rater_ids[r], scale[k])
            for i, r, k in zip(item.tolist(), rater.tolist(), label.tolist(), strict=True)
        ]
        first = rater == 0  # the "final" outcome: rater 0's label
        final = {
            item_ids[i]: scale[k]
            for i, k in zip(item[first].tolist(), label[first].tolist(), strict=True)
        }
        times = {
            (item_ids[i], rater_ids[r]): s
            for i, r, s in zip(item.tolist(), rater.tolist(), seconds.tolist(), strict=True)
        }
        if cold:  # the first report also imports statsmodels (pandas, scipy.stats)
            start = time.perf_counter()
            ag.agreement_report(rows, level, final=final, times=times, bootstrap=args.bootstrap)
            print(f"first report in this process (cold): {time.perf_counter() - start:.2f} s")
            cold = False
        bench_level(level, rows, final, times, args.bootstrap, args.repeat)


def bench_level(
    level: ag.Level,
    rows: list[tuple[str, str, Any]],
    final: dict[str, Any],
    times: dict[tuple[str, str], float],
    bootstrap: int,
    repeat: int,
) -> None:
    j = ag.encode(rows, level)  # the parts reuse one encoding, as the report does
    parts: list[tuple[str, Callable[[], Any]]] = [
        (
            "full report",
            lambda: ag.agreement_report(rows, level, final=final, times=times, bootstrap=bootstrap),
        ),
        ("  encode rows", lambda: ag.encode(rows, level)),
        (
            "  percent + mean pairwise agreement",
            lambda: (ag.percent_agreement(j), ag.mean_pairwise_agreement(j)),
        ),
        ("  pairs: Cohen kappa x3 + confusion", lambda: ag.pairwise_agreement(j)),
        ("  Fleiss kappa (statsmodels)", lambda: ag.fleiss_kappa(j)),
        ("  alpha (krippendorff)", lambda: ag.krippendorff_alpha(j)),
        ("  resample kernel (per-item sums)", lambda: ag.ResampleKernel(j)),
        (
            f"  bootstrap x{bootstrap}, 4 statistics",
            lambda: ag.bootstrap_intervals(j, n_resamples=bootstrap),
        ),
        ("  per rater (final, times)", lambda: ag.per_rater_summary(j, final, times)),
    ]
    print(f"\n{level:<42} {'wall best':>11} {'wall median':>13} {'CPU median':>12}")
    for name, fn in parts:
        best, med, cpu = timed(fn, repeat)
        print(f"  {name:<40} {best * 1000:8.1f} ms {med * 1000:10.1f} ms {cpu * 1000:9.1f} ms")

    report = ag.agreement_report(rows, level, final=final, times=times, bootstrap=bootstrap)
    alpha, fleiss = report["krippendorff_alpha"], report["fleiss_kappa"]
    print(
        f"  -> alpha {alpha['value']:.4f} [{alpha['ci']['low']:.4f}, {alpha['ci']['high']:.4f}], "
        f"Fleiss {fleiss['value']:.4f} on {fleiss['n_items']:,} items, "
        f"percent agreement {report['percent_agreement']['value']:.4f}"
    )


if __name__ == "__main__":
    main()
