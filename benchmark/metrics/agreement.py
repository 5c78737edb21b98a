"""Agreement statistics between the raters who judged benchmark items (pure Python + numpy).

Input is a flat list of judgments ``(item_id, rater_id, label)``; a rater need not judge every
item, and a label of ``None`` or NaN counts as no judgment. ``encode`` turns the rows into
integer-coded numpy matrices once (``Judgments``); every statistic below accepts either the rows
or a ``Judgments``, so ``agreement_report`` encodes only once.

Statistics and their reference implementations (the tests check equality with them):

* percent agreement: share of items (judged by two or more raters) on which all of them agree;
  mean pairwise agreement: per item, the share of rater pairs that agree, averaged over items;
* Cohen's kappa for each pair of raters on the items both judged, plus linear and quadratic
  weighted kappa when the level is not nominal (equal to ``sklearn.metrics.cohen_kappa_score``;
  computed here from the pair's confusion matrix, which the report returns anyway);
* Fleiss' kappa (``statsmodels.stats.inter_rater.fleiss_kappa``) over the items that have the
  most common number of ratings (ties: the larger number), since Fleiss needs a constant number;
* Krippendorff's alpha (``krippendorff.alpha``) at the given level of measurement;
* percentile bootstrap intervals for percent agreement, Fleiss' kappa and alpha, resampling the
  items judged by two or more raters with a seeded ``numpy.random.Generator``. Resamples are not
  fed back to the libraries: ``ResampleKernel`` keeps per-item category counts and per-item
  coincidence contributions, so a resample is a weighted sum over items (matrix products).

A statistic that is undefined on the data (no item judged twice, one rater, every judgment the
same label) comes back as ``{"value": None, "reason": "..."}``, never NaN and never an exception.
Invalid input (unknown level, a label outside ``categories``, the same rater judging an item
twice, text labels at the interval level) raises ``ValueError``.
"""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from numbers import Real
from statistics import median
from typing import TYPE_CHECKING, Any, Literal, get_args

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from scipy import sparse

__all__ = [
    "Judgments",
    "Level",
    "ResampleKernel",
    "agreement_report",
    "bootstrap_intervals",
    "encode",
    "fleiss_kappa",
    "kappa_from_confusion",
    "krippendorff_alpha",
    "mean_pairwise_agreement",
    "pairwise_agreement",
    "per_rater_summary",
    "percent_agreement",
]

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[str, ...] = get_args(Level)
Row = tuple[Hashable, Hashable, Any]
Result = dict[str, Any]
FinalLabels = Mapping[Any, Any]  # {item_id: final label}
Times = Mapping[tuple[Any, Any], float | None]  # {(item_id, rater_id): seconds}
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

CONFIDENCE = 0.95
BOOTSTRAP_STATISTICS = (
    "percent_agreement",
    "mean_pairwise_agreement",
    "fleiss_kappa",
    "krippendorff_alpha",
)
# Bootstrap weights are built in chunks of resamples holding about this many cells (8 MB).
_CHUNK_CELLS = 1_000_000
# Ordinal alpha keeps items x (category pairs that occur) coincidences dense up to this size.
_DENSE_COINCIDENCE_CELLS = 4_000_000

REASON_NO_JUDGMENTS = "no judgments"
REASON_ONE_RATER = "only one rater has judgments; agreement needs at least two"
REASON_NO_PAIRABLE = "no item was judged by at least two raters"
REASON_NO_OVERLAP = "the two raters judged no item in common"
REASON_KAPPA_ONE_LABEL = (
    "undefined: both raters gave every common item the same single label, so chance agreement is 1"
)
REASON_FLEISS_ONE_LABEL = "undefined: every rating falls in one category, so chance agreement is 1"
REASON_ALPHA_NO_VARIATION = (
    "undefined: the judgments on items judged twice or more show no variation, so the "
    "disagreement expected by chance is 0"
)
REASON_NO_VALID_RESAMPLE = "the statistic is undefined on every bootstrap resample"


# --------------------------------------------------------------------------------------------
# Encoding


