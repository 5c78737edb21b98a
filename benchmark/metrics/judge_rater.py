"""A model judge as one more rater beside people (pure Python + numpy, no Django).

Where people and a judge rate the same units on the same categories (a rubric criterion of an
answer 0/1/2, a visual checkpoint of a run yes/no, a plan's validity 1/0), this compares the
judge with each person and with the people's majority, using the statistics of
``benchmark.metrics.agreement``:

* judge x each person, on the units both rated: n, percent agreement, Cohen's kappa
  (unweighted; linear and quadratic weighted as well when the level is not nominal) and the
  confusion matrix (rows: the judge, columns: the person);
* judge x the human majority: per unit the value most people gave it (a unit one person rated
  has that person's value); a unit whose top count is shared by two or more values is a tie,
  left out and counted (``n_ties``); the same figures on the units that have both a majority
  and a judge value;
* Krippendorff's alpha of the people alone and of the people with the judge as one more rater.

Input: ``human_rows`` are ``(unit, rater, value)`` as for ``agreement.encode``; ``judge`` maps a
unit to the judge's value, ``None`` (or NaN) where the judge gave none (a failed judgment), which
is counted in ``judge.n_missing`` and otherwise ignored. Values outside ``categories`` raise
``ValueError`` (the caller checks that the judge answers on the people's scale).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from benchmark.metrics.agreement import (
    Judgments,
    Level,
    Result,
    Row,
    encode,
    kappa_from_confusion,
    krippendorff_alpha,
)

__all__ = [
    "DEFAULT_TRUST_THRESHOLD",
    "JUDGE",
    "disagreements",
    "held_back_comparison",
    "judge_as_rater",
    "judge_calibration",
    "majority_per_unit",
]

REASON_NO_COMMON = "the judge and this rater have no unit in common"


class _JudgeRater:
    """The judge's rater id inside the encoded judgments: equal only to itself, so no person's
    name can collide with it."""

    def __repr__(self) -> str:
        return "judge"


JUDGE: Hashable = _JudgeRater()


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def majority_per_unit(j: Judgments) -> tuple[dict[Hashable, int], list[Hashable]]:
    """Per unit the category index most raters chose, and the units whose top count is shared
    by two or more categories (ties, left out of the first)."""
    majority: dict[Hashable, int] = {}
    ties: list[Hashable] = []
    for pos, unit in enumerate(j.items):
        counts = j.counts[pos]
        if counts.sum() == 0:
            continue
        top = counts.max()
        winners = np.flatnonzero(counts == top)
        if len(winners) > 1:
            ties.append(unit)
        else:
            majority[unit] = int(winners[0])
    return majority, ties


def _compare(a: Sequence[int], b: Sequence[int], n_cats: int, weighted: bool) -> Result:
    """n, percent agreement, kappas and the confusion matrix (rows: ``a``) of paired codes."""
    n = len(a)
    flat = np.asarray(a, dtype=np.int64) * n_cats + np.asarray(b, dtype=np.int64)
    cm = np.bincount(flat, minlength=n_cats * n_cats).reshape(n_cats, n_cats)
    out: Result = {
        "n_units": n,
        "percent_agreement": float(np.trace(cm) / n) if n else None,
    }
    if n:
        value, reason = kappa_from_confusion(cm)
        out["cohen_kappa"] = {"value": value, "reason": reason}
    else:
        out["cohen_kappa"] = {"value": None, "reason": REASON_NO_COMMON}
    if weighted:
        for weights in ("linear", "quadratic"):
            if n:
                value, reason = kappa_from_confusion(cm, weights)
            else:
                value, reason = None, REASON_NO_COMMON
            out[f"cohen_kappa_{weights}"] = {"value": value, "reason": reason}
    out["matrix"] = cm.tolist()
    return out


def judge_as_rater(
    human_rows: Iterable[Row],
    judge: Mapping[Any, Any],
    level: Level = "nominal",
    categories: Sequence[Any] | None = None,
) -> Result:
    """The judge against each person and the people's majority, and alpha with and without
    the judge (see the module docs). JSON-serialisable; undefined statistics are
    ``{"value": None, "reason": ...}``."""
    rows = [(unit, rater, value) for unit, rater, value in human_rows if not _missing(value)]
    judged = {unit: value for unit, value in judge.items() if not _missing(value)}
    n_missing = len(judge) - len(judged)
    if categories is None:
        seen = dict.fromkeys([v for _, _, v in rows] + list(judged.values()))
        try:
            categories = sorted(seen)
        except TypeError:
            categories = list(seen)
    humans = encode(rows, level, categories)
    both = encode(
        rows + [(unit, JUDGE, value) for unit, value in judged.items()], level, categories
    )
    labels = [_plain(c) for c in humans.categories]
    n_cats = len(labels)
    weighted = level != "nominal"
    judge_code = {unit: both.category_index[value] for unit, value in judged.items()}

    persons = []
    for r, rater in enumerate(humans.raters):
        a: list[int] = []
        b: list[int] = []
        for pos in np.flatnonzero(humans.codes[r] >= 0):
            unit = humans.items[pos]
            if unit in judge_code:
                a.append(judge_code[unit])
                b.append(int(humans.codes[r, pos]))
        entry = _compare(a, b, n_cats, weighted)
        persons.append(
            {
                "rater": _plain(rater),
                "n_rated": int((humans.codes[r] >= 0).sum()),
                **entry,
                "confusion": {"labels": labels, "matrix": entry.pop("matrix")},
            }
        )

    majority, ties = majority_per_unit(humans)
    paired = [(judge_code[u], code) for u, code in majority.items() if u in judge_code]
    entry = _compare([x for x, _ in paired], [y for _, y in paired], n_cats, weighted)
    versus_majority = {
        **entry,
        "n_units_with_majority": len(majority),
        "n_ties": len(ties),
        "n_without_judge": len(majority) - len(paired),
        "confusion": {"labels": labels, "matrix": entry.pop("matrix")},
    }

    units = set(humans.items)
    return {
        "level": level,
        "categories": labels,
        "n_units": len(units),
        "n_raters": len(humans.raters),
        "judge": {
            "n_units": len(judged),
            "n_missing": n_missing,
            "n_units_rated_by_people": len(units & set(judged)),
        },
        "persons": persons,
        "majority": versus_majority,
        "alpha": {
            "people": krippendorff_alpha(humans),
            "people_and_judge": krippendorff_alpha(both),
        },
    }


# =========================================================================== calibration

#: Below this Cohen's kappa (judge x the people's majority) a criterion is flagged, unless the
#: reviewer sets another threshold.
DEFAULT_TRUST_THRESHOLD = 0.6


def _kappa_interval(
    pairs: npt.NDArray[np.int64], n_cats: int, weights: Any, rng: np.random.Generator, n: int
) -> dict[str, Any] | None:
    """Percentile bootstrap 95 % interval of Cohen's kappa, resampling the units."""
    m = len(pairs)
    if m < 2 or n <= 0:
        return None
    flat = pairs[:, 0] * n_cats + pairs[:, 1]
    samples = []
    for _ in range(n):
        draw = flat[rng.integers(0, m, size=m)]
        cm = np.bincount(draw, minlength=n_cats * n_cats).reshape(n_cats, n_cats)
        value, _ = kappa_from_confusion(cm, weights)
        if value is not None:
            samples.append(value)
    if len(samples) < n / 2:
        return None  # mostly undefined resamples (one label only): no honest interval
    low, high = np.percentile(samples, [2.5, 97.5])
    return {"low": float(low), "high": float(high), "n_resamples": n}


