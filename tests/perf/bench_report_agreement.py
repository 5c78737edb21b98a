"""Speed of the figures of judges whose reports people rate (issue 26,
``benchmark.metrics.report_agreement``): the share of reports rated right (the leaderboard's
trust figure) and the held-back comparison of verdicts (Cohen's kappa by scikit-learn), on
synthetic reports rated 0-2 by 3 people.

    python tests/perf/bench_report_agreement.py
    python tests/perf/bench_report_agreement.py --units 20000 --repeat 5

Seeded: each report's verdict is one of the five Chief Judge tiers; people rate it 2 with
probability 0.8; the old version gives people's verdict with probability 0.7, the new one with
0.8. Prints the median wall and CPU time of ``--repeat`` runs after one warm-up, and the
figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

TIERS = ("Excellent", "Good but Flawed", "Mediocre", "Poor", "Fatal")


def data(units: int, seed: int = 0) -> tuple[dict, dict, dict, dict]:
    rng = random.Random(seed)
    ratings, reference, before, after = {}, {}, {}, {}
    for n in range(units):
        unit = f"response:{n + 1}:chief"
        truth = rng.choice(TIERS)
        ratings[unit] = [2 if rng.random() < 0.8 else rng.choice((0, 1)) for _ in range(3)]
        reference[unit] = truth
        before[unit] = truth if rng.random() < 0.7 else rng.choice(TIERS)
        after[unit] = truth if rng.random() < 0.8 else rng.choice(TIERS)
    return ratings, reference, before, after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from benchmark.metrics.report_agreement import rated_right_share, verdict_comparison

    ratings, reference, before, after = data(args.units)

    def timed(fn: Any) -> tuple[float, float, Any]:
        wall, cpu = time.perf_counter(), time.process_time()
        out = fn()
        return time.perf_counter() - wall, time.process_time() - cpu, out

    share = lambda: rated_right_share(ratings, 80.0)  # noqa: E731
    compare = lambda: verdict_comparison(reference, before, after)  # noqa: E731
    for name, fn in (("rated_right_share", share), ("verdict_comparison", compare)):
        timed(fn)  # warm-up
        runs = [timed(fn) for _ in range(args.repeat)]
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        print(f"{name}: {args.units} reports x 3 people, median wall {wall:.3f} s, cpu {cpu:.3f} s")
    found, report = share(), compare()
    print(
        f"rated right {found['value']:.3f} [{found['low']:.3f}, {found['high']:.3f}]; "
        f"same verdict before {report['before']['share']['value']:.3f} "
        f"(kappa {report['before']['kappa']:.3f}), after {report['after']['share']['value']:.3f} "
        f"(kappa {report['after']['kappa']:.3f})"
    )


if __name__ == "__main__":
    main()
