"""Figures of a human evaluation of model answers (pure Python + numpy; choix for
Bradley-Terry): per-model means of a rating scale with bootstrap intervals (ATP-Bench Table 11,
LLM-I Table 2's "Human" column), and for pairwise preferences the win rates and a
Bradley-Terry ranking.

* :func:`group_means`: the mean of a group's ratings (every rating counts once, so with k
  raters per answer it is the mean of the answers' mean ratings) and its 95 % percentile
  bootstrap interval, resampling the group's *units* (answers, each with all its ratings) with
  replacement with a seeded ``numpy.random.Generator``, as
  :mod:`benchmark.metrics.rating_rate` does. Ratings 1, 2 and 4, 5 of two answers: 3.0.
* :func:`win_rates`: per model, of every judgment of a pair it was in, the wins, losses and
  ties, and the win rate ``100 x (wins + ties / 2) / judgments``, with the same bootstrap over
  pairs; and the same per pair of models (head to head).
* :func:`bradley_terry`: the Bradley-Terry model P(i beats j) = p_i / (p_i + p_j) fitted by
  maximum likelihood with ``choix.ilsr_pairwise`` (iterative Luce spectral ranking, which
  converges to the same estimate as Hunter's MM algorithm). A tie counts as half a win for
  each side: every decisive judgment enters twice and a tie once each way, which leaves the
  unregularised estimate unchanged. The estimate exists only when the comparisons connect
  every model to every other both ways (for each split of the models in two, some model of
  each side beat or tied one of the other); otherwise, e.g. when a model never lost, a small
  regularisation (``alpha``) is used and ``note`` says so. Strengths are ``theta`` (log
  strength, mean 0) and ``share`` (100 x p_i / sum p).

Each function raises ValueError on a rating that is not a number or an outcome other than
"a", "b" or "tie".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from numbers import Real
from typing import Any

__all__ = ["OUTCOMES", "REGULARISATION", "bradley_terry", "group_means", "win_rates"]

OUTCOMES = ("a", "b", "tie")
#: The regularisation used when the unregularised Bradley-Terry estimate does not exist.
REGULARISATION = 0.01
_CHUNK_CELLS = 1_000_000


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"rating {value!r} is not a number")
    return float(value)


def _ratio_interval(
    sums: Sequence[float], counts: Sequence[float], rng: Any, n_resamples: int, confidence: float
) -> dict[str, Any] | None:
    """Percentile bootstrap interval of sum(sums) / sum(counts), resampling the units (one
    entry of each) with replacement."""
    import numpy as np

    from benchmark.metrics import agreement

    m = len(sums)
    if m == 0 or n_resamples <= 0:
        return None
    s = np.asarray(sums, dtype=np.float64)
    c = np.asarray(counts, dtype=np.float64)
    samples = np.empty(n_resamples)
    chunk = max(1, min(n_resamples, _CHUNK_CELLS // m))
    for start in range(0, n_resamples, chunk):
        b = min(chunk, n_resamples - start)
        # Row k of `weights`: how often each unit is drawn in resample k (m draws).
        draws = rng.integers(0, m, size=(b, m), dtype=np.int64)
        draws += (np.arange(b, dtype=np.int64) * m)[:, None]
        weights = np.bincount(draws.ravel(), minlength=b * m).reshape(b, m)
        samples[start : start + b] = (weights @ s) / (weights @ c)
    interval = agreement._percentile_interval(samples, confidence)
    interval["unit"] = "answers (or pairs), each with all its ratings, drawn with replacement"
    return interval


def _bootstrap_info(n_resamples: int, seed: int | None, confidence: float) -> dict[str, Any]:
    return {
        "n_resamples": max(n_resamples, 0),
        "seed": seed,
        "confidence": confidence,
        "method": "percentile",
    }


def group_means(
    rows: Iterable[tuple[Hashable, Hashable, Any]],
    *,
    groups: Sequence[Hashable] | None = None,
    n_resamples: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Mean rating per group (a model) with its bootstrap interval.

    ``rows`` are ``(unit, group, rating)``; a rating of None is no rating. ``groups`` fixes
    the order (groups without ratings are listed with no mean); the rest follow sorted. The
    same seed gives the same intervals. Answers ``{"groups": [{"group", "mean", "ci",
    "n_units", "n_ratings"}], "bootstrap": {...}}``.
    """
    import numpy as np

    per_group: dict[Hashable, dict[Hashable, list[float]]] = defaultdict(dict)
    for unit, group, rating in rows:
        if rating is None:
            continue
        per_group[group].setdefault(unit, []).append(_number(rating))
    order = list(groups) if groups is not None else []
    order += [g for g in sorted(per_group, key=str) if g not in order]
    rng = np.random.default_rng(seed)
    out = []
    for group in order:
        units = per_group.get(group, {})
        sums = [sum(v) for v in units.values()]
        counts = [float(len(v)) for v in units.values()]
        n_ratings = int(sum(counts))
        out.append(
            {
                "group": group,
                "mean": sum(sums) / n_ratings if n_ratings else None,
                "ci": _ratio_interval(sums, counts, rng, n_resamples, confidence),
                "n_units": len(units),
                "n_ratings": n_ratings,
            }
        )
    return {"groups": out, "bootstrap": _bootstrap_info(n_resamples, seed, confidence)}