def _rate(hits: int, total: int) -> dict[str, Any]:
    """A share with its 95 % Wilson score interval (statsmodels)."""
    if total == 0:
        return {"value": None, "n": 0, "interval": None}
    from statsmodels.stats.proportion import proportion_confint  # lazy: ~0.3 s

    low, high = proportion_confint(hits, total, alpha=0.05, method="wilson")
    return {"value": hits / total, "n": total, "interval": [float(low), float(high)]}


def _calibrate(
    pairs: list[tuple[int, int]],
    labels: list[Any],
    level: Level,
    threshold: float,
    rng: np.random.Generator,
    bootstrap: int,
) -> Result:
    n_cats = len(labels)
    weights: Literal["quadratic"] | None = None if level == "nominal" else "quadratic"
    out: Result = {"n_units": len(pairs), "weights": weights or "none"}
    if not pairs:
        out.update(
            percent_agreement=None,
            kappa={"value": None, "reason": REASON_NO_COMMON, "interval": None},
            flagged=False,
        )
        return out
    arr = np.asarray(pairs, dtype=np.int64)
    cm = np.bincount(arr[:, 0] * n_cats + arr[:, 1], minlength=n_cats * n_cats).reshape(
        n_cats, n_cats
    )
    value, reason = kappa_from_confusion(cm, weights)
    interval = _kappa_interval(arr, n_cats, weights, rng, bootstrap)
    out["percent_agreement"] = float(np.trace(cm) / len(pairs))
    out["kappa"] = {"value": value, "reason": reason, "interval": interval}
    out["confusion"] = {"labels": labels, "matrix": cm.tolist()}
    if n_cats == 2 and set(labels) == {0, 1}:
        yes, no = labels.index(1), labels.index(0)
        out["true_positive_rate"] = _rate(int(cm[yes, yes]), int(cm[:, yes].sum()))
        out["false_positive_rate"] = _rate(int(cm[yes, no]), int(cm[:, no].sum()))
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in labels)
    if numeric and level != "nominal":
        # Reliability diagram: per value the judge gave, what the people's majority gave.
        bins = []
        for j, judged in enumerate(labels):
            rows = arr[arr[:, 0] == j]
            if not len(rows):
                continue
            people = [float(labels[c]) for c in rows[:, 1]]
            bins.append(
                {
                    "judge": judged,
                    "n": len(rows),
                    "people_mean": float(np.mean(people)),
                    "agree": float(np.mean(rows[:, 1] == j)),
                }
            )
        out["reliability"] = bins
    out["flagged"] = value is None or value < threshold
    return out


