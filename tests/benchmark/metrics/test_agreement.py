"""Agreement statistics equal sklearn / statsmodels / krippendorff and published examples.

Reference values are computed here from the raw rows with the libraries, independently of the
module's own encoding, so a coding or formula mistake in the module shows up as a mismatch.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Hashable
from typing import Any

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss_kappa

from benchmark.metrics import agreement as ag
from benchmark.metrics.agreement import (
    agreement_report,
    bootstrap_intervals,
    encode,
    fleiss_kappa,
    krippendorff_alpha,
    mean_pairwise_agreement,
    pairwise_agreement,
    per_rater_summary,
    percent_agreement,
)

pytestmark = pytest.mark.filterwarnings("error")

Row = tuple[Hashable, Hashable, Any]

# Interval and ratio use unequally spaced values, so their distances differ from ordinal ranks.
LABELS: dict[str, list[Any]] = {
    "nominal": ["correct", "partial", "refusal", "wrong"],
    "ordinal": [1, 2, 3, 4, 5],
    "interval": [0.0, 0.5, 1.0, 2.5, 4.0],
    "ratio": [1, 2, 4, 8, 16],
}
LEVELS = list(LABELS)


def random_rows(
    level: str, seed: int, n_items: int = 150, n_raters: int = 4, missing: float = 0.3
) -> list[Row]:
    """Raters mostly agree with a latent label; some judgments are missing; rows shuffled."""
    rng = np.random.default_rng(seed)
    cats = LABELS[level]
    rows: list[Row] = []
    for i in range(n_items):
        truth = int(rng.integers(len(cats)))
        for r in range(n_raters):
            if rng.random() < missing:
                continue
            k = truth if rng.random() < 0.6 else int(rng.integers(len(cats)))
            rows.append((f"item{i:03d}", f"rater{r}", cats[k]))
    order = rng.permutation(len(rows))
    return [rows[k] for k in order]


# --------------------------------------------------------------------------------------------
# Independent reference computations


def by_item(rows: list[Row]) -> dict[Hashable, dict[Hashable, Any]]:
    out: dict[Hashable, dict[Hashable, Any]] = {}
    for item, rater, label in rows:
        if label is not None:
            out.setdefault(item, {})[rater] = label
    return out


def reliability_matrix(
    rows: list[Row], items: list[Hashable] | None = None
) -> tuple[np.ndarray, list[Hashable]]:
    """Raters x items for krippendorff.alpha; ``items`` may repeat (a bootstrap resample)."""
    judged = by_item(rows)
    raters = sorted({rater for _, rater, label in rows if label is not None})
    items = sorted(judged) if items is None else items
    matrix = [[judged.get(item, {}).get(rater, np.nan) for item in items] for rater in raters]
    return np.asarray(matrix), raters


def reference_alpha(rows: list[Row], level: str, items: list[Hashable] | None = None) -> float:
    matrix, _ = reliability_matrix(rows, items)
    return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))


def reference_fleiss(
    rows: list[Row], items: list[Hashable] | None = None, ratings: int | None = None
) -> tuple[float, int, int]:
    """statsmodels Fleiss' kappa over the items with the most common number of ratings."""
    judged = by_item(rows)
    labels = [list(judged[item].values()) for item in (sorted(judged) if items is None else items)]
    labels = [x for x in labels if len(x) >= 2]
    if ratings is None:
        freq = Counter(len(x) for x in labels)
        ratings = max(size for size, count in freq.items() if count == max(freq.values()))
    used = [x for x in labels if len(x) == ratings]
    table, _ = aggregate_raters(np.asarray(used))
    return float(statsmodels_fleiss_kappa(table, method="fleiss")), len(used), ratings


def reference_percent(rows: list[Row], items: list[Hashable] | None = None) -> tuple[float, float]:
    """(share of items where all raters agree, mean over items of agreeing pairs / pairs)."""
    judged = by_item(rows)
    labels = [list(judged[item].values()) for item in (sorted(judged) if items is None else items)]
    labels = [x for x in labels if len(x) >= 2]
    all_agree = [len(set(x)) == 1 for x in labels]
    pairs = [np.mean([a == b for a, b in itertools.combinations(x, 2)]) for x in labels]
    return float(np.mean(all_agree)), float(np.mean(pairs))


