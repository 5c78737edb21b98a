"""How much an item still needs a reliable label: its **doubt**, the order in which a task that
routes by doubt serves items, and which items an annotator of low reliability is kept away from
(issue 26, "Routing by doubt"). Pure Python.

An item's doubt is 0 (settled beyond question) to 1 (nothing known). From the people's
judgments: one minus the probability of the leading label, taken from an aggregated posterior
when there is one (Dawid-Skene, ``benchmark.metrics.aggregation``), else from the judgments'
weighted votes with add-one smoothing over the ``K`` labels of the scale, ``(top + 1) / (n + K)``
(so an item nobody has judged has probability ``1/K``, a split item about one half), scaled by
the largest possible value ``1 - 1/K`` to lie in 0..1. Other evidence raises it: a model judge
whose value differs from the people's leading label, and models under test that disagree with
the reference (the share of them). Signals combine as independent chances of a problem:
``1 - (1 - d) * (1 - s1) * (1 - s2) ...``, each signal weighted by ``SIGNAL_WEIGHT``.

Serving: items most in doubt first (ties: the lower position, as the id order serves them). An
annotator whose reliability is below the task's threshold (gold accuracy, or an aggregation's
estimate) is served the items least in doubt first, so the items that most need a reliable
label go to reliable people; every item still gets its judgments.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

__all__ = ["SIGNAL_WEIGHT", "Evidence", "doubt", "serving_order"]

#: How much each outside signal counts (0..1) when it fires fully.
SIGNAL_WEIGHT = 0.5


@dataclass(frozen=True)
class Evidence:
    """What is known about one item's label."""

    #: label -> weight of the judgments that gave it (1 per judgment, or the annotator's
    #: reliability when weighing people).
    votes: Mapping[Hashable, float]
    #: The number of labels on the task's scale (2 for yes/no).
    n_labels: int
    #: An aggregated posterior of the leading label, where an aggregation has run.
    posterior: float | None = None
    #: A model judge's value differs from the people's leading label.
    judge_disagrees: bool = False
    #: The share (0..1) of evaluated models whose answer disagrees with the reference.
    models_wrong: float = 0.0


def doubt(evidence: Evidence) -> float:
    """The item's doubt, 0..1 (see the module's docstring)."""
    k = max(2, int(evidence.n_labels))
    if evidence.posterior is not None:
        p = min(1.0, max(0.0, float(evidence.posterior)))
    else:
        weights = [max(0.0, float(w)) for w in evidence.votes.values()]
        p = (max(weights, default=0.0) + 1.0) / (sum(weights) + k)
    people = min(1.0, max(0.0, (1.0 - p) / (1.0 - 1.0 / k)))
    signals = [SIGNAL_WEIGHT * float(evidence.judge_disagrees)]
    signals.append(SIGNAL_WEIGHT * min(1.0, max(0.0, float(evidence.models_wrong))))
    certain = 1.0 - people
    for s in signals:
        certain *= 1.0 - s
    return 1.0 - certain


def serving_order(
    doubts: Mapping[Hashable, float],
    positions: Mapping[Hashable, int],
    *,
    reliable: bool = True,
) -> list[Hashable]:
    """The items in the order a task routing by doubt offers them: most doubt first for a
    reliable annotator, least doubt first for one below the task's threshold; ties by position
    (then by key)."""
    items: Iterable[Hashable] = doubts
    sign = -1.0 if reliable else 1.0
    return sorted(items, key=lambda i: (sign * doubts[i], positions.get(i, 0), str(i)))
