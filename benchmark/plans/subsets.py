"""Reproducible tool-balanced subsets (m&m's §3.2–3.3): drop plans until no tool makes up
more than a set share of all tool occurrences. Pure: no Django."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field


@dataclass
class BalancedSubset:
    ids: list[Hashable]
    before: dict[str, int]
    after: dict[str, int]
    cap: float
    met: bool
    removed: list[Hashable] = field(default_factory=list)

    @staticmethod
    def shares(counts: dict[str, int]) -> dict[str, float]:
        total = sum(counts.values())
        return {tool: n / total for tool, n in counts.items()} if total else {}


def balanced_subset(
    items: Sequence[tuple[Hashable, Sequence[str]]], *, cap: float, seed: int = 0
) -> BalancedSubset:
    """``items`` are (id, tools used by its plan, with repeats). While some tool's share of all
    tool occurrences exceeds ``cap`` (0 < cap <= 1), remove the item that holds the most
    occurrences of the most over-represented tool (ties broken by a seeded shuffle). Stops when
    every share is within the cap, or when one more removal would empty the subset."""
    if not 0 < cap <= 1:
        raise ValueError("the cap is a share between 0 and 1")
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)
    rank = {index: r for r, index in enumerate(order)}
    per_item = [Counter(tools) for _, tools in items]
    counts: Counter[str] = Counter()
    for c in per_item:
        counts.update(c)
    before = dict(sorted(counts.items()))
    alive = set(range(len(items)))
    removed: list[Hashable] = []
    total = sum(counts.values())
    while alive and total:
        tool, top = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
        if top / total <= cap + 1e-12 or len(alive) == 1:
            break
        victim = max(
            (i for i in alive if per_item[i][tool]),
            key=lambda i: (per_item[i][tool] / max(1, sum(per_item[i].values())), -rank[i]),
        )
        alive.discard(victim)
        removed.append(items[victim][0])
        counts.subtract(per_item[victim])
        counts = +counts
        total = sum(counts.values())
    after = dict(sorted(counts.items()))
    met = not total or max(counts.values()) / total <= cap + 1e-12
    return BalancedSubset(
        ids=[items[i][0] for i in sorted(alive)],
        before=before,
        after=after,
        cap=cap,
        met=met,
        removed=removed,
    )
