"""Speed of the held-back comparison of a judge's two versions (issue 26,
``benchmark.metrics.judge_rater.held_back_comparison``) and of listing correction cases
(``disagreements``), on synthetic yes/no units rated by 3 people (bootstrap included).

    python tests/perf/bench_held_back.py
    python tests/perf/bench_held_back.py --units 20000 --bootstrap 2000 --repeat 5

Seeded: each unit has a latent answer, each person gives it with probability 0.85, the old
version with 0.7 and the new one with 0.8; ``--examples`` units are examples (left out).
Prints the median wall and CPU time of ``--repeat`` runs after one warm-up, and the figures;
asserts nothing about time.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any


def data(units: int, examples: int, seed: int = 0) -> tuple[list[Any], dict, dict, set]:
    rng = random.Random(seed)
    rows, before, after = [], {}, {}
    for n in range(units):
        truth = rng.random() < 0.4
        unit = f"u{n}"
        for person in ("p1", "p2", "p3"):
            rows.append((unit, person, int(truth if rng.random() < 0.85 else not truth)))
        before[unit] = int(truth if rng.random() < 0.7 else not truth)
        after[unit] = int(truth if rng.random() < 0.8 else not truth)
    return rows, before, after, {f"u{n}" for n in range(examples)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=5000)
    parser.add_argument("--examples", type=int, default=20)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from benchmark.metrics.judge_rater import disagreements, held_back_comparison

    rows, before, after, examples = data(args.units, args.examples)

    def timed(fn: Any) -> tuple[float, float, Any]:
        wall, cpu = time.perf_counter(), time.process_time()
        out = fn()
        return time.perf_counter() - wall, time.process_time() - cpu, out

    compare = lambda: held_back_comparison(  # noqa: E731
        rows, before, after, "nominal", [0, 1], examples=examples, bootstrap=args.bootstrap
    )
    cases = lambda: disagreements(rows, before, "nominal", [0, 1])  # noqa: E731
    for name, fn in (("held_back_comparison", compare), ("disagreements", cases)):
        timed(fn)  # warm-up
        runs = [timed(fn) for _ in range(args.repeat)]
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        print(f"{name}: {args.units} units x 3 people, median wall {wall:.3f} s, cpu {cpu:.3f} s")
    report = compare()
    print(
        f"compared {report['n_units']} units ({report['n_examples_left_out']} examples left out); "
        f"kappa before {report['before']['kappa']['value']:.3f}, "
        f"after {report['after']['kappa']['value']:.3f}, "
        f"difference {report['difference']['kappa']:+.3f}"
    )


if __name__ == "__main__":
    main()
