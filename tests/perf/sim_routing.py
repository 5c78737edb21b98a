"""Routing by doubt against the id order: how many judgments each needs before the task's labels
reach a target agreement with the truth (issue 26). A simulation with synthetic annotators of
known skill; pure Python, no database.

    .venv/bin/python tests/perf/sim_routing.py
    .venv/bin/python tests/perf/sim_routing.py --items 1000 --labels 3 --overlap 3 --seeds 50 --targets 0.8,0.9,0.95

A task of ``--items`` items, each with a true label drawn uniformly from ``--labels`` labels, is
judged by annotators of the skills ``--skills`` (each says the truth with that probability, else
a uniformly random other label). Annotators ask for work in turn (round robin); each item takes
at most ``--overlap`` judgments and never two from one person, as the queue serves them. A
policy picks the item:

* ``id order``: the lowest position first (today's queue);
* ``doubt``: ``benchmark.metrics.doubt.serving_order`` on each item's doubt from its votes so far;
* ``doubt + reliability``: the same, and annotators below ``--reliable`` skill (as gold accuracy
  would estimate it) are served the items least in doubt first.

After every judgment the task's labels are the majority of each item's judgments (an unjudged or
tied item counts as wrong), and their agreement with the truth is the share of items labelled
right. Prints, per policy, the median over ``--seeds`` runs of the judgments needed to reach each
target (``-`` when a run never reaches it, counted as the full budget) and the final agreement
when every item has its ``--overlap`` judgments; one JSON line at the end. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmark.metrics.doubt import Evidence, doubt, serving_order  # noqa: E402

Policy = Callable[[int, list[Counter[int]], list[set[int]], float], int | None]


def _majority_right(votes: Counter[int], truth: int) -> bool:
    if not votes:
        return False
    ranked = votes.most_common(2)
    if len(ranked) == 2 and ranked[0][1] == ranked[1][1]:
        return False
    return ranked[0][0] == truth


def simulate(
    *,
    items: int,
    labels: int,
    overlap: int,
    skills: list[float],
    policy: str,
    reliable: float,
    seed: int,
) -> list[float]:
    """The agreement with the truth after each judgment (index 0: before any)."""
    rng = random.Random(seed)
    truth = [rng.randrange(labels) for _ in range(items)]
    votes: list[Counter[int]] = [Counter() for _ in range(items)]
    judged_by: list[set[int]] = [set() for _ in range(items)]
    positions = {i: i for i in range(items)}
    doubts = {i: doubt(Evidence(votes={}, n_labels=labels)) for i in range(items)}
    right = 0
    curve = [0.0]
    budget = items * overlap
    turn = 0
    idle = 0
    while len(curve) <= budget and idle < len(skills):
        annotator = turn % len(skills)
        turn += 1
        open_items = [
            i for i in range(items) if len(judged_by[i]) < overlap and annotator not in judged_by[i]
        ]
        if not open_items:
            idle += 1
            continue
        idle = 0
        if policy == "id order":
            item = open_items[0]
        else:
            gate = policy == "doubt + reliability" and skills[annotator] < reliable
            order = serving_order({i: doubts[i] for i in open_items}, positions, reliable=not gate)
            item = int(order[0])  # type: ignore[call-overload]
        label = truth[item]
        if rng.random() >= skills[annotator]:
            label = rng.choice([x for x in range(labels) if x != truth[item]])
        before = _majority_right(votes[item], truth[item])
        votes[item][label] += 1
        judged_by[item].add(annotator)
        right += _majority_right(votes[item], truth[item]) - before
        doubts[item] = doubt(Evidence(votes=votes[item], n_labels=labels))
        curve.append(right / items)
    return curve


def needed(curve: list[float], target: float) -> int | None:
    return next((n for n, agreement in enumerate(curve) if agreement >= target), None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--labels", type=int, default=2)
    parser.add_argument("--overlap", type=int, default=3)
    parser.add_argument("--skills", default="0.95,0.9,0.85,0.8,0.7,0.6")
    parser.add_argument("--reliable", type=float, default=0.75)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--targets", default="0.8,0.85,0.9")
    args = parser.parse_args(argv)
    skills = [float(s) for s in args.skills.split(",")]
    targets = [float(t) for t in args.targets.split(",")]
    budget = args.items * args.overlap
    print(
        f"{args.items} items, {args.labels} labels, overlap {args.overlap}, annotators of skill "
        f"{', '.join(f'{s:.2f}' for s in skills)} (reliable from {args.reliable}); "
        f"{args.seeds} seeds; budget {budget} judgments"
    )
    figures: dict[str, dict[str, object]] = {}
    for policy in ("id order", "doubt", "doubt + reliability"):
        curves = [
            simulate(
                items=args.items,
                labels=args.labels,
                overlap=args.overlap,
                skills=skills,
                policy=policy,
                reliable=args.reliable,
                seed=seed,
            )
            for seed in range(args.seeds)
        ]
        row: dict[str, object] = {}
        for target in targets:
            counts = [needed(c, target) for c in curves]
            reached = [n if n is not None else budget for n in counts]
            row[f"judgments to {target:.0%}"] = statistics.median(reached)
            row[f"runs reaching {target:.0%}"] = sum(n is not None for n in counts)
        row["final agreement"] = round(statistics.median(c[-1] for c in curves), 4)
        figures[policy] = row
        cells = "  ".join(
            f"{target:.0%}: {row[f'judgments to {target:.0%}']:>7} "
            f"({row[f'runs reaching {target:.0%}']}/{args.seeds})"
            for target in targets
        )
        print(f"{policy:>22}  {cells}  final {row['final agreement']:.3f}")
    print(json.dumps({"routing": figures}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