# --------------------------------------------------------------------------------------------
# Every figure equals the library's value


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("level", LEVELS)
def test_report_matches_libraries_on_random_data_with_missing_values(level: str, seed: int):
    rows = random_rows(level, seed)
    report = agreement_report(rows, level, bootstrap=0)
    judged = by_item(rows)

    assert report["krippendorff_alpha"]["value"] == pytest.approx(
        reference_alpha(rows, level), abs=1e-12
    )
    kappa, n_used, ratings = reference_fleiss(rows)
    assert report["fleiss_kappa"]["value"] == pytest.approx(kappa, abs=1e-12)
    assert report["fleiss_kappa"]["n_items"] == n_used
    assert report["fleiss_kappa"]["ratings_per_item"] == ratings
    assert (
        report["fleiss_kappa"]["n_items_excluded"]
        == sum(1 for x in judged.values() if len(x) >= 2) - n_used
    )

    all_agree, pairwise = reference_percent(rows)
    assert report["percent_agreement"]["value"] == pytest.approx(all_agree, abs=1e-12)
    assert report["mean_pairwise_agreement"]["value"] == pytest.approx(pairwise, abs=1e-12)

    assert report["categories"] == sorted(report["categories"])
    cats = [str(c) for c in report["categories"]]
    assert len(report["pairs"]) == 6  # 4 raters
    for pair in report["pairs"]:
        common = [x for x in judged.values() if pair["rater_a"] in x and pair["rater_b"] in x]
        # As text: sklearn takes float labels (0.5, 2.5) for a regression target.
        ya = [str(x[pair["rater_a"]]) for x in common]
        yb = [str(x[pair["rater_b"]]) for x in common]
        assert pair["n_items"] == len(common)
        assert pair["percent_agreement"] == pytest.approx(np.mean(np.equal(ya, yb)))
        assert pair["confusion"]["labels"] == report["categories"]
        assert pair["confusion"]["matrix"] == confusion_matrix(ya, yb, labels=cats).tolist()
        assert pair["cohen_kappa"]["value"] == pytest.approx(
            cohen_kappa_score(ya, yb, labels=cats), abs=1e-12
        )
        for weights in ("linear", "quadratic"):
            key = f"cohen_kappa_{weights}"
            if level == "nominal":
                assert key not in pair
            else:
                assert pair[key]["value"] == pytest.approx(
                    cohen_kappa_score(ya, yb, labels=cats, weights=weights), abs=1e-12
                )


def test_individual_functions_accept_rows_and_agree_with_the_report():
    rows = random_rows("ordinal", 5)
    report = agreement_report(rows, "ordinal", bootstrap=0)
    assert krippendorff_alpha(rows, "ordinal")["value"] == report["krippendorff_alpha"]["value"]
    assert fleiss_kappa(rows)["value"] == report["fleiss_kappa"]["value"]
    assert percent_agreement(rows)["value"] == report["percent_agreement"]["value"]
    assert mean_pairwise_agreement(rows)["value"] == report["mean_pairwise_agreement"]["value"]
    assert pairwise_agreement(rows, "ordinal") == report["pairs"]
    # Unused categories do not change anything but appear in the confusion matrices.
    wide = pairwise_agreement(rows, "ordinal", categories=[0, 1, 2, 3, 4, 5, 6])
    assert wide[0]["confusion"]["labels"] == [0, 1, 2, 3, 4, 5, 6]
    assert wide[0]["cohen_kappa"] == report["pairs"][0]["cohen_kappa"]
    assert krippendorff_alpha(rows, "ordinal", categories=[0, 1, 2, 3, 4, 5, 6])[
        "value"
    ] == pytest.approx(report["krippendorff_alpha"]["value"], abs=1e-12)