def _people_and_judge(
    human_rows: Iterable[Row],
    judge: Mapping[Any, Any],
    level: Level,
    categories: Sequence[Any] | None,
) -> tuple[Any, dict[Any, Any], list[Any]]:
    """The people's ratings encoded on the scale (``categories``, or every value seen, sorted
    where they sort), the judge's values, and the scale's labels; missing values left out."""
    rows = [(unit, rater, value) for unit, rater, value in human_rows if not _missing(value)]
    judged = {unit: value for unit, value in judge.items() if not _missing(value)}
    if categories is None:
        seen = dict.fromkeys([v for _, _, v in rows] + list(judged.values()))
        try:
            categories = sorted(seen)
        except TypeError:
            categories = list(seen)
    humans = encode(rows, level, categories)
    return humans, judged, [_plain(c) for c in humans.categories]


def judge_calibration(
    human_rows: Iterable[Row],
    judge: Mapping[Any, Any],
    level: Level = "nominal",
    categories: Sequence[Any] | None = None,
    *,
    group_of: Callable[[Any], str] | None = None,
    threshold: float = DEFAULT_TRUST_THRESHOLD,
    bootstrap: int = 1000,
    seed: int = 0,
) -> Result:
    """How far a judge can be trusted, against the people's majority per unit (ties left out),
    overall and per group of units (``group_of(unit)``: the criterion or agent a unit rates):
    percent agreement, Cohen's kappa (quadratic weights when the level is not nominal) with a
    percentile bootstrap 95 % interval over units (seeded), for a yes/no scale the judge's true-
    and false-positive rates (people's majority as the truth) with Wilson intervals, for a graded
    numeric scale a reliability diagram (per judge value, the people's mean), and ``flagged``
    where kappa is below ``threshold`` or undefined."""
    humans, judged, labels = _people_and_judge(human_rows, judge, level, categories)
    index = humans.category_index
    majority, ties = majority_per_unit(humans)
    grouped: dict[str, list[tuple[int, int]]] = {}
    everything: list[tuple[int, int]] = []
    for unit, code in majority.items():
        if unit not in judged:
            continue
        if judged[unit] not in index:
            raise ValueError(f"the judge's value {judged[unit]!r} is not on the people's scale")
        pair = (index[judged[unit]], code)
        everything.append(pair)
        grouped.setdefault(group_of(unit) if group_of else "", []).append(pair)
    rng = np.random.default_rng(seed)
    groups = [
        {"group": name, **_calibrate(pairs, labels, level, threshold, rng, bootstrap)}
        for name, pairs in sorted(grouped.items())
    ]
    return {
        "level": level,
        "categories": labels,
        "threshold": threshold,
        "n_ties": len(ties),
        "overall": _calibrate(everything, labels, level, threshold, rng, bootstrap),
        "groups": groups if group_of else [],
        "bootstrap": {"n_resamples": bootstrap, "seed": seed, "unit": "units, with replacement"},
    }


