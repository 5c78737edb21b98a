"""Agreement of a judge agent's verdicts with people's, for agents whose *reports* people rate
("Rate the judge", ATP-Bench §6) rather than answering on the agent's own scale (pure Python;
statsmodels and scikit-learn are imported where used).

* A report is **rated right** when people's agreement rate with it, 100 x mean rating / top
  (ratings 0 disagree, 1 partly, 2 agree), is at least the threshold (percent). Ratings 2, 2, 1
  give 83.3 %: right at 80 %; 2, 1, 1 give 66.7 %: wrong.
* :func:`rated_right_share`: the share of reports rated right, with its 95 % Wilson interval
  (7 of 8 -> 0.875 [0.529, 0.978]).
* **People's verdict** of a report (:func:`reference_verdicts`): a reviewer's corrected verdict
  where there is one; else the agent's own verdict where people rated the report right; else
  unknown (the unit is left out and counted).
* :func:`verdict_agreement`: how often an agent's verdicts equal people's on the same units:
  the share with its Wilson interval and Cohen's kappa (verdicts as nominal categories; a unit
  the agent gave no verdict for counts as a disagreement).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "NO_VERDICT",
    "rated_right",
    "rated_right_share",
    "reference_verdicts",
    "share",
    "unit_rate",
    "verdict_agreement",
    "verdict_comparison",
]

#: The category of a unit whose report gave no verdict (failed or missing).
NO_VERDICT = "(no verdict)"


def unit_rate(ratings: Sequence[Any], top: int = 2) -> float | None:
    """People's agreement rate with one report, in percent; None without ratings."""
    values = [float(r) for r in ratings if r is not None]
    if not values:
        return None
    return 100.0 * sum(values) / (top * len(values))


def rated_right(ratings: Sequence[Any], threshold: float, top: int = 2) -> bool | None:
    """The report is rated right (its rate is at least ``threshold`` percent); None without
    ratings."""
    rate = unit_rate(ratings, top)
    return None if rate is None else rate >= threshold


def share(hits: int, n: int) -> dict[str, Any]:
    """``hits`` of ``n`` as a share with its 95 % Wilson interval (None when ``n`` is 0)."""
    if n <= 0:
        return {"value": None, "low": None, "high": None, "hits": 0, "n": 0}
    from benchmark.metrics.aggregation import wilson_interval

    low, high = wilson_interval(hits, n)
    return {"value": hits / n, "low": low, "high": high, "hits": hits, "n": n}


def rated_right_share(
    ratings: Mapping[str, Sequence[Any]], threshold: float, top: int = 2
) -> dict[str, Any]:
    """The share of the rated reports (``{unit: ratings}``) people rated right."""
    verdicts = [rated_right(r, threshold, top) for r in ratings.values()]
    known = [v for v in verdicts if v is not None]
    return share(sum(known), len(known))


def reference_verdicts(
    units: Iterable[str],
    ratings: Mapping[str, Sequence[Any]],
    agent: Mapping[str, str | None],
    corrected: Mapping[str, str],
    threshold: float,
    top: int = 2,
) -> tuple[dict[str, str], list[str]]:
    """People's verdict per unit (see the module) and the units left out: rated wrong with
    no correction, or rated right where the agent's report has no verdict."""
    found: dict[str, str] = {}
    unknown: list[str] = []
    for unit in units:
        if unit in corrected:
            found[unit] = corrected[unit]
        elif rated_right(ratings.get(unit, ()), threshold, top) and agent.get(unit) is not None:
            found[unit] = str(agent[unit])
        else:
            unknown.append(unit)
    return found, unknown


def _kappa(reference: Sequence[str], verdicts: Sequence[str]) -> float | None:
    """Cohen's kappa over nominal verdicts; None when it is undefined (one category only)."""
    if not reference or len(set(reference) | set(verdicts)) < 2:
        return None
    from sklearn.metrics import cohen_kappa_score

    value = float(cohen_kappa_score(list(reference), list(verdicts)))
    return None if value != value else value  # NaN: undefined


def verdict_agreement(
    reference: Mapping[str, str], verdicts: Mapping[str, str | None]
) -> dict[str, Any]:
    """An agent's verdicts against people's on the units of ``reference``."""
    units = sorted(reference)
    said = [verdicts.get(u) or NO_VERDICT for u in units]
    truth = [reference[u] for u in units]
    hits = sum(a == b for a, b in zip(said, truth, strict=True))
    return {
        "share": share(hits, len(units)),
        "kappa": _kappa(truth, said),
        "n_units": len(units),
        "n_no_verdict": sum(s == NO_VERDICT for s in said),
    }


def verdict_comparison(
    reference: Mapping[str, str],
    before: Mapping[str, str | None],
    after: Mapping[str, str | None],
) -> dict[str, Any]:
    """Before and after against people's verdicts on the same units, and the difference."""
    old = verdict_agreement(reference, before)
    new = verdict_agreement(reference, after)

    def minus(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else a - b

    return {
        "units": sorted(reference),
        "n_units": len(reference),
        "before": old,
        "after": new,
        "difference": {
            "share": minus(new["share"]["value"], old["share"]["value"]),
            "kappa": minus(new["kappa"], old["kappa"]),
        },
    }
