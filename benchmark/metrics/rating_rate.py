"""Agreement rates on a rating scale (pure Python + numpy): how far people agree with a judge.

ATP-Bench §6 asks annotators to rate their agreement with each agent's report on a 0-2 scale
(0 disagree, 1 partly, 2 agree) and reports one *agreement rate* per agent: the mean rating
divided by the top of the scale, as a percentage (84.00 / 85.88 / 88.00 % for the Precision
Inspector, Recall Inspector and Chief Judge). Here:

* ``rate`` of a group (an agent) = 100 x (sum of its ratings) / (top x number of ratings):
  every rating counts once, so a unit rated by three people weighs three times one rated once;
* its 95 % interval is a percentile bootstrap that resamples the group's *units* (with all
  their ratings) with replacement, with a seeded ``numpy.random.Generator``, as
  :func:`benchmark.metrics.agreement.bootstrap_intervals` resamples items;
* per rater, the same rate over that rater's ratings of the group (and over all groups).

Input rows are ``(unit, rater, group, rating)``; a rating outside 0..top raises ValueError.
Ratings 2, 2, 1, 0 give 100 x 5 / 8 = 62.5 %.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from numbers import Real
from typing import Any

__all__ = ["rating_rates"]

Row = tuple[Hashable, Hashable, Hashable, Any]
# Bootstrap weights are built in chunks of resamples holding about this many cells (8 MB).
_CHUNK_CELLS = 1_000_000


def _check(rating: Any, top: int) -> float:
    if isinstance(rating, bool) or not isinstance(rating, Real):
        raise ValueError(f"rating {rating!r} is not on the scale 0..{top}")
    value = float(rating)
    if not 0 <= value <= top:
        raise ValueError(f"rating {rating!r} is not on the scale 0..{top}")
    return value


def _rate(total: float, count: int, top: int) -> float | None:
    return 100.0 * total / (top * count) if count else None


def rating_rates(
    rows: Iterable[Row],
    *,
    top: int = 2,
    groups: Sequence[Hashable] | None = None,
    n_resamples: int = 1000,
    seed: int | None = 0,
    confidence: float | None = None,
) -> dict[str, Any]:
    """Agreement rate per group with a bootstrap interval, and per rater.

    ``groups`` fixes the order of the groups (groups without ratings are listed with no rate);
    without it the groups are sorted. Answers ``{"groups": [{"group", "rate", "ci",
    "n_units", "n_ratings", "raters": {rater: {"rate", "n"}}}], "raters": [{"rater", "rate",
    "n"}], "top", "bootstrap": {...}}``, JSON-friendly.
    """
    import numpy as np

    from benchmark.metrics import agreement

    confidence = agreement.CONFIDENCE if confidence is None else confidence
    if top < 1:
        raise ValueError("the top of the scale must be at least 1")
    per_unit: dict[Hashable, dict[Hashable, list[float]]] = defaultdict(dict)
    per_rater: dict[Hashable, dict[Hashable, list[float]]] = defaultdict(lambda: defaultdict(list))
    for unit, rater, group, rating in rows:
        value = _check(rating, top)
        per_unit[group].setdefault(unit, []).append(value)
        per_rater[group][rater].append(value)
    order = list(groups) if groups is not None else sorted(per_unit, key=str)
    order += [g for g in sorted(per_unit, key=str) if g not in order]
    rng = np.random.default_rng(seed)
    out = []
    overall: dict[Hashable, list[float]] = defaultdict(list)
    for group in order:
        units = per_unit.get(group, {})
        sums = np.array([sum(v) for v in units.values()], dtype=np.float64)
        counts = np.array([len(v) for v in units.values()], dtype=np.float64)
        n_ratings = int(counts.sum())
        ci = None
        if len(units) and n_resamples > 0:
            m = len(units)
            samples = np.empty(n_resamples)
            chunk = max(1, min(n_resamples, _CHUNK_CELLS // m))
            for start in range(0, n_resamples, chunk):
                b = min(chunk, n_resamples - start)
                # Row k of `weights`: how often each unit is drawn in resample k (m draws).
                draws = rng.integers(0, m, size=(b, m), dtype=np.int64)
                draws += (np.arange(b, dtype=np.int64) * m)[:, None]
                weights = np.bincount(draws.ravel(), minlength=b * m).reshape(b, m)
                samples[start : start + b] = 100.0 * (weights @ sums) / (top * (weights @ counts))
            ci = agreement._percentile_interval(samples, confidence)
            ci["unit"] = "units of the group, each with all its ratings, drawn with replacement"
        raters = {}
        for rater in sorted(per_rater.get(group, {}), key=str):
            ratings = per_rater[group][rater]
            overall[rater] += ratings
            raters[rater] = {"rate": _rate(sum(ratings), len(ratings), top), "n": len(ratings)}
        out.append(
            {
                "group": group,
                "rate": _rate(float(sums.sum()), n_ratings, top),
                "ci": ci,
                "n_units": len(units),
                "n_ratings": n_ratings,
                "raters": raters,
            }
        )
    return {
        "top": top,
        "groups": out,
        "raters": [
            {"rater": r, "rate": _rate(sum(v), len(v), top), "n": len(v)}
            for r, v in sorted(overall.items(), key=lambda kv: str(kv[0]))
        ],
        "bootstrap": {
            "n_resamples": max(n_resamples, 0),
            "seed": seed,
            "confidence": confidence,
            "method": "percentile",
        },
    }