@dataclass(frozen=True, eq=False)
class Judgments:
    """Judgments coded as integers: ``codes[r, i]`` is rater r's category index on item i.

    ``codes`` is raters x items with -1 where the rater did not judge the item; ``counts`` is
    items x categories (how many raters put the item in each category). Items and raters are
    sorted when their ids are mutually comparable, else kept in order of first appearance.
    """

    level: Level
    items: list[Hashable]
    raters: list[Hashable]
    categories: list[Any]
    codes: IntArray
    counts: IntArray
    ratings_per_item: IntArray
    values: FloatArray | None
    item_index: dict[Hashable, int]
    category_index: dict[Any, int]

    @property
    def n_judgments(self) -> int:
        return int(self.ratings_per_item.sum())

    @property
    def pairable(self) -> IntArray:
        """Indices of the items judged by at least two raters."""
        return np.flatnonzero(self.ratings_per_item >= 2)

    @cached_property
    def kernel(self) -> ResampleKernel:
        """Per-item sufficient statistics for resampling (built on first use)."""
        return ResampleKernel(self)


def _is_missing(label: Any) -> bool:
    return label is None or (isinstance(label, float | np.floating) and math.isnan(label))


def _plain(value: Any) -> Any:
    """A numpy scalar as the matching Python scalar (keeps the report JSON-friendly)."""
    return value.item() if isinstance(value, np.generic) else value


def _ordered(keys: Iterable[Any]) -> list[Any]:
    keys = list(keys)
    try:
        return sorted(keys)
    except TypeError:
        return keys


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool | np.bool_)