def _outcome(value: Any) -> str:
    if value not in OUTCOMES:
        raise ValueError(f"preference {value!r} is not one of {', '.join(OUTCOMES)}")
    return str(value)


def win_rates(
    rows: Iterable[tuple[Hashable, Hashable, Hashable, Any]],
    *,
    models: Sequence[Hashable] | None = None,
    n_resamples: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Win rates from pairwise judgments ``(unit, model shown as A, model shown as B,
    outcome)``, outcome "a", "b" or "tie" (None: no judgment).

    Answers ``{"models": [{"model", "wins", "losses", "ties", "n", "rate", "ci", "n_pairs"}],
    "pairs": [{"a", "b", "a_wins", "b_wins", "ties", "n", "rate_a"}], "bootstrap"}``: ``rate``
    is 100 x (wins + ties / 2) / n over the judgments of pairs the model was in; ``pairs``
    is head to head, ``a`` before ``b`` in model order, ``rate_a`` that rate for ``a``.
    """
    import numpy as np

    # Per model and unit: [score (wins + ties / 2), judgments, wins, losses, ties].
    per_model: dict[Hashable, dict[Hashable, list[float]]] = defaultdict(dict)
    heads: dict[tuple[Hashable, Hashable], list[int]] = defaultdict(lambda: [0, 0, 0])
    for unit, model_a, model_b, value in rows:
        if value is None or model_a == model_b:
            continue
        outcome = _outcome(value)
        for me, side in ((model_a, "a"), (model_b, "b")):
            cell = per_model[me].setdefault(unit, [0.0, 0.0, 0.0, 0.0, 0.0])
            cell[1] += 1
            if outcome == "tie":
                cell[0] += 0.5
                cell[4] += 1
            elif outcome == side:
                cell[0] += 1
                cell[2] += 1
            else:
                cell[3] += 1
        first, second = sorted((model_a, model_b), key=str)
        head = heads[(first, second)]
        winner = {"a": model_a, "b": model_b}.get(outcome)
        head[2 if winner is None else (0 if winner == first else 1)] += 1
    order = list(models) if models is not None else []
    order += [m for m in sorted(per_model, key=str) if m not in order]
    rng = np.random.default_rng(seed)
    out = []
    for model in order:
        cells = list(per_model.get(model, {}).values())
        n = int(sum(c[1] for c in cells))
        out.append(
            {
                "model": model,
                "wins": int(sum(c[2] for c in cells)),
                "losses": int(sum(c[3] for c in cells)),
                "ties": int(sum(c[4] for c in cells)),
                "n": n,
                "n_pairs": len(cells),
                "rate": 100.0 * sum(c[0] for c in cells) / n if n else None,
                "ci": _scaled(
                    _ratio_interval(
                        [c[0] for c in cells], [c[1] for c in cells], rng, n_resamples, confidence
                    ),
                    100.0,
                ),
            }
        )
    rank = {m: k for k, m in enumerate(order)}
    pairs = []
    for (first, second), (a_wins, b_wins, ties) in sorted(
        heads.items(), key=lambda kv: (rank[kv[0][0]], rank[kv[0][1]])
    ):
        n = a_wins + b_wins + ties
        pairs.append(
            {
                "a": first,
                "b": second,
                "a_wins": a_wins,
                "b_wins": b_wins,
                "ties": ties,
                "n": n,
                "rate_a": 100.0 * (a_wins + ties / 2) / n if n else None,
            }
        )
    return {
        "models": out,
        "pairs": pairs,
        "bootstrap": _bootstrap_info(n_resamples, seed, confidence),
    }


def _scaled(interval: dict[str, Any] | None, factor: float) -> dict[str, Any] | None:
    if interval is None:
        return None
    out = dict(interval)
    for key in ("low", "high"):
        if out.get(key) is not None:
            out[key] = out[key] * factor
    return out


def _strongly_connected(n: int, edges: set[tuple[int, int]]) -> bool:
    """Whether every node reaches every other along ``edges`` (i -> j: i beat or tied j)."""
    if n <= 1:
        return True
    forward: dict[int, set[int]] = defaultdict(set)
    backward: dict[int, set[int]] = defaultdict(set)
    for i, j in edges:
        forward[i].add(j)
        backward[j].add(i)
    for graph in (forward, backward):
        seen, stack = {0}, [0]
        while stack:
            for nxt in graph[stack.pop()] - seen:
                seen.add(nxt)
                stack.append(nxt)
        if len(seen) < n:
            return False
    return True


def bradley_terry(
    rows: Iterable[tuple[Hashable, Hashable, Any]],
    *,
    models: Sequence[Hashable] | None = None,
    alpha: float | None = None,
) -> dict[str, Any]:
    """Bradley-Terry strengths from ``(model shown as A, model shown as B, outcome)``.

    ``models`` fixes the order in which models are considered (only models with comparisons
    are ranked; ties in strength are ranked in this order, then by name); ``alpha``: force this regularisation (None: 0 when the estimate exists,
    else :data:`REGULARISATION`). Answers ``{"models": [{"model", "theta", "share", "rank"}]
    best first, "alpha", "n", "method", "note"}``.
    """
    import math

    comparisons = []
    for model_a, model_b, value in rows:
        if value is None or model_a == model_b:
            continue
        comparisons.append((model_a, model_b, _outcome(value)))
    # Only models with comparisons are ranked: one without any has no strength to estimate.
    seen = {m for a, b, _ in comparisons for m in (a, b)}
    names = [m for m in (models or ()) if m in seen]
    names += [m for m in sorted(seen, key=str) if m not in names]
    index = {m: k for k, m in enumerate(names)}
    data: list[tuple[int, int]] = []
    for model_a, model_b, outcome in comparisons:
        i, j = index[model_a], index[model_b]
        if outcome == "a":
            data += [(i, j), (i, j)]
        elif outcome == "b":
            data += [(j, i), (j, i)]
        else:
            data += [(i, j), (j, i)]
    result: dict[str, Any] = {
        "models": [],
        "alpha": None,
        "n": len(comparisons),
        "method": "Bradley-Terry, maximum likelihood (choix.ilsr_pairwise); ties count half",
        "note": "",
    }
    if len(names) < 2 or not comparisons:
        result["note"] = "a ranking needs judgments of pairs of at least two models"
        return result
    connected = _strongly_connected(len(names), set(data))
    if alpha is None:
        alpha = 0.0 if connected else REGULARISATION
    if not connected and alpha == 0:
        raise ValueError("the comparisons do not connect every model both ways: give alpha > 0")
    if alpha:
        result["note"] = (
            f"regularised (alpha = {alpha:g}): the comparisons do not connect every model to "
            "every other both ways (for example a model never lost, or never won), so the "
            "plain maximum-likelihood estimate does not exist"
            if not connected
            else f"regularised (alpha = {alpha:g})"
        )
    import choix

    theta = [float(t) for t in choix.ilsr_pairwise(len(names), data, alpha=alpha, max_iter=1000)]
    mean = sum(theta) / len(theta)
    # Rounded: an iterative fit leaves equal strengths a hair apart, and ranks compare them.
    theta = [round(t - mean, 9) for t in theta]
    top = max(theta)
    weights = [math.exp(t - top) for t in theta]
    total = sum(weights)
    ordered = sorted(range(len(names)), key=lambda k: (-theta[k], k))
    result["alpha"] = alpha
    result["models"] = [
        {
            "model": names[k],
            "theta": theta[k],
            "share": 100.0 * weights[k] / total,
            "rank": position + 1,
        }
        for position, k in enumerate(ordered)
    ]
    return result
