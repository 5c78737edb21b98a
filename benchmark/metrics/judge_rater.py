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

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from benchmark.metrics.agreement import (
    Judgments,
    Level,
    Result,
    Row,
    encode,
    kappa_from_confusion,
    krippendorff_alpha,
)

__all__ = ["JUDGE", "judge_as_rater", "majority_per_unit"]

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