def encode(
    rows: Iterable[Row], level: Level = "nominal", categories: Sequence[Any] | None = None
) -> Judgments:
    """Code ``(item_id, rater_id, label)`` rows as integer matrices.

    ``categories`` fixes the label order (needed for text labels at the ordinal level; unused
    categories are fine). Without it the labels seen are sorted (numbers, or text at the nominal
    level). Interval and ratio levels need numeric labels.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}; got {level!r}")
    table = list(rows)
    item_col: Sequence[Hashable] = ()
    rater_col: Sequence[Hashable] = ()
    labels: Sequence[Any] = ()
    if table:
        item_col, rater_col, labels = zip(*table, strict=True)
    items = _ordered(dict.fromkeys(item_col))
    raters = _ordered(dict.fromkeys(rater_col))
    item_index = {x: k for k, x in enumerate(items)}
    rater_index = {x: k for k, x in enumerate(raters)}
    # None and NaN (the only value unequal to itself) mean "no judgment".
    judged = [label is not None and label == label for label in labels]
    if not all(judged):
        item_col = [x for x, keep in zip(item_col, judged, strict=True) if keep]
        rater_col = [x for x, keep in zip(rater_col, judged, strict=True) if keep]
        labels = [x for x, keep in zip(labels, judged, strict=True) if keep]

    if categories is None:
        cats = _ordered(dict.fromkeys(labels))
        if level != "nominal" and not all(_is_number(c) for c in cats):
            raise ValueError(
                f"{level} labels that are not numbers need `categories` listed in order"
            )
    else:
        cats = list(categories)
        if len(dict.fromkeys(cats)) != len(cats):
            raise ValueError("categories contain duplicates")
        if any(_is_missing(c) for c in cats):
            raise ValueError("categories may not contain None or NaN")
    values: FloatArray | None = None
    if level in ("interval", "ratio"):
        if not all(_is_number(c) for c in cats):
            raise ValueError(f"the {level} level needs numeric labels and categories")
        values = np.asarray(cats, dtype=np.float64)

    category_index = {c: k for k, c in enumerate(cats)}
    try:
        label_col = [category_index[label] for label in labels]
    except KeyError as exc:
        raise ValueError(f"label {exc.args[0]!r} is not one of the categories") from None

    n_items, n_raters, n_cats = len(items), len(raters), len(cats)
    it = np.fromiter(map(item_index.__getitem__, item_col), np.int64, len(item_col))
    rt = np.fromiter(map(rater_index.__getitem__, rater_col), np.int64, len(rater_col))
    lab = np.asarray(label_col, dtype=np.int64)

    cell = rt * n_items + it
    unique_cells, first, seen = np.unique(cell, return_index=True, return_counts=True)
    if len(unique_cells) < len(cell):
        dup = int(first[np.argmax(seen > 1)])
        raise ValueError(f"rater {raters[rt[dup]]!r} judged item {items[it[dup]]!r} more than once")

    codes = np.full((n_raters, n_items), -1, dtype=np.int64)
    codes[rt, it] = lab
    counts = np.bincount(it * n_cats + lab, minlength=n_items * n_cats).reshape(n_items, n_cats)
    return Judgments(
        level=level,
        items=items,
        raters=raters,
        categories=cats,
        codes=codes,
        counts=counts.astype(np.int64),
        ratings_per_item=counts.sum(axis=1).astype(np.int64),
        values=values,
        item_index=item_index,
        category_index=category_index,
    )


def _coerce(
    data: Judgments | Iterable[Row], level: Level | None, categories: Sequence[Any] | None
) -> Judgments:
    if isinstance(data, Judgments):
        if level is not None and level != data.level:
            raise ValueError(f"these judgments were encoded at the {data.level} level")
        if categories is not None and list(categories) != data.categories:
            raise ValueError("categories apply when passing rows; these are already encoded")
        return data
    return encode(data, level or "nominal", categories)


def _stat(value: float | None, reason: str | None = None, **extra: Any) -> Result:
    return {"value": value, "reason": reason, **extra}


def _no_pairs_reason(j: Judgments) -> str:
    if j.n_judgments == 0:
        return REASON_NO_JUDGMENTS
    if int(((j.codes >= 0).sum(axis=1) > 0).sum()) < 2:
        return REASON_ONE_RATER
    return REASON_NO_PAIRABLE


def _fleiss_items(ratings_per_item: IntArray) -> tuple[int, npt.NDArray[np.bool_]]:
    """The most common number of ratings among items rated twice or more (ties: the larger)."""
    sizes, freq = np.unique(ratings_per_item[ratings_per_item >= 2], return_counts=True)
    m = int(sizes[freq == freq.max()].max())
    return m, ratings_per_item == m


# --------------------------------------------------------------------------------------------
# Point estimates


def percent_agreement(
    data: Judgments | Iterable[Row], categories: Sequence[Any] | None = None
) -> Result:
    """Share of the items judged by two or more raters on which all of those raters agree."""
    j = _coerce(data, None, categories)
    mask = j.ratings_per_item >= 2
    n = int(mask.sum())
    if n == 0:
        return _stat(None, _no_pairs_reason(j), n_items=0)
    agree = j.counts[mask].max(axis=1) == j.ratings_per_item[mask]
    return _stat(float(agree.mean()), n_items=n)


def _pair_agreement_per_item(counts: npt.ArrayLike, n: npt.ArrayLike) -> FloatArray:
    c = np.asarray(counts, dtype=np.float64)
    m = np.asarray(n, dtype=np.float64)
    return ((c * c).sum(axis=1) - m) / (m * (m - 1))


def mean_pairwise_agreement(
    data: Judgments | Iterable[Row], categories: Sequence[Any] | None = None
) -> Result:
    """Per item, the share of pairs of its raters that agree; averaged over the items.

    On items that all have the same number of ratings this is Fleiss' observed agreement P-bar.
    Agreement of each pair of raters over the items both judged is in ``pairwise_agreement``.
    """
    j = _coerce(data, None, categories)
    mask = j.ratings_per_item >= 2
    n = int(mask.sum())
    if n == 0:
        return _stat(None, _no_pairs_reason(j), n_items=0)
    per_item = _pair_agreement_per_item(j.counts[mask], j.ratings_per_item[mask])
    return _stat(float(per_item.mean()), n_items=n)


def kappa_from_confusion(
    matrix: npt.ArrayLike, weights: Literal["linear", "quadratic"] | None = None
) -> tuple[float | None, str | None]:
    """Cohen's kappa from a confusion matrix (rows: rater A, columns: rater B, same label order).

    Same definition as ``sklearn.metrics.cohen_kappa_score``: weights are ``|i - j|`` or
    ``(i - j) ** 2`` on label positions. Returns ``(value, None)`` or ``(None, reason)``.
    """
    cm = np.asarray(matrix, dtype=np.float64)
    total = cm.sum()
    if total == 0:
        return None, REASON_NO_OVERLAP
    idx = np.arange(cm.shape[0], dtype=np.float64)
    if weights is None:
        w = 1.0 - np.eye(cm.shape[0])
    elif weights == "linear":
        w = np.abs(idx[:, None] - idx[None, :])
    elif weights == "quadratic":
        w = (idx[:, None] - idx[None, :]) ** 2
    else:
        raise ValueError(f"weights must be None, 'linear' or 'quadratic'; got {weights!r}")
    expected = np.outer(cm.sum(axis=1), cm.sum(axis=0)) / total
    chance = float((w * expected).sum())
    if chance == 0:
        return None, REASON_KAPPA_ONE_LABEL
    return float(1.0 - (w * cm).sum() / chance), None


def pairwise_agreement(
    data: Judgments | Iterable[Row],
    level: Level | None = None,
    categories: Sequence[Any] | None = None,
) -> list[Result]:
    """For each pair of raters: items both judged, percent agreement, Cohen's kappa (weighted
    variants when the level is not nominal) and the confusion matrix (rows: ``rater_a``)."""
    j = _coerce(data, level, categories)
    n_cats = len(j.categories)
    labels = [_plain(c) for c in j.categories]
    weighted = j.level != "nominal"
    out: list[Result] = []
    for a in range(len(j.raters)):
        for b in range(a + 1, len(j.raters)):
            both = (j.codes[a] >= 0) & (j.codes[b] >= 0)
            flat = j.codes[a, both] * n_cats + j.codes[b, both]
            cm = np.bincount(flat, minlength=n_cats * n_cats).reshape(n_cats, n_cats)
            n = int(both.sum())
            entry: Result = {
                "rater_a": _plain(j.raters[a]),
                "rater_b": _plain(j.raters[b]),
                "n_items": n,
                "percent_agreement": float(np.trace(cm) / n) if n else None,
                "cohen_kappa": _stat(*kappa_from_confusion(cm)),
            }
            if weighted:
                entry["cohen_kappa_linear"] = _stat(*kappa_from_confusion(cm, "linear"))
                entry["cohen_kappa_quadratic"] = _stat(*kappa_from_confusion(cm, "quadratic"))
            entry["confusion"] = {"labels": list(labels), "matrix": cm.tolist()}
            out.append(entry)
    return out


def fleiss_kappa(
    data: Judgments | Iterable[Row], categories: Sequence[Any] | None = None
) -> Result:
    """Fleiss' kappa over the items that have the most common number of ratings.

    ``n_items`` is how many items were used, ``n_items_excluded`` how many items judged by two
    or more raters had a different number of ratings, ``ratings_per_item`` the number used.
    """
    j = _coerce(data, None, categories)
    n_pairable = len(j.pairable)
    if n_pairable == 0:
        return _stat(
            None, _no_pairs_reason(j), n_items=0, n_items_excluded=0, ratings_per_item=None
        )
    m, used = _fleiss_items(j.ratings_per_item)
    table = j.counts[used]
    extra: Result = {
        "n_items": int(used.sum()),
        "n_items_excluded": n_pairable - int(used.sum()),
        "ratings_per_item": m,
    }
    if int((table.sum(axis=0) > 0).sum()) < 2:
        return _stat(None, REASON_FLEISS_ONE_LABEL, **extra)
    # Imported here: statsmodels pulls in pandas and scipy.stats (seconds on a cold start).
    from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss_kappa

    return _stat(float(statsmodels_fleiss_kappa(table, method="fleiss")), **extra)


def _reliability_data(j: Judgments) -> tuple[FloatArray, FloatArray]:
    """Raters x items matrix for ``krippendorff.alpha`` (NaN = missing) and its value domain.

    Nominal and ordinal use category positions (the ordinal metric only depends on the order),
    interval and ratio the numeric category values.
    """
    missing = j.codes < 0
    domain = np.arange(len(j.categories), dtype=np.float64) if j.values is None else j.values
    matrix = np.where(missing, np.nan, domain[np.where(missing, 0, j.codes)])
    return matrix, domain


def krippendorff_alpha(
    data: Judgments | Iterable[Row],
    level: Level | None = None,
    categories: Sequence[Any] | None = None,
) -> Result:
    """Krippendorff's alpha at the level of measurement the judgments were encoded with."""
    j = _coerce(data, level, categories)
    pairable = j.pairable
    extra: Result = {
        "level": j.level,
        "n_items": len(pairable),
        "n_pairable_judgments": int(j.ratings_per_item[pairable].sum()),
    }
    if len(pairable) == 0:
        return _stat(None, _no_pairs_reason(j), **extra)
    if not np.isfinite(j.kernel.statistics(np.ones(len(pairable)))["krippendorff_alpha"][0]):
        return _stat(None, REASON_ALPHA_NO_VARIATION, **extra)
    matrix, domain = _reliability_data(j)
    import krippendorff  # lazy: it pulls in SciPy (~0.3 s); only alpha itself needs it

    value = krippendorff.alpha(
        reliability_data=matrix, value_domain=domain, level_of_measurement=j.level
    )
    return _stat(float(value), **extra)