def test_text_labels_at_ordinal_level_follow_the_given_category_order():
    scale = ["bad", "poor", "fair", "good", "great"]
    numeric = random_rows("ordinal", 3)
    rows = [(item, rater, scale[label - 1]) for item, rater, label in numeric]
    text = agreement_report(rows, "ordinal", categories=scale, bootstrap=0)
    ints = agreement_report(numeric, "ordinal", bootstrap=0)
    assert text["krippendorff_alpha"]["value"] == pytest.approx(
        ints["krippendorff_alpha"]["value"], abs=1e-12
    )
    for a, b in zip(text["pairs"], ints["pairs"], strict=True):
        assert a["cohen_kappa_quadratic"] == b["cohen_kappa_quadratic"]
        assert a["confusion"]["matrix"] == b["confusion"]["matrix"]
    # Alphabetical order would be a different (wrong) scale.
    shuffled = agreement_report(rows, "ordinal", categories=sorted(scale), bootstrap=0)
    assert shuffled["krippendorff_alpha"]["value"] != pytest.approx(
        text["krippendorff_alpha"]["value"]
    )


# --------------------------------------------------------------------------------------------
# Fast bootstrap paths equal the libraries on the full data and on resamples


@pytest.mark.parametrize(
    ("level", "dense"), [(level, True) for level in LEVELS] + [("ordinal", False)]
)
def test_resample_kernel_matches_libraries(level: str, dense: bool, monkeypatch):
    if not dense:  # ordinal alpha's sparse path, used when there are many category pairs
        monkeypatch.setattr(ag, "_DENSE_COINCIDENCE_CELLS", 0)
    rows = random_rows(level, 11, n_items=80, n_raters=5)
    j = encode(rows, level)
    kernel = j.kernel
    assert (kernel._sparse_coincidence is None) == dense
    pairable_items = [j.items[p] for p in kernel.pairable]
    m = len(pairable_items)

    rng = np.random.default_rng(42)
    draws = [np.arange(m)] + [rng.integers(0, m, size=m) for _ in range(4)]
    weights = np.stack([np.bincount(d, minlength=m) for d in draws])
    stats = kernel.statistics(weights)

    for b, d in enumerate(draws):
        items = [pairable_items[t] for t in d]
        assert stats["krippendorff_alpha"][b] == pytest.approx(
            reference_alpha(rows, level, items), abs=1e-10
        )
        kappa, _, _ = reference_fleiss(rows, items, ratings=kernel.fleiss_ratings)
        assert stats["fleiss_kappa"][b] == pytest.approx(kappa, abs=1e-10)
        all_agree, pairwise = reference_percent(rows, items)
        assert stats["percent_agreement"][b] == pytest.approx(all_agree, abs=1e-12)
        assert stats["mean_pairwise_agreement"][b] == pytest.approx(pairwise, abs=1e-12)


# --------------------------------------------------------------------------------------------
# Published examples


def test_fleiss_1971_wikipedia_example():
    """Wikipedia "Fleiss' kappa": 10 subjects, 14 raters, 5 categories; P-bar 0.378, kappa 0.210."""
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    rows = []
    for subject, counts in enumerate(table):
        labels = [cat for cat, count in enumerate(counts, start=1) for _ in range(count)]
        rows += [(subject, f"rater{r}", label) for r, label in enumerate(labels)]
    result = fleiss_kappa(rows)
    assert round(result["value"], 3) == 0.210
    assert (result["n_items"], result["n_items_excluded"], result["ratings_per_item"]) == (
        10,
        0,
        14,
    )
    assert round(mean_pairwise_agreement(rows)["value"], 3) == 0.378


NAN = float("nan")
# Krippendorff (2011) "Computing Krippendorff's Alpha-Reliability": observers A-D x 12 units.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
]


def matrix_rows(matrix: list[list[Any]]) -> list[Row]:
    """Rows from a raters x units matrix; NaN cells become None labels (no judgment)."""
    return [
        (unit, "ABCD"[r], None if value != value else value)
        for r, line in enumerate(matrix)
        for unit, value in enumerate(line, start=1)
    ]


@pytest.mark.parametrize(
    ("level", "published"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)],
)
def test_krippendorff_2011_example(level: str, published: float):
    rows = matrix_rows(KRIPPENDORFF_2011)
    result = krippendorff_alpha(rows, level)
    assert round(result["value"], 3) == published
    assert result["n_items"] == 11  # unit 12 has a single value
    assert result["n_pairable_judgments"] == 40
    # Bootstrap full-data point through the fast path too.
    full = encode(rows, level).kernel.statistics(np.ones(11))["krippendorff_alpha"][0]
    assert round(float(full), 3) == published


