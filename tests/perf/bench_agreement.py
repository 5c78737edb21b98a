"""Speed of the agreement report on 10,000 items x 3 raters (bootstrap included).

    python tests/perf/bench_agreement.py
    python tests/perf/bench_agreement.py --items 50000 --raters 5 --bootstrap 2000 --repeat 3

Synthetic, seeded judgments: each item has a latent label on a 1-5 scale, each rater gives it
with probability 0.7 (else a random label) and skips about 5% of items. The same judgments are
reported at the nominal level (as text labels), ordinal (1-5) and interval (unequal values), with
final labels and per-judgment times. Prints the full report's time and its parts (best and median
of --repeat runs after one warm-up, and the median CPU time of this process, which is steadier
when other processes compete for the cores); asserts nothing about time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

_t0 = time.perf_counter()
import numpy as np  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--raters", type=int, default=3)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--levels", nargs="+", default=list(SCALES), choices=list(SCALES))
    args = parser.parse_args()

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
