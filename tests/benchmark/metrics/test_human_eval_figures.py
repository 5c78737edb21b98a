"""Figures of a human evaluation, checked by hand: means with bootstrap intervals, win rates
with ties counted half, and Bradley-Terry strengths."""

from __future__ import annotations

import math

import pytest

from benchmark.metrics.human_eval import REGULARISATION, bradley_terry, group_means, win_rates


def _by(figures: dict, key: str = "group") -> dict:
    return {g[key]: g for g in figures}


def test_mean_counts_every_rating_once_and_resamples_answers() -> None:
    rows = [
        ("u1", "alpha", 1), ("u1", "alpha", 2),  # answer mean 1.5
        ("u2", "alpha", 4), ("u2", "alpha", 5),  # answer mean 4.5
        ("u3", "beta", 3), ("u3", "beta", None),  # None: no rating
    ]  # fmt: skip
    out = group_means(rows, groups=["beta", "alpha", "gamma"], n_resamples=400, seed=3)
    assert [g["group"] for g in out["groups"]] == ["beta", "alpha", "gamma"]
    alpha, beta, gamma = (_by(out["groups"])[k] for k in ("alpha", "beta", "gamma"))
    assert (alpha["mean"], alpha["n_units"], alpha["n_ratings"]) == (3.0, 2, 4)
    # A resample holds u1 and u2 in some mix: its mean lies between 1.5 and 4.5, and both
    # ends occur (each resample of two draws is u1 twice with probability 1/4).
    assert alpha["ci"]["low"] == 1.5 and alpha["ci"]["high"] == 4.5
    # One answer: every resample is that answer.
    assert (beta["mean"], beta["ci"]["low"], beta["ci"]["high"]) == (3.0, 3.0, 3.0)
    assert (gamma["mean"], gamma["ci"], gamma["n_units"]) == (None, None, 0)
    assert out["bootstrap"] == {
        "n_resamples": 400, "seed": 3, "confidence": 0.95, "method": "percentile",
    }  # fmt: skip


def test_the_same_seed_gives_the_same_interval() -> None:
    rows = [(f"u{k}", "m", (k * 7) % 5 + 1) for k in range(30)]
    first = group_means(rows, n_resamples=300, seed=11)["groups"][0]["ci"]
    again = group_means(rows, n_resamples=300, seed=11)["groups"][0]["ci"]
    other = group_means(rows, n_resamples=300, seed=12)["groups"][0]["ci"]
    assert first == again
    assert (first["low"], first["high"]) != (other["low"], other["high"])
    mean = sum((k * 7) % 5 + 1 for k in range(30)) / 30
    assert first["low"] < mean < first["high"]


def test_a_rating_that_is_not_a_number_is_refused() -> None:
    with pytest.raises(ValueError, match="not a number"):
        group_means([("u", "m", "five")])
    with pytest.raises(ValueError, match="not a number"):
        group_means([("u", "m", True)])


def test_win_rates_count_a_tie_as_half_a_win() -> None:
    rows = [
        # pair p1: alpha shown as A, beta as B; three raters
        ("p1", "alpha", "beta", "a"),
        ("p1", "alpha", "beta", "a"),
        ("p1", "alpha", "beta", "tie"),
        # pair p2: gamma as A, alpha as B
        ("p2", "gamma", "alpha", "a"),
        ("p2", "gamma", "alpha", None),
    ]
    out = win_rates(rows, models=["alpha", "beta", "gamma"], n_resamples=200, seed=0)
    alpha, beta, gamma = (_by(out["models"], "model")[k] for k in ("alpha", "beta", "gamma"))
    assert (alpha["wins"], alpha["losses"], alpha["ties"], alpha["n"]) == (2, 1, 1, 4)
    assert alpha["rate"] == pytest.approx(100 * 2.5 / 4)
    assert (beta["wins"], beta["losses"], beta["ties"]) == (0, 2, 1)
    assert beta["rate"] == pytest.approx(100 * 0.5 / 3)
    assert gamma["rate"] == 100.0 and gamma["n_pairs"] == 1
    assert out["pairs"] == [
        {"a": "alpha", "b": "beta", "a_wins": 2, "b_wins": 0, "ties": 1, "n": 3,
         "rate_a": pytest.approx(100 * 2.5 / 3)},
        {"a": "alpha", "b": "gamma", "a_wins": 0, "b_wins": 1, "ties": 0, "n": 1, "rate_a": 0.0},
    ]  # fmt: skip
    # alpha's pairs: p1 scores 2.5 of 3, p2 0 of 1: a resample is p1 twice (83.3 %),
    # p2 twice (0 %) or one of each (62.5 %).
    assert alpha["ci"]["low"] == pytest.approx(0.0)
    assert alpha["ci"]["high"] == pytest.approx(100 * 2.5 / 3)
    with pytest.raises(ValueError, match="not one of a, b, tie"):
        win_rates([("p", "x", "y", "left")])