def test_krippendorff_2011_example_with_text_values():
    scale = ["very low", "low", "mid", "high", "very high"]
    text = [[NAN if v != v else scale[int(v) - 1] for v in line] for line in KRIPPENDORFF_2011]
    rows = matrix_rows(text)
    assert round(krippendorff_alpha(rows, "ordinal", categories=scale)["value"], 3) == 0.815
    assert round(krippendorff_alpha(rows, "nominal")["value"], 3) == 0.743


def test_krippendorff_package_example_with_sparse_units():
    """fast-krippendorff README: 3 coders x 15 units; nominal 0.691358, interval 0.810845."""
    data = [
        [NAN, NAN, NAN, NAN, NAN, 3, 4, 1, 2, 1, 1, 3, 3, NAN, 3],
        [1, NAN, 2, 1, 3, 3, 4, 3, NAN, NAN, NAN, NAN, NAN, NAN, NAN],
        [NAN, NAN, 2, 1, 3, 4, 4, NAN, 2, 1, 1, 3, 3, NAN, 4],
    ]
    rows = matrix_rows(data)
    assert round(krippendorff_alpha(rows, "nominal")["value"], 6) == 0.691358
    assert round(krippendorff_alpha(rows, "interval")["value"], 6) == 0.810845


def test_cohen_kappa_wikipedia_example():
    """Wikipedia "Cohen's kappa": 50 proposals, yes/yes 20, yes/no 5, no/yes 10, no/no 15."""
    pairs = [("yes", "yes")] * 20 + [("yes", "no")] * 5 + [("no", "yes")] * 10 + [("no", "no")] * 15
    rows = [(i, "A", a) for i, (a, _) in enumerate(pairs)]
    rows += [(i, "B", b) for i, (_, b) in enumerate(pairs)]
    (pair,) = pairwise_agreement(rows)
    assert pair["cohen_kappa"]["value"] == pytest.approx(0.4)
    assert pair["percent_agreement"] == pytest.approx(0.7)
    assert pair["confusion"] == {"labels": ["no", "yes"], "matrix": [[15, 10], [5, 20]]}
    assert percent_agreement(rows)["value"] == pytest.approx(0.7)


# --------------------------------------------------------------------------------------------
# Bootstrap


def test_bootstrap_is_reproducible_and_contains_the_estimate():
    rows = random_rows("ordinal", 7, n_items=300, n_raters=3, missing=0.1)
    first = agreement_report(rows, "ordinal", bootstrap=500, seed=123)
    again = agreement_report(rows, "ordinal", bootstrap=500, seed=123)
    other = agreement_report(rows, "ordinal", bootstrap=500, seed=124)
    assert first == again
    for name in ag.BOOTSTRAP_STATISTICS:
        stat = first[name]
        ci = stat["ci"]
        assert ci["n_resamples"] == ci["n_valid"] == 500
        assert ci["confidence"] == 0.95
        assert ci["low"] < stat["value"] < ci["high"], name
        assert ci["high"] - ci["low"] < 0.3, name
        assert other[name]["ci"] != ci
        assert other[name]["value"] == stat["value"]


def test_bootstrap_intervals_function_and_zero_resamples():
    rows = random_rows("nominal", 8)
    j = encode(rows)
    assert bootstrap_intervals(j, n_resamples=200, seed=1) == bootstrap_intervals(
        rows, n_resamples=200, seed=1
    )
    report = agreement_report(rows, "nominal", bootstrap=0)
    assert all(report[name]["ci"] is None for name in ag.BOOTSTRAP_STATISTICS)
    assert report["bootstrap"]["n_resamples"] == 0


def test_bootstrap_width_shrinks_with_more_items():
    small = agreement_report(random_rows("interval", 9, n_items=60), "interval", bootstrap=400)
    large = agreement_report(random_rows("interval", 9, n_items=1500), "interval", bootstrap=400)

    def width(report: dict[str, Any]) -> float:
        ci = report["krippendorff_alpha"]["ci"]
        return ci["high"] - ci["low"]

    assert width(large) < width(small) / 2


