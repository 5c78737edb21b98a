"""Speed of the S and V judges' trust on the leaderboard (issue 26,
``review.runs.selectors.check_judges_trust``): computed (cache cleared) and read from the cache,
on a fresh PostgreSQL database with ``--runs`` runs whose search checkpoint the S judge
decided, each answered by two reviewers.

    python tests/perf/bench_check_trust.py
    python tests/perf/bench_check_trust.py --runs 5000 --repeat 5 \\
        --database-url postgres://postgres@127.0.0.1:5432/bw_check_trust

Prints the median wall and CPU time of ``--repeat`` runs of each phase and the figure; asserts
nothing about time.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def build(runs: int) -> Any:
    from django.contrib.auth import get_user_model

    from review.runs.models import AgentRun, RunSet, SearchVerdict
    from tests.factories import ItemFactory, ProjectFactory

    rng = random.Random(0)
    project = ProjectFactory(
        name="trust bench", kind="trajectory", data_format="agentic-mme", tag_syntax=""
    )
    users = [get_user_model().objects.create(username=f"rev{n}") for n in (1, 2)]
    item = ItemFactory(project=project, external_id="q1", query="Which district?")
    run_set = RunSet.objects.create(project=project, name="model A")
    rows = []
    truths = []
    for n in range(runs):
        truth = rng.random() < 0.5
        judge = truth if rng.random() < 0.8 else not truth
        truths.append(truth)
        cp = {
            "id": "S1",
            "kind": "search",
            "method": "judge",
            "passed": judge,
            "detail": {"queries": [f"q{n}"], "decided_by": "judge"},
        }
        rows.append(
            AgentRun(
                run_set=run_set,
                item=item,
                folder=f"r{n}",
                position=n,
                score={"checkpoints": [cp], "judge_model": "judge-m"},
            )
        )
    made = AgentRun.objects.bulk_create(rows)
    verdicts = [
        SearchVerdict(
            run=run,
            checkpoint_id="S1",
            reviewer=user,
            passed=truth if rng.random() < 0.9 else not truth,
        )
        for run, truth in zip(made, truths, strict=True)
        for user in users
    ]
    SearchVerdict.objects.bulk_create(verdicts)
    return project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--database-url", default="postgres://postgres@127.0.0.1:5432/bw_check_trust"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.perf._support import fresh_postgres

    fresh_postgres(args.database_url)
    os.environ["DATABASE_URL"] = args.database_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmark.settings"
    import django

    django.setup()
    from django.core.cache import cache
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    project = build(args.runs)
    from review.runs.selectors import CHECK_JUDGES, check_judges_trust

    def once(clear: bool) -> tuple[float, float, Any]:
        if clear:
            cache.clear()
        wall, cpu = time.perf_counter(), time.process_time()
        out = check_judges_trust(judges=CHECK_JUDGES, project=project, threshold=0.6)
        return time.perf_counter() - wall, time.process_time() - cpu, out

    once(True)  # warm-up: imports
    for name, clear in (("computed", True), ("cached", False)):
        runs = [once(clear) for _ in range(args.repeat)]
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        print(f"{name}: wall {wall:.3f} s, CPU {cpu:.3f} s (median of {args.repeat})")
    trust = runs[-1][2]["s-judge"]
    print(
        f"{args.runs} runs, S judge kappa {trust['kappa']:.3f} "
        f"[{trust['low']:.3f}, {trust['high']:.3f}] on {trust['n_units']} checks"
    )
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