def _theta(result: dict) -> dict:
    return {m["model"]: m["theta"] for m in result["models"]}


def test_bradley_terry_two_models_three_wins_to_one() -> None:
    # MLE: p_x / (p_x + p_y) = 3/4, so theta_x - theta_y = ln 3 (centred: +-ln 3 / 2).
    rows = [("x", "y", "a"), ("y", "x", "b"), ("x", "y", "a"), ("x", "y", "b")]
    out = bradley_terry(rows)
    assert _theta(out)["x"] == pytest.approx(math.log(3) / 2, abs=1e-6)
    assert _theta(out)["y"] == pytest.approx(-math.log(3) / 2, abs=1e-6)
    assert [m["model"] for m in out["models"]] == ["x", "y"]
    assert [m["share"] for m in out["models"]] == [pytest.approx(75.0), pytest.approx(25.0)]
    assert (out["alpha"], out["note"], out["n"]) == (0.0, "", 4)


def test_bradley_terry_counts_a_tie_as_half_a_win() -> None:
    # x: 2 wins and a tie = 2.5 of 3, y: 0.5 of 3, so p_x / p_y = 5.
    rows = [("x", "y", "a"), ("y", "x", "b"), ("x", "y", "tie")]
    theta = _theta(bradley_terry(rows))
    assert theta["x"] - theta["y"] == pytest.approx(math.log(5), abs=1e-6)


def test_bradley_terry_three_models_with_a_closed_form() -> None:
    # Strengths 4 : 2 : 1 make these win counts their expectations exactly, so the maximum
    # likelihood estimate is (4, 2, 1): theta = (ln 2, 0, -ln 2) once centred.
    rows = (
        [("a", "b", "a")] * 2 + [("a", "b", "b")]  # p_a / (p_a + p_b) = 2/3 of 3
        + [("b", "c", "a")] * 2 + [("c", "b", "a")]  # 2/3 of 3
        + [("a", "c", "a")] * 4 + [("c", "a", "a")]  # 4/5 of 5
    )  # fmt: skip
    out = bradley_terry(rows)
    theta = _theta(out)
    assert theta["a"] == pytest.approx(math.log(2), abs=1e-6)
    assert theta["b"] == pytest.approx(0.0, abs=1e-6)
    assert theta["c"] == pytest.approx(-math.log(2), abs=1e-6)
    assert [(m["model"], m["rank"]) for m in out["models"]] == [("a", 1), ("b", 2), ("c", 3)]
    assert [m["share"] for m in out["models"]] == pytest.approx([400 / 7, 200 / 7, 100 / 7])


def test_bradley_terry_regularises_when_a_model_never_lost() -> None:
    out = bradley_terry([("x", "y", "a"), ("y", "x", "b")], models=["x", "y", "z"])
    assert out["alpha"] == REGULARISATION
    assert "never lost" in out["note"]
    # z has no comparison: it is not ranked at all.
    assert [(m["model"], m["rank"]) for m in out["models"]] == [("x", 1), ("y", 2)]
    assert out["models"][0]["share"] > 99
    with pytest.raises(ValueError, match="alpha > 0"):
        bradley_terry([("x", "y", "a")], alpha=0)


def test_bradley_terry_needs_two_models() -> None:
    out = bradley_terry([], models=["x"])
    assert out["models"] == [] and "at least two models" in out["note"]
    cycle = bradley_terry([("a", "b", "a"), ("b", "c", "a"), ("c", "a", "a")])
    assert all(abs(t) < 1e-6 for t in _theta(cycle).values())