def test_bootstrap_skips_resamples_where_a_statistic_is_undefined():
    # 3 items; only one shows any disagreement, so some resamples have no variation at all.
    rows = [(i, r, "a") for i in range(2) for r in ("x", "y")] + [(2, "x", "a"), (2, "y", "b")]
    report = agreement_report(rows, "nominal", bootstrap=200, seed=0)
    ci = report["krippendorff_alpha"]["ci"]
    assert 0 < ci["n_valid"] < 200
    assert ci["low"] is not None and ci["high"] is not None
    json.dumps(report, allow_nan=False)


# --------------------------------------------------------------------------------------------
# Degenerate input: None with a reason, never NaN or an exception


def assert_undefined(stat: dict[str, Any], reason: str) -> None:
    assert stat["value"] is None
    assert stat["reason"] == reason
    assert stat.get("ci") is None


def test_no_items():
    report = agreement_report([], "nominal")
    for name in ag.BOOTSTRAP_STATISTICS:
        assert_undefined(report[name], ag.REASON_NO_JUDGMENTS)
    assert report["pairs"] == [] and report["raters"] == []
    assert report["n_items"] == report["n_judgments"] == 0
    json.dumps(report, allow_nan=False)


def test_only_missing_labels_count_as_no_judgments():
    rows = [(1, "a", None), (1, "b", float("nan"))]
    report = agreement_report(rows, "nominal")
    assert_undefined(report["krippendorff_alpha"], ag.REASON_NO_JUDGMENTS)
    (pair,) = report["pairs"]
    assert pair["n_items"] == 0 and pair["percent_agreement"] is None
    assert_undefined(pair["cohen_kappa"], ag.REASON_NO_OVERLAP)


def test_single_rater():
    rows = [(i, "solo", i % 3) for i in range(20)]
    report = agreement_report(rows, "ordinal")
    for name in ag.BOOTSTRAP_STATISTICS:
        assert_undefined(report[name], ag.REASON_ONE_RATER)
    assert report["pairs"] == []
    assert report["raters"][0]["n_items"] == 20
    json.dumps(report, allow_nan=False)


@pytest.mark.parametrize("level", LEVELS)
def test_all_raters_always_agree_on_one_label(level: str):
    label = LABELS[level][1]
    rows = [(i, r, label) for i in range(30) for r in ("a", "b", "c")]
    report = agreement_report(rows, level, categories=LABELS[level])
    assert report["percent_agreement"]["value"] == 1.0
    assert report["percent_agreement"]["ci"]["low"] == report["percent_agreement"]["ci"]["high"]
    assert_undefined(report["fleiss_kappa"], ag.REASON_FLEISS_ONE_LABEL)
    assert report["fleiss_kappa"]["n_items"] == 30
    assert_undefined(report["krippendorff_alpha"], ag.REASON_ALPHA_NO_VARIATION)
    for pair in report["pairs"]:
        assert pair["percent_agreement"] == 1.0
        assert_undefined(pair["cohen_kappa"], ag.REASON_KAPPA_ONE_LABEL)
        if level != "nominal":
            assert_undefined(pair["cohen_kappa_quadratic"], ag.REASON_KAPPA_ONE_LABEL)
    json.dumps(report, allow_nan=False)


def test_raters_who_never_overlap():
    rows = [(1, "a", "x"), (2, "b", "y"), (3, "a", "y")]
    report = agreement_report(rows, "nominal")
    assert_undefined(report["percent_agreement"], ag.REASON_NO_PAIRABLE)
    assert_undefined(report["krippendorff_alpha"], ag.REASON_NO_PAIRABLE)
    assert_undefined(report["pairs"][0]["cohen_kappa"], ag.REASON_NO_OVERLAP)


def test_perfect_agreement_with_variation_is_one():
    rows = [(i, r, i % 4) for i in range(40) for r in ("a", "b", "c")]
    report = agreement_report(rows, "interval", bootstrap=100)
    assert report["krippendorff_alpha"]["value"] == pytest.approx(1.0)
    assert report["fleiss_kappa"]["value"] == pytest.approx(1.0)
    assert report["pairs"][0]["cohen_kappa"]["value"] == pytest.approx(1.0)
    assert report["krippendorff_alpha"]["ci"]["low"] == pytest.approx(1.0)


