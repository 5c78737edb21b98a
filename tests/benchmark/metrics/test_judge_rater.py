"""The judge as a rater: figures computed by hand on small data (and checked against sklearn
and krippendorff where those compute the same thing)."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from benchmark.metrics.judge_rater import judge_as_rater

# Three people rate units u1..u6 yes (1) / no (0); the judge rates u1..u5 and u7, and failed
# on u6 (None). u7 has no human rating.
PEOPLE = {
    "ann": {"u1": 1, "u2": 1, "u3": 1, "u4": 1, "u5": 1, "u6": 1},
    "bob": {"u1": 1, "u2": 0, "u3": 0, "u4": 1, "u5": 1},
    "cat": {"u1": 1, "u2": 1, "u3": 0, "u4": 0, "u6": 0},
}
JUDGE = {"u1": 1, "u2": 1, "u3": 1, "u4": 0, "u5": 0, "u6": None, "u7": 1}
ROWS = [(unit, rater, v) for rater, units in PEOPLE.items() for unit, v in units.items()]


@pytest.fixture(scope="module")
def binary() -> dict:
    return judge_as_rater(ROWS, JUDGE, "nominal", categories=[0, 1])


def person(report: dict, name: str) -> dict:
    return next(p for p in report["persons"] if p["rater"] == name)


def test_judge_against_each_person(binary: dict) -> None:
    # ann: pairs (judge, ann) on u1..u5 = (1,1) (1,1) (1,1) (0,1) (0,1): po = 3/5; judge
    # marginals [2, 3], ann [0, 5]: pe = (0 + 15) / 25 = 0.6, kappa = 0.
    ann = person(binary, "ann")
    assert ann["n_units"] == 5 and ann["n_rated"] == 6
    assert ann["confusion"] == {"labels": [0, 1], "matrix": [[0, 2], [0, 3]]}
    assert ann["percent_agreement"] == pytest.approx(0.6)
    assert ann["cohen_kappa"]["value"] == pytest.approx(0.0)
    # bob: (1,1) (1,0) (1,0) (0,1) (0,1): po = 0.2; marginals [2, 3] and [2, 3]: pe = 0.52;
    # kappa = (0.2 - 0.52) / 0.48 = -2/3.
    bob = person(binary, "bob")
    assert bob["confusion"]["matrix"] == [[0, 2], [2, 1]]
    assert bob["percent_agreement"] == pytest.approx(0.2)
    assert bob["cohen_kappa"]["value"] == pytest.approx(-2 / 3)
    # cat rated u6, which the judge did not: 4 in common. (1,1) (1,1) (1,0) (0,0): po = 3/4;
    # marginals [1, 3] and [2, 2]: pe = 1/2, kappa = 1/2.
    cat = person(binary, "cat")
    assert cat["n_units"] == 4
    assert cat["confusion"]["matrix"] == [[1, 0], [1, 2]]
    assert cat["cohen_kappa"]["value"] == pytest.approx(0.5)
    # Same as sklearn on the same pairs.
    common = [u for u in PEOPLE["cat"] if JUDGE.get(u) is not None]
    assert cat["cohen_kappa"]["value"] == pytest.approx(
        cohen_kappa_score([JUDGE[u] for u in common], [PEOPLE["cat"][u] for u in common])
    )
    # Nominal: no weighted kappa.
    assert "cohen_kappa_quadratic" not in cat


def test_judge_against_the_majority_leaves_ties_out(binary: dict) -> None:
    # Majority: u1 1 (1,1,1), u2 1 (1,0,1), u3 0 (1,0,0), u4 1 (1,1,0), u5 1 (1,1); u6 is a
    # tie (ann 1, cat 0). Judge vs majority on u1..u5: (1,1) (1,1) (1,0) (0,1) (0,1): po 0.4,
    # marginals [2, 3] and [1, 4]: pe = 14/25, kappa = (0.4 - 0.56) / 0.44 = -4/11.
    majority = binary["majority"]
    assert majority["n_units_with_majority"] == 5
    assert majority["n_ties"] == 1
    assert majority["n_without_judge"] == 0
    assert majority["n_units"] == 5
    assert majority["confusion"] == {"labels": [0, 1], "matrix": [[0, 2], [1, 2]]}
    assert majority["percent_agreement"] == pytest.approx(0.4)
    assert majority["cohen_kappa"]["value"] == pytest.approx(-4 / 11)


def test_alpha_with_and_without_the_judge(binary: dict) -> None:
    # People: coincidences o00 = 1, o01 = o10 = 4, o11 = 7 (n = 16, n0 = 5, n1 = 11);
    # alpha = 1 - (n - 1) * 8 / (2 * 5 * 11) = -1/11.
    assert binary["alpha"]["people"]["value"] == pytest.approx(-1 / 11)
    # With the judge (u7 alone is not pairable): o00 = 4/3, o01 = o10 = 17/3, o11 = 25/3
    # (n = 21, n0 = 7, n1 = 14): alpha = 1 - 20 * (34/3) / (2 * 7 * 14) = -23/147.
    assert binary["alpha"]["people_and_judge"]["value"] == pytest.approx(-23 / 147)
    units = ["u1", "u2", "u3", "u4", "u5", "u6", "u7"]
    matrix = [
        [np.nan if PEOPLE[r].get(u) is None else PEOPLE[r][u] for u in units] for r in PEOPLE
    ] + [[np.nan if JUDGE.get(u) is None else JUDGE[u] for u in units]]
    assert binary["alpha"]["people_and_judge"]["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    )


def test_counts(binary: dict) -> None:
    assert binary["n_units"] == 6
    assert binary["n_raters"] == 3
    assert binary["judge"] == {"n_units": 6, "n_missing": 1, "n_units_rated_by_people": 5}
    assert binary["categories"] == [0, 1]


def test_ordinal_quadratic_weighted_kappa() -> None:
    # Pairs (judge, person): (0,0) (1,2) (2,2) (2,1). Unweighted: po = 1/2, pe = 6/16,
    # kappa = 0.2. Quadratic: observed sum w * cm = 1 + 1 = 2; expected sum w * r c / n =
    # 22 / 4 = 5.5; kappa = 1 - 2 / 5.5 = 7/11.
    rows = [("a", "pat", 0), ("b", "pat", 2), ("c", "pat", 2), ("d", "pat", 1)]
    judge = {"a": 0, "b": 1, "c": 2, "d": 2}
    report = judge_as_rater(rows, judge, "ordinal", categories=[0, 1, 2])
    pat = report["persons"][0]
    assert pat["confusion"]["matrix"] == [[1, 0, 0], [0, 0, 1], [0, 1, 1]]
    assert pat["cohen_kappa"]["value"] == pytest.approx(0.2)
    assert pat["cohen_kappa_quadratic"]["value"] == pytest.approx(7 / 11)
    assert pat["cohen_kappa_quadratic"]["value"] == pytest.approx(
        cohen_kappa_score([0, 1, 2, 2], [0, 2, 2, 1], weights="quadratic")
    )
    # One person: every unit has a majority (that person's value), no ties.
    assert report["majority"]["n_ties"] == 0
    assert report["majority"]["cohen_kappa_quadratic"]["value"] == pytest.approx(7 / 11)
    # Alpha of one person alone is undefined, with a reason; with the judge it is defined.
    assert report["alpha"]["people"]["value"] is None
    assert report["alpha"]["people"]["reason"]
    assert report["alpha"]["people_and_judge"]["value"] is not None


def test_no_common_unit_gives_reasons_not_errors() -> None:
    report = judge_as_rater([("a", "pat", 1), ("a", "sam", 1)], {"b": 0}, categories=[0, 1])
    pat = report["persons"][0]
    assert pat["n_units"] == 0 and pat["percent_agreement"] is None
    assert pat["cohen_kappa"]["value"] is None and pat["cohen_kappa"]["reason"]
    assert report["majority"]["n_units"] == 0 and report["majority"]["n_without_judge"] == 1


def test_the_judge_never_collides_with_a_person_called_judge() -> None:
    rows = [("a", "judge", 1), ("b", "judge", 0)]
    report = judge_as_rater(rows, {"a": 1, "b": 0}, categories=[0, 1])
    assert [p["rater"] for p in report["persons"]] == ["judge"]
    assert report["persons"][0]["percent_agreement"] == 1.0
    assert report["alpha"]["people_and_judge"]["value"] == pytest.approx(1.0)


def test_a_judge_value_off_the_scale_is_refused() -> None:
    with pytest.raises(ValueError, match="not one of the categories"):
        judge_as_rater([("a", "pat", 1)], {"a": 3}, categories=[0, 1])