# =========================================================================== corrections


def disagreements(
    human_rows: Iterable[Row],
    judge: Mapping[Any, Any],
    level: Level = "nominal",
    categories: Sequence[Any] | None = None,
) -> list[dict[str, Any]]:
    """The units where the people's majority (ties left out) differs from the judge's value:
    ``{"unit", "judge", "people", "votes", "n_raters"}`` (``votes``: how many people gave the
    majority's value), in the people's unit order."""
    humans, judged, labels = _people_and_judge(human_rows, judge, level, categories)
    majority, _ = majority_per_unit(humans)
    out = []
    for pos, unit in enumerate(humans.items):
        if unit not in majority or unit not in judged:
            continue
        people = labels[majority[unit]]
        if judged[unit] == people:
            continue
        counts = humans.counts[pos]
        out.append(
            {
                "unit": unit,
                "judge": _plain(judged[unit]),
                "people": people,
                "votes": int(counts[majority[unit]]),
                "n_raters": int(counts.sum()),
            }
        )
    return out


def held_back_comparison(
    human_rows: Iterable[Row],
    before: Mapping[Any, Any],
    after: Mapping[Any, Any],
    level: Level = "nominal",
    categories: Sequence[Any] | None = None,
    *,
    examples: Iterable[Any] = (),
    threshold: float = DEFAULT_TRUST_THRESHOLD,
    bootstrap: int = 1000,
    seed: int = 0,
) -> Result:
    """Two versions of a judge against the people's majority on exactly the same held-back
    units: those with a majority (ties left out) that both versions judged, never one of
    ``examples`` (the units written into the newer version's prompt). For each version the
    figures of :func:`judge_calibration` (percent agreement, kappa with a bootstrap interval,
    TPR/FPR on a yes/no scale), and ``difference`` = after - before of agreement and kappa.
    ``n_examples_left_out`` counts example units that would otherwise have been compared."""
    rows = [(unit, rater, value) for unit, rater, value in human_rows if not _missing(value)]
    first = {u: v for u, v in before.items() if not _missing(v)}
    second = {u: v for u, v in after.items() if not _missing(v)}
    excluded = set(examples)
    if categories is None:
        seen = dict.fromkeys([v for _, _, v in rows] + list(first.values()) + list(second.values()))
        try:
            categories = sorted(seen)
        except TypeError:
            categories = list(seen)
    humans = encode(rows, level, categories)
    labels = [_plain(c) for c in humans.categories]
    index = humans.category_index
    majority, ties = majority_per_unit(humans)
    both = [u for u in majority if u in first and u in second]
    units = [u for u in both if u not in excluded]
    pairs: dict[str, list[tuple[int, int]]] = {"before": [], "after": []}
    for unit in units:
        for name, values in (("before", first), ("after", second)):
            if values[unit] not in index:
                raise ValueError(f"the judge's value {values[unit]!r} is not on the people's scale")
            pairs[name].append((index[values[unit]], majority[unit]))
    figures = {}
    for name in ("before", "after"):
        # The same seed for both: the two intervals resample the units alike.
        rng = np.random.default_rng(seed)
        figures[name] = _calibrate(pairs[name], labels, level, threshold, rng, bootstrap)

    def diff(key: str) -> float | None:
        a, b = figures["before"], figures["after"]
        x = a["kappa"]["value"] if key == "kappa" else a.get(key)
        y = b["kappa"]["value"] if key == "kappa" else b.get(key)
        return None if x is None or y is None else float(y - x)

    return {
        "level": level,
        "categories": labels,
        "units": [_plain(u) for u in units],
        "n_units": len(units),
        "n_ties": len(ties),
        "n_examples_left_out": len(both) - len(units),
        "before": figures["before"],
        "after": figures["after"],
        "difference": {"percent_agreement": diff("percent_agreement"), "kappa": diff("kappa")},
        "bootstrap": {"n_resamples": bootstrap, "seed": seed, "unit": "units, with replacement"},
    }