# --------------------------------------------------------------------------------------------
# Bootstrap


def _distance_matrix(level: Level, values: FloatArray | None, n_cats: int) -> FloatArray:
    """Krippendorff's squared difference between categories, for the fixed-distance levels."""
    if level == "nominal":
        return 1.0 - np.eye(n_cats)
    assert values is not None
    diff = values[:, None] - values[None, :]
    if level == "interval":
        return diff**2
    total = values[:, None] + values[None, :]
    ratio = np.divide(diff, total, out=np.zeros_like(diff), where=total != 0)
    return ratio**2


class ResampleKernel:
    """Per-item sufficient statistics of the items judged by two or more raters.

    ``statistics(weights)`` takes a (resamples x items) matrix of how often each of those items
    (``pairable``, in that order) is drawn and returns each statistic per resample. Everything
    linear in the items is one matrix product ``weights @ features``:

    * percent agreement: weighted means of per-item "all agree" flags and pair agreement;
    * Fleiss' kappa: weighted per-item observed agreement and category counts, over the items
      with ``fleiss_ratings`` ratings (fixed from the full data);
    * Krippendorff's alpha: item i adds ``(c c' - diag(c)) / (n_i - 1)`` to the coincidence
      matrix (c: its category counts), and pairable values per category are summed counts. For
      nominal, interval and ratio the distances are fixed, so each item's observed disagreement
      is one number. For ordinal the distances depend on the resample's marginals (squared
      differences of mid-ranks ``cumsum(n) - n / 2``), so each resample's coincidence matrix is
      rebuilt from the items' contributions (extra feature columns, one per category pair that
      occurs; a separate sparse product when that would be large).

    Undefined values (e.g. no variation in a resample) are NaN here; the public functions turn
    them into ``None`` with a reason.
    """

    def __init__(self, judgments: Judgments) -> None:
        j = judgments
        self.level: Level = j.level
        self.pairable = j.pairable
        counts = j.counts[self.pairable].astype(np.float64)
        n = j.ratings_per_item[self.pairable].astype(np.float64)
        k = counts.shape[1]
        self.n_cats = k
        pair_agree = _pair_agreement_per_item(counts, n)
        if len(self.pairable):
            self.fleiss_ratings, fleiss = _fleiss_items(j.ratings_per_item[self.pairable])
        else:
            self.fleiss_ratings, fleiss = 0, np.zeros(0, dtype=bool)
        in_fleiss = fleiss.astype(np.float64)

        self.distance: FloatArray | None = None
        columns = [
            np.ones_like(n),
            (counts.max(axis=1, initial=0) == n).astype(np.float64),
            pair_agree,
            in_fleiss,
            in_fleiss * pair_agree,
        ]
        if self.level != "ordinal":
            self.distance = _distance_matrix(self.level, j.values, k)
            columns.append(((counts @ self.distance) * counts).sum(axis=1) / (n - 1))
        self._observed_col = len(columns) - 1  # only meaningful with a fixed distance
        self._features = np.column_stack([*columns, in_fleiss[:, None] * counts, counts])
        self._fleiss_cols = slice(len(columns), len(columns) + k)
        self._value_cols = slice(len(columns) + k, len(columns) + 2 * k)

        self._pair_cols = np.zeros(0, dtype=np.int64)
        self._sparse_coincidence: sparse.csr_matrix | None = None
        if self.level == "ordinal" and len(self.pairable):
            coincidence = self._coincidences(counts, n)
            self._pair_cols = np.unique(coincidence.indices)
            used = coincidence[:, self._pair_cols]
            if used.shape[0] * used.shape[1] <= _DENSE_COINCIDENCE_CELLS:
                self._features = np.hstack([self._features, used.toarray()])
            else:
                self._sparse_coincidence = used.T.tocsr()
        self._coincidence_cols = slice(len(columns) + 2 * k, self._features.shape[1])

    @staticmethod
    def _coincidences(counts: FloatArray, n: FloatArray) -> sparse.csr_matrix:
        """Items x (K*K) sparse matrix of each item's coincidence contribution."""
        from scipy import sparse  # lazy: ~0.3 s to import; only ordinal bootstraps need it

        n_items, n_cats = counts.shape
        item, cat = np.nonzero(counts)  # row-major: grouped by item
        per_item = np.bincount(item, minlength=n_items)
        start = np.cumsum(per_item) - per_item
        reps = per_item[item]
        left = np.repeat(np.arange(len(item)), reps)
        offset = np.arange(len(left)) - np.repeat(np.cumsum(reps) - reps, reps)
        right = start[item[left]] + offset
        row, c, k = item[left], cat[left], cat[right]
        value = counts[row, c] * counts[row, k] - np.where(c == k, counts[row, c], 0.0)
        value /= n[row] - 1
        keep = value != 0
        return sparse.csr_matrix(
            (value[keep], (row[keep], (c * n_cats + k)[keep])), shape=(n_items, n_cats * n_cats)
        )

    def statistics(self, weights: npt.ArrayLike) -> dict[str, FloatArray]:
        w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        if w.shape[1] != len(self.pairable):
            raise ValueError(f"weights need {len(self.pairable)} columns, got {w.shape[1]}")
        sums = w @ self._features
        with np.errstate(divide="ignore", invalid="ignore"):
            out = {
                "percent_agreement": sums[:, 1] / sums[:, 0],
                "mean_pairwise_agreement": sums[:, 2] / sums[:, 0],
                "fleiss_kappa": self._fleiss(sums),
                "krippendorff_alpha": self._alpha(w, sums),
            }
        for values in out.values():
            values[~np.isfinite(values)] = np.nan
        return out

    def _fleiss(self, sums: FloatArray) -> FloatArray:
        n_items = sums[:, 3]
        observed = sums[:, 4] / n_items
        share = sums[:, self._fleiss_cols] / (n_items * self.fleiss_ratings)[:, None]
        chance = (share * share).sum(axis=1)
        kappa = (observed - chance) / (1.0 - chance)
        kappa[(share > 0).sum(axis=1) < 2] = np.nan
        return kappa

    def _alpha(self, w: FloatArray, sums: FloatArray) -> FloatArray:
        n_v = sums[:, self._value_cols]
        if self.distance is not None:
            observed = sums[:, self._observed_col]
            expected = ((n_v @ self.distance) * n_v).sum(axis=1)
        else:
            k = self.n_cats
            if self._sparse_coincidence is not None:
                used = np.asarray(self._sparse_coincidence @ w.T).T
            else:
                used = sums[:, self._coincidence_cols]
            midrank = np.cumsum(n_v, axis=1) - n_v / 2
            distance = (midrank[:, :, None] - midrank[:, None, :]) ** 2
            observed = (used * distance.reshape(len(w), k * k)[:, self._pair_cols]).sum(axis=1)
            expected = np.einsum("bk,bkl,bl->b", n_v, distance, n_v)
        n = n_v.sum(axis=1)
        alpha = 1.0 - (n - 1.0) * observed / expected
        alpha[((n_v > 0).sum(axis=1) < 2) | ~(expected > 0)] = np.nan
        return alpha


