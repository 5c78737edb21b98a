"""Judge calibration against people (issue 26): kappa, its bootstrap interval, true- and
false-positive rates with Wilson intervals, a reliability diagram for graded scores, per
criterion, and the flag below the reviewer's threshold; hand-computed and checked against
scikit-learn and statsmodels."""

from __future__ import annotations

import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from benchmark.metrics.judge_rater import judge_calibration


def _yes_no() -> tuple[list[tuple[str, str, int]], dict[str, int]]:
    """Ten units, two people agreeing on each (so the majority is theirs): yes on u0..u5.
    The judge says yes on u0..u4 (5 of the 6 yes) and on u6 (1 of the 4 no)."""
    people = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    judge = [1, 1, 1, 1, 1, 0, 1, 0, 0, 0]
    rows = [(f"u{n}", who, v) for n, v in enumerate(people) for who in ("ann", "bob")]
    return rows, {f"u{n}": v for n, v in enumerate(judge)}


def test_yes_no_judge_hand_computed() -> None:
    rows, judge = _yes_no()
    report = judge_calibration(rows, judge, "nominal", [0, 1], threshold=0.6)
    overall = report["overall"]
    # po = 8/10; pe = 0.6 * 0.6 + 0.4 * 0.4 = 0.52; kappa = 0.28 / 0.48
    assert overall["kappa"]["value"] == pytest.approx(0.28 / 0.48)
    people = [1] * 6 + [0] * 4
    assert overall["kappa"]["value"] == pytest.approx(
        cohen_kappa_score([judge[f"u{n}"] for n in range(10)], people)
    )
    assert overall["percent_agreement"] == pytest.approx(0.8)
    tpr, fpr = overall["true_positive_rate"], overall["false_positive_rate"]
    assert (tpr["value"], tpr["n"]) == (pytest.approx(5 / 6), 6)
    assert (fpr["value"], fpr["n"]) == (pytest.approx(1 / 4), 4)
    assert tpr["interval"] == pytest.approx(list(proportion_confint(5, 6, method="wilson")))
    low, high = overall["kappa"]["interval"]["low"], overall["kappa"]["interval"]["high"]
    assert low <= overall["kappa"]["value"] <= high and high <= 1.0
    assert overall["flagged"] is True  # 0.583 < 0.6
    assert (
        judge_calibration(rows, judge, "nominal", [0, 1], threshold=0.5)["overall"]["flagged"]
        is False
    )
    # Seeded: the same interval twice.
    again = judge_calibration(rows, judge, "nominal", [0, 1], threshold=0.6)
    assert again["overall"]["kappa"]["interval"] == overall["kappa"]["interval"]
    assert report["groups"] == []  # no group_of: the whole only


def test_ties_and_missing_judge_values_are_left_out() -> None:
    rows = [("a", "ann", 1), ("a", "bob", 0), ("b", "ann", 1), ("c", "ann", 0)]
    report = judge_calibration(rows, {"a": 1, "b": 1, "c": None}, "nominal", [0, 1])
    assert report["n_ties"] == 1
    assert report["overall"]["n_units"] == 1  # only b: a tied, c without a judge value
    # One unit, one label: kappa undefined, flagged, said why.
    assert report["overall"]["kappa"]["value"] is None
    assert report["overall"]["kappa"]["reason"]
    assert report["overall"]["flagged"] is True


def test_graded_per_criterion_with_a_reliability_diagram() -> None:
    # Criterion r1: the judge scores one above people on every unit; r2: it matches them.
    people = {("x", "r1"): 0, ("y", "r1"): 1, ("z", "r1"): 1, ("x", "r2"): 2, ("y", "r2"): 0}
    rows = [(f"response:{1 + 'xyz'.index(a)}:{c}", "pat", v) for (a, c), v in people.items()]
    judge = {
        "response:1:r1": 1, "response:2:r1": 2, "response:3:r1": 2,
        "response:1:r2": 2, "response:2:r2": 0,
    }  # fmt: skip
    report = judge_calibration(
        rows, judge, "ordinal", [0, 1, 2], group_of=lambda u: u.rsplit(":", 1)[1], threshold=0.6
    )
    groups = {g["group"]: g for g in report["groups"]}
    assert groups["r2"]["kappa"]["value"] == pytest.approx(1.0)
    assert groups["r2"]["flagged"] is False
    r1 = groups["r1"]
    assert r1["kappa"]["value"] == pytest.approx(
        cohen_kappa_score([1, 2, 2], [0, 1, 1], weights="quadratic", labels=[0, 1, 2])
    )
    assert r1["flagged"] is True
    # Reliability diagram of r1: judge 1 -> people 0 (1 unit); judge 2 -> people 1 (2 units).
    assert r1["reliability"] == [
        {"judge": 1, "n": 1, "people_mean": 0.0, "agree": 0.0},
        {"judge": 2, "n": 2, "people_mean": 1.0, "agree": 0.0},
    ]
    assert "true_positive_rate" not in r1  # not a yes/no scale
    assert report["overall"]["n_units"] == 5


def test_a_judge_value_off_the_scale_is_refused() -> None:
    with pytest.raises(ValueError, match="not on the people's scale"):
        judge_calibration([("a", "ann", 1)], {"a": 7}, "nominal", [0, 1])
