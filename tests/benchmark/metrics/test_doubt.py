"""Doubt (issue 26, routing by doubt): hand-computed values on a yes/no scale, outside signals
raising it, the serving order for reliable and unreliable annotators, and the simulation of
tests/perf/sim_routing.py showing routing by doubt needing fewer judgments than the id order."""

from __future__ import annotations

import pytest

from benchmark.metrics.doubt import SIGNAL_WEIGHT, Evidence, doubt, serving_order
from tests.perf.sim_routing import needed, simulate


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        ({}, 1.0),  # nothing known: p = 1/2
        ({"yes": 1, "no": 1}, 1.0),  # split: (1 + 1) / (2 + 2)
        ({"yes": 2, "no": 1}, 0.8),  # (2 + 1) / (3 + 2) = 0.6 -> 0.4 / 0.5
        ({"yes": 1}, 2 / 3),  # (1 + 1) / (1 + 2)
        ({"yes": 2}, 0.5),  # 3 / 4
        ({"yes": 3}, 0.4),  # 4 / 5
    ],
)
def test_doubt_from_votes_on_a_yes_no_scale(votes: dict[str, int], expected: float) -> None:
    assert doubt(Evidence(votes=votes, n_labels=2)) == pytest.approx(expected)


def test_more_labels_posterior_and_signals() -> None:
    # Five labels, one judgment: p = 2/6, scaled by 1 - 1/5.
    assert doubt(Evidence(votes={"b": 1}, n_labels=5)) == pytest.approx((1 - 2 / 6) / 0.8)
    # An aggregated posterior replaces the votes.
    assert doubt(Evidence(votes={"b": 1}, n_labels=2, posterior=0.9)) == pytest.approx(0.2)
    sure = Evidence(votes={"yes": 3}, n_labels=2, posterior=1.0)
    assert doubt(sure) == 0.0
    judge = Evidence(votes={"yes": 3}, n_labels=2, posterior=1.0, judge_disagrees=True)
    assert doubt(judge) == pytest.approx(SIGNAL_WEIGHT)
    both = Evidence(votes={}, n_labels=2, posterior=0.75, judge_disagrees=True, models_wrong=1.0)
    assert doubt(both) == pytest.approx(1 - 0.5 * (1 - SIGNAL_WEIGHT) ** 2)
    assert 0.0 <= doubt(Evidence(votes={"x": -3}, n_labels=0, models_wrong=7)) <= 1.0


def test_serving_order() -> None:
    doubts = {"a": 0.5, "b": 1.0, "c": 0.5, "d": 0.1}
    positions = {"a": 3, "b": 4, "c": 1, "d": 2}
    assert serving_order(doubts, positions) == ["b", "c", "a", "d"]
    assert serving_order(doubts, positions, reliable=False) == ["d", "c", "a", "b"]


def test_routing_by_doubt_needs_fewer_judgments_than_the_id_order() -> None:
    common = {"items": 120, "labels": 2, "overlap": 3, "skills": [0.95, 0.9, 0.85, 0.7, 0.6]}
    runs = {
        policy: simulate(**common, policy=policy, reliable=0.75, seed=1)  # type: ignore[arg-type]
        for policy in ("id order", "doubt", "doubt + reliability")
    }
    budget = 120 * 3
    assert all(len(curve) == budget + 1 for curve in runs.values())  # every judgment made
    by_id = needed(runs["id order"], 0.8)
    assert by_id is not None
    by_doubt = needed(runs["doubt"], 0.8)
    assert by_doubt is not None and by_doubt < by_id
    assert runs["doubt + reliability"][-1] >= runs["id order"][-1]