def test_fleiss_uses_the_most_common_number_of_ratings():
    rows = [(i, r, (i + k) % 2) for i in range(6) for k, r in enumerate("abc")]
    rows += [(i, r, i % 2) for i in range(6, 10) for r in "ab"]
    rows += [(10, "a", 0)]  # a single rating: never counted
    result = fleiss_kappa(rows)
    assert (result["n_items"], result["n_items_excluded"], result["ratings_per_item"]) == (
        6,
        4,
        3,
    )
    # Ties go to the larger number of ratings.
    rows = [(i, r, i % 2) for i in range(4) for r in "abc"]
    rows += [(i, r, (i // 2) % 2) for i in range(4, 8) for r in "ab"]
    assert fleiss_kappa(rows)["ratings_per_item"] == 3


# --------------------------------------------------------------------------------------------
# Per rater, label order, validation


def test_per_rater_final_agreement_and_median_time():
    rows = [
        ("q1", "ann", "yes"),
        ("q2", "ann", "no"),
        ("q3", "ann", "yes"),
        ("q1", "bob", "no"),
        ("q4", "bob", "yes"),
        ("q1", "cy", None),
    ]
    final = {"q1": "yes", "q2": "yes", "q3": "yes", "q9": "no"}
    times = {("q1", "ann"): 30.0, ("q2", "ann"): 10, ("q3", "ann"): 20.0, ("q1", "bob"): None}
    ann, bob, cy = agreement_report(rows, "nominal", final=final, times=times)["raters"]
    assert ann == {
        "rater": "ann",
        "n_items": 3,
        "agreement_with_final": pytest.approx(2 / 3),
        "n_final_compared": 3,
        "median_seconds": 20.0,
        "n_timed": 3,
    }
    assert (bob["n_items"], bob["agreement_with_final"], bob["n_final_compared"]) == (2, 0.0, 1)
    assert (bob["median_seconds"], bob["n_timed"]) == (None, 0)
    assert (cy["n_items"], cy["agreement_with_final"], cy["median_seconds"]) == (0, None, None)
    # A final label that no rater used counts as a disagreement.
    (ann,) = [r for r in per_rater_summary(rows, final={"q1": "maybe"}) if r["rater"] == "ann"]
    assert (ann["agreement_with_final"], ann["n_final_compared"]) == (0.0, 1)


def test_confusion_matrix_follows_category_order():
    rows = [(1, "a", "c"), (1, "b", "a"), (2, "a", "c"), (2, "b", "c"), (3, "a", "b")]
    (pair,) = pairwise_agreement(rows, categories=["c", "a", "b"])
    assert pair["confusion"] == {
        "labels": ["c", "a", "b"],
        "matrix": [[1, 1, 0], [0, 0, 0], [0, 0, 0]],
    }
    assert pair["n_items"] == 2


@pytest.mark.parametrize(
    ("rows", "level", "categories", "message"),
    [
        ([(1, "a", "x"), (1, "a", "y")], "nominal", None, "more than once"),
        ([(1, "a", "x")], "nominal", ["y"], "not one of the categories"),
        ([(1, "a", "low")], "ordinal", None, "need `categories`"),
        ([(1, "a", "low")], "interval", ["low"], "numeric"),
        ([(1, "a", 1)], "nominal", [1, 1], "duplicates"),
        ([(1, "a", 1)], "binary", None, "level must be one of"),
    ],
)
def test_invalid_input_raises_value_error(rows, level, categories, message):
    with pytest.raises(ValueError, match=message):
        agreement_report(rows, level, categories=categories)


def test_report_is_plain_json():
    rows = [(np.int64(i[4:]), r, np.float64(v)) for i, r, v in random_rows("interval", 4)]
    report = agreement_report(rows, "interval", bootstrap=50)
    assert json.loads(json.dumps(report, allow_nan=False)) == report
    assert all(type(c) is float for c in report["categories"])
