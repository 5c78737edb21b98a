"""Rank agreement between two sources scoring the same models (ATP-Bench §6, App. B.2).

:func:`rank_correlation` gives Spearman's rho with its p-value (``scipy.stats.spearmanr``),
over the models both sources scored, and the two rankings (best first; tied models share the
mean of their positions). With fewer than 3 common models, or when a source gives every model
the same score, rho is undefined: ``rho`` and ``p`` are None and ``note`` says why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

MIN_MODELS = 3


@dataclass(frozen=True)
class RankCorrelation:
    rho: float | None
    p: float | None
    n: int
    ranking_a: dict[str, float]
    ranking_b: dict[str, float]
    note: str = ""


def ranks(scores: Mapping[str, float], higher_is_better: bool = True) -> dict[str, float]:
    """Position of each model, 1 = best; ties get the mean of the positions they span."""
    ordered = sorted(scores, key=lambda m: (-scores[m] if higher_is_better else scores[m], m))
    out: dict[str, float] = {}
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and scores[ordered[j + 1]] == scores[ordered[i]]:
            j += 1
        for model in ordered[i : j + 1]:
            out[model] = (i + j) / 2 + 1
        i = j + 1
    return out


def rank_correlation(
    a: Mapping[str, float],
    b: Mapping[str, float],
    *,
    higher_is_better_a: bool = True,
    higher_is_better_b: bool = True,
) -> RankCorrelation:
    """Spearman's rho between the rankings of the models scored by both ``a`` and ``b``.

    ``higher_is_better_*`` says which way each source ranks (False for MI, where fewer missed
    images is better), so rho > 0 always means the sources agree.
    """
    common = sorted(set(a) & set(b))
    rank_a = ranks({m: a[m] for m in common}, higher_is_better_a)
    rank_b = ranks({m: b[m] for m in common}, higher_is_better_b)
    if len(common) < MIN_MODELS:
        note = f"rho is undefined for {len(common)} model(s); it needs at least {MIN_MODELS}"
        return RankCorrelation(None, None, len(common), rank_a, rank_b, note)
    for name, ranking in (("first", rank_a), ("second", rank_b)):
        if len(set(ranking.values())) == 1:
            note = f"rho is undefined: the {name} source ranks every model equal"
            return RankCorrelation(None, None, len(common), rank_a, rank_b, note)
    from scipy.stats import spearmanr

    result = spearmanr([rank_a[m] for m in common], [rank_b[m] for m in common])
    rho, p = float(result.statistic), float(result.pvalue)
    if math.isnan(rho):
        return RankCorrelation(None, None, len(common), rank_a, rank_b, "rho is undefined")
    return RankCorrelation(rho, None if math.isnan(p) else p, len(common), rank_a, rank_b)
