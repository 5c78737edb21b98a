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

``--queue``: the same annotators also judge through the real queue
(``assignment_next_for_user`` and ``judgment_submit`` on a fresh SQLite database, a task of
``--queue-items`` items with "Serve items by doubt" on for the doubt policies; for the gate, the
annotators below ``--reliable`` get a cached reliability of their skill, as gold accuracy would
give it). At each step the item the queue served is compared with the one the policy above picks
from the same state (votes weighted by the cached reliabilities, as the app weighs them), and the
judgments each policy needed through the queue are printed beside the simulation's.
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


def _queue_setup(tmp: str) -> None:
    import os

    os.environ["DATABASE_URL"] = f"sqlite:///{tmp}/routing.sqlite3"
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmark.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def queue_run(
    *,
    items: int,
    labels: int,
    overlap: int,
    skills: list[float],
    policy: str,
    reliable: float,
    seed: int,
    run: int,
) -> tuple[list[float], int, int]:
    """Judge a fresh task through the real queue; (the agreement curve, the steps whose served
    item is the one the policy picks, the steps)."""
    from annotation.judgment_tasks.doubt.models import AnnotatorReliability
    from annotation.judgment_tasks.models import JudgmentTask
    from annotation.judgment_tasks.services import assignment_next_for_user, judgment_submit
    from benchmark.models import Item, Membership, Project, Toolset
    from benchmark.typing import User

    rng = random.Random(seed)
    toolset, _ = Toolset.objects.get_or_create(name="mms-routing")
    project = Project.objects.create(
        name=f"routing {run}", kind="plan", data_format="mms", toolset=toolset
    )
    objects = Item.objects.bulk_create(
        Item(project=project, external_id=f"r{run}-{n}", position=n) for n in range(items)
    )
    ids = [item.pk for item in objects]
    index = {pk: n for n, pk in enumerate(ids)}
    values = list(range(labels))
    task = JudgmentTask.objects.create(
        project=project, name="routing", question="?",
        scheme="binary" if labels == 2 else "nominal",
        labels=[] if labels == 2 else [{"value": v, "label": str(v)} for v in values],
        overlap=overlap, consensus="majority", updates_item_status=False,
        serve_by_doubt=policy != "id order", reliability_threshold=reliable,
    )  # fmt: skip
    people = [User.objects.create_user(f"sim{run}-{n}") for n in range(len(skills))]
    Membership.objects.bulk_create(
        Membership(project=project, user=u, role="annotator") for u in people
    )
    weight = [1.0] * len(skills)
    if policy == "doubt + reliability":
        for n, skill in enumerate(skills):
            if skill < reliable:
                AnnotatorReliability.objects.create(
                    task=task, user=people[n], score=skill, source="gold", judgments=20
                )
                weight[n] = skill
    if labels == 2:
        values = [1, 0]
    truth = [rng.randrange(labels) for _ in range(items)]
    votes: list[Counter[int]] = [Counter() for _ in range(items)]
    weighted: list[dict[int, float]] = [{} for _ in range(items)]
    judged_by: list[set[int]] = [set() for _ in range(items)]
    positions = {i: i for i in range(items)}
    doubts = {i: doubt(Evidence(votes={}, n_labels=labels)) for i in range(items)}
    right, curve, turn, idle, same, steps = 0, [0.0], 0, 0, 0, 0
    while idle < len(skills):
        annotator = turn % len(skills)
        turn += 1
        lease = assignment_next_for_user(task=task, user=people[annotator])
        if lease is None:
            idle += 1
            continue
        idle = 0
        item = index[lease.item_id]
        open_items = [
            i for i in range(items) if len(judged_by[i]) < overlap and annotator not in judged_by[i]
        ]
        if policy == "id order":
            expected = open_items[0]
        else:
            gate = policy == "doubt + reliability" and skills[annotator] < reliable
            order = serving_order({i: doubts[i] for i in open_items}, positions, reliable=not gate)
            expected = int(order[0])  # type: ignore[call-overload]
        steps += 1
        same += item == expected
        label = truth[item]
        if rng.random() >= skills[annotator]:
            label = rng.choice([x for x in range(labels) if x != truth[item]])
        judgment_submit(task=task, item=lease.item, user=people[annotator], value=values[label])
        before = _majority_right(votes[item], truth[item])
        votes[item][label] += 1
        weighted[item][label] = weighted[item].get(label, 0.0) + weight[annotator]
        judged_by[item].add(annotator)
        right += _majority_right(votes[item], truth[item]) - before
        doubts[item] = doubt(Evidence(votes=weighted[item], n_labels=labels))
        curve.append(right / items)
    return curve, same, steps


def queue_main(args: argparse.Namespace, skills: list[float], targets: list[float]) -> dict:
    import tempfile

    figures: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        _queue_setup(tmp)
        budget = args.queue_items * args.overlap
        print(
            f"through the real queue (SQLite): {args.queue_items} items, {args.queue_seeds} "
            f"seeds; budget {budget} judgments"
        )
        run = 0
        for policy in ("id order", "doubt", "doubt + reliability"):
            sim_curves, queue_curves, same, steps = [], [], 0, 0
            for seed in range(args.queue_seeds):
                run += 1
                curve, agree, n = queue_run(
                    items=args.queue_items, labels=args.labels, overlap=args.overlap,
                    skills=skills, policy=policy, reliable=args.reliable, seed=seed, run=run,
                )  # fmt: skip
                queue_curves.append(curve)
                same, steps = same + agree, steps + n
                sim_curves.append(
                    simulate(
                        items=args.queue_items, labels=args.labels, overlap=args.overlap,
                        skills=skills, policy=policy, reliable=args.reliable, seed=seed,
                    )
                )  # fmt: skip
            row: dict[str, object] = {"served as the policy picks": f"{same}/{steps}"}
            for target in targets:
                for name, curves in (("queue", queue_curves), ("simulation", sim_curves)):
                    counts = [needed(c, target) for c in curves]
                    row[f"{name}: judgments to {target:.0%}"] = statistics.median(
                        n if n is not None else budget for n in counts
                    )
            figures[policy] = row
            cells = "  ".join(
                f"{target:.0%}: queue {row[f'queue: judgments to {target:.0%}']:>6} / "
                f"sim {row[f'simulation: judgments to {target:.0%}']:>6}"
                for target in targets
            )
            print(f"{policy:>22}  served as picked {same}/{steps}  {cells}")
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--labels", type=int, default=2)
    parser.add_argument("--overlap", type=int, default=3)
    parser.add_argument("--skills", default="0.95,0.9,0.85,0.8,0.7,0.6")
    parser.add_argument("--reliable", type=float, default=0.75)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--targets", default="0.8,0.85,0.9")
    parser.add_argument(
        "--queue", action="store_true", help="also judge through the real queue (SQLite)"
    )
    parser.add_argument("--queue-items", type=int, default=60)
    parser.add_argument("--queue-seeds", type=int, default=3)
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
    queue = queue_main(args, skills, targets) if args.queue else None
    print(json.dumps({"routing": figures, **({"queue": queue} if queue else {})}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