def _percentile_interval(samples: FloatArray, confidence: float) -> Result:
    valid = samples[np.isfinite(samples)]
    out: Result = {
        "low": None,
        "high": None,
        "confidence": confidence,
        "method": "percentile",
        "n_resamples": len(samples),
        "n_valid": len(valid),
    }
    if len(valid) == 0:
        out["reason"] = REASON_NO_VALID_RESAMPLE
        return out
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(valid, [tail, 100 - tail])
    out["low"], out["high"] = float(low), float(high)
    return out


@cache
def _blas_controller() -> Any:
    try:
        from threadpoolctl import ThreadpoolController  # installed with scikit-learn
    except ImportError:  # pragma: no cover
        return None
    return ThreadpoolController()


def _single_threaded_blas() -> contextlib.AbstractContextManager[Any]:
    """The bootstrap's matrix products are small and memory-bound: on two cores, idle BLAS
    worker threads spinning between them cost more CPU than they save (measured 40% less CPU
    with one thread). The limit is process-wide while it lasts."""
    controller = _blas_controller()
    if controller is None:  # pragma: no cover
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")  # type: ignore[no-any-return]


def bootstrap_intervals(
    data: Judgments | Iterable[Row],
    level: Level | None = None,
    categories: Sequence[Any] | None = None,
    n_resamples: int = 1000,
    seed: int | None = 0,
    confidence: float = CONFIDENCE,
) -> dict[str, Result | None]:
    """Percentile bootstrap intervals, resampling the items judged by two or more raters.

    Keys: percent_agreement, mean_pairwise_agreement, fleiss_kappa, krippendorff_alpha; a value
    is None when nothing can be resampled. The same seed gives the same intervals.
    """
    j = _coerce(data, level, categories)
    kernel = j.kernel
    m = len(kernel.pairable)
    if m == 0 or n_resamples <= 0:
        return dict.fromkeys(BOOTSTRAP_STATISTICS)
    rng = np.random.default_rng(seed)
    samples = {name: np.empty(n_resamples) for name in BOOTSTRAP_STATISTICS}
    chunk = max(1, min(n_resamples, _CHUNK_CELLS // m))
    with _single_threaded_blas():
        for start in range(0, n_resamples, chunk):
            b = min(chunk, n_resamples - start)
            # Row k of `weights`: how often each item is drawn in resample k (m draws).
            draws = rng.integers(0, m, size=(b, m), dtype=np.int64)
            draws += (np.arange(b, dtype=np.int64) * m)[:, None]
            weights = np.bincount(draws.ravel(), minlength=b * m).reshape(b, m)
            for name, values in kernel.statistics(weights.astype(np.float64)).items():
                samples[name][start : start + b] = values
    return {name: _percentile_interval(samples[name], confidence) for name in samples}


# --------------------------------------------------------------------------------------------
# Per rater and report


def per_rater_summary(
    data: Judgments | Iterable[Row],
    final: FinalLabels | None = None,
    times: Times | None = None,
    categories: Sequence[Any] | None = None,
) -> list[Result]:
    """Per rater: items judged; agreement with ``final`` ({item: label}) on the items the rater
    judged that have a final label; median seconds over the rater's entries in ``times``
    ({(item, rater): seconds})."""
    j = _coerce(data, None, categories)
    final_codes = np.full(len(j.items), -1, dtype=np.int64)
    for item, label in (final or {}).items():
        pos = j.item_index.get(item)
        if pos is not None and not _is_missing(label):
            final_codes[pos] = j.category_index.get(label, -2)  # -2: a label no rater used
    seconds: defaultdict[Hashable, list[float]] = defaultdict(list)
    for (_, rater), value in (times or {}).items():
        if value is not None and math.isfinite(value):
            seconds[rater].append(float(value))

    out: list[Result] = []
    for r, rater in enumerate(j.raters):
        judged = j.codes[r] >= 0
        compared = judged & (final_codes != -1)
        n_compared = int(compared.sum())
        agree = (
            float((j.codes[r, compared] == final_codes[compared]).mean()) if n_compared else None
        )
        spent = seconds.get(rater, [])
        out.append(
            {
                "rater": _plain(rater),
                "n_items": int(judged.sum()),
                "agreement_with_final": agree,
                "n_final_compared": n_compared,
                "median_seconds": float(median(spent)) if spent else None,
                "n_timed": len(spent),
            }
        )
    return out


def agreement_report(
    rows: Iterable[Row],
    level: Level,
    categories: Sequence[Any] | None = None,
    final: FinalLabels | None = None,
    times: Times | None = None,
    bootstrap: int = 1000,
    seed: int | None = 0,
) -> Result:
    """Every statistic in one JSON-serialisable dict (plain Python types, no NaN).

    ``bootstrap`` is the number of resamples (0: no intervals); each bootstrapped statistic gets
    a ``ci`` entry (None when the statistic is undefined or there are no resamples).
    """
    j = encode(rows, level, categories)
    stats = {
        "percent_agreement": percent_agreement(j),
        "mean_pairwise_agreement": mean_pairwise_agreement(j),
        "fleiss_kappa": fleiss_kappa(j),
        "krippendorff_alpha": krippendorff_alpha(j),
    }
    intervals = bootstrap_intervals(j, n_resamples=bootstrap, seed=seed)
    for name, stat in stats.items():
        stat["ci"] = intervals[name] if stat["value"] is not None else None
    return {
        "level": j.level,
        "categories": [_plain(c) for c in j.categories],
        "n_items": len(j.items),
        "n_raters": len(j.raters),
        "n_judgments": j.n_judgments,
        "n_items_judged_twice_or_more": len(j.pairable),
        **stats,
        "pairs": pairwise_agreement(j),
        "raters": per_rater_summary(j, final, times),
        "bootstrap": {
            "n_resamples": max(bootstrap, 0),
            "seed": seed,
            "confidence": CONFIDENCE,
            "method": "percentile",
            "unit": "items judged by two or more raters, drawn with replacement",
        },
    }
