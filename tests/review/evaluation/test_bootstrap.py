"""The leaderboard's bootstrap intervals: figures a protocol gives as ratios of per-item sums
are resampled as arrays, and give the intervals the definition gives (the protocol's own
``summarize`` on each seeded resample), for means, pooled rates and per-level means alike;
any other figure still comes from ``summarize``. Pure: no database."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from benchmark.evaluation.agentic_mme import PROTOCOL as MME
from benchmark.evaluation.atp import PROTOCOL as ATP
from benchmark.evaluation.base import Outcome, Ratio, Status
from benchmark.evaluation.llmi import PROTOCOL as LLMI
from benchmark.metrics import agentic_mme as mme
from review.evaluation.services import bootstrap_intervals, figure


def by_summarize(
    protocol: Any, outcomes: list[Outcome], keys: list[str], *, resamples: int, seed: int
) -> dict[str, list[float]]:
    """The definition, as the runner computed it before: ``summarize`` on every resample."""
    rng = np.random.default_rng(seed)
    n = len(outcomes)
    draws: dict[str, list[float]] = {key: [] for key in keys}
    for _ in range(resamples):
        summary = protocol.summarize([outcomes[i] for i in rng.integers(0, n, n)])
        for key in keys:
            value = figure(summary, key)
            if value is not None:
                draws[key].append(value)
    out = {}
    for key, values in draws.items():
        if len(values) >= resamples // 2:
            low, high = np.percentile(values, [2.5, 97.5])
            out[key] = [round(float(low), 6), round(float(high), 6)]
    return out


def assert_same(got: dict[str, list[float]], want: dict[str, list[float]]) -> None:
    """The same keys, and bounds equal up to the last rounded digit (sums taken in another
    order differ in the last bits of a float)."""
    assert set(got) == set(want)
    for key in want:
        assert got[key] == pytest.approx(want[key], abs=2e-6), key


def atp_outcomes(n: int, seed: int) -> list[Outcome]:
    rng = random.Random(seed)
    outcomes = []
    for k in range(n):
        if rng.random() < 0.1:
            outcomes.append(Outcome(item=f"i{k}", status=Status.ERROR, error="model failed"))
            continue
        calls = rng.randrange(0, 5)
        well = rng.randrange(0, calls + 1)
        scores: dict[str, Any] = {
            "n_calls": calls,
            "n_well_formed": well,
            "format_valid": 100.0 if calls and well == calls else 0.0,
            "calls_per_answer": float(calls),
        }
        for tool in ("reference", "diffusion", "search", "code", "edit"):
            scores[f"adoption_{tool}"] = 100.0 * (rng.random() < 0.4)
        if rng.random() < 0.7:  # items with a verified answer have P/R/F1
            scores.update(
                precision=rng.choice([0.0, 50.0, 100.0]),
                recall=rng.choice([0.0, 100.0 / 3, 100.0]),
                f1=rng.choice([0.0, 40.0, 66.666667, 100.0]),
            )
        outcomes.append(Outcome(item=f"i{k}", status=Status.OK, scores=scores))
    return outcomes


def mme_outcomes(n: int, seed: int) -> list[Outcome]:
    rng = random.Random(seed)
    outcomes = []
    for k in range(n):
        if rng.random() < 0.1:
            outcomes.append(Outcome(item=f"t{k}", status=Status.ERROR, error="replay miss"))
            continue
        has_s, has_v = rng.random() < 0.6, rng.random() < 0.8
        calls, reference = rng.randrange(0, 8), rng.randrange(0, 4)
        score = mme.RunScore(
            task_id=f"t{k}", run_id=f"t{k}", level=1 + k % 3, answer="", golden="",
            acc=rng.random() < 0.5,
            S=rng.random() if has_s else None,
            V=rng.random() if has_v else None,
            V_tool=rng.random() if has_v else None,
            V_true=rng.random() if has_v and rng.random() < 0.7 else None,
            R=1.0, calls=calls, reference_calls=reference, excess_calls=max(0, calls - reference),
            penalty=0.0, exceeded_max=False,
            overthink=mme.paper_overthink(calls, reference),
            overthink_ratio=mme.overthink_ratio(calls, reference), base=0.0, pqs=0.0,
        )  # fmt: skip
        output = {"run_meta": {"not_available": []}}
        outcomes.append(
            Outcome(item=f"t{k}", status=Status.OK, output=output, scores=score.to_dict())
        )
    return outcomes


@pytest.mark.parametrize("n, seed", [(7, 1), (40, 2), (300, 3)])
def test_atp_intervals_equal_the_summarize_definition(n: int, seed: int) -> None:
    outcomes = atp_outcomes(n, seed)
    keys = [column.key for column in ATP.columns]
    want = by_summarize(ATP, outcomes, keys, resamples=200, seed=2024)
    got = bootstrap_intervals(ATP, outcomes, keys, resamples=200, seed=2024)
    assert {"f1", "format_valid", "format_correctness", "adoption_diffusion"} <= set(want)
    assert_same(got, want)


def test_a_pooled_column_resamples_numerators_and_denominators_together() -> None:
    # Two items: 1 of 1 call well formed, and 0 of 9. Pooled: 10 %; the mean of the items'
    # shares would be 50 %. Every resample is 0 %, 10 % or 100 %.
    outcomes = [
        Outcome(item="a", status=Status.OK, scores={"n_calls": 1, "n_well_formed": 1}),
        Outcome(item="b", status=Status.OK, scores={"n_calls": 9, "n_well_formed": 0}),
    ]
    assert ATP.summarize(outcomes)["format_correctness"] == pytest.approx(10.0)
    got = bootstrap_intervals(ATP, outcomes, ["format_correctness"], resamples=200, seed=1)
    assert got == by_summarize(ATP, outcomes, ["format_correctness"], resamples=200, seed=1)
    low, high = got["format_correctness"]
    assert low == 0.0 and high == 100.0
    draws = [0.0, 10.0, 100.0]
    assert all(bound in draws for bound in (low, high))


def test_llmi_intervals_equal_the_summarize_definition() -> None:
    rng = random.Random(5)
    outcomes = []
    for k in range(60):
        tags = rng.randrange(0, 4)
        scores: dict[str, Any] = {
            "n_tags": tags,
            "n_tags_passed": rng.randrange(0, tags + 1),
            "tool_check": 100.0 * (rng.random() < 0.5),
            "calls_per_answer": float(tags),
        }
        if k % 2:
            scores.update(r_rule=rng.choice([0.0, 0.5, 1.0]), image_num=rng.choice([0.0, 100.0]))
        outcomes.append(Outcome(item=f"q{k}", status=Status.OK, scores=scores))
    keys = [column.key for column in LLMI.columns]
    want = by_summarize(LLMI, outcomes, keys, resamples=200, seed=7)
    assert "tool_acc" in want and "r_rule" in want and "tool_f1" not in want
    assert_same(bootstrap_intervals(LLMI, outcomes, keys, resamples=200, seed=7), want)


@pytest.mark.parametrize("n, seed", [(9, 11), (120, 12)])
def test_agentic_mme_intervals_equal_the_summarize_definition(n: int, seed: int) -> None:
    outcomes = mme_outcomes(n, seed)
    keys = [column.key for column in MME.columns]
    want = by_summarize(MME, outcomes, keys, resamples=200, seed=2024)
    assert {"acc", "S", "L3_V_true", "overthink", "calls"} <= set(want)
    assert_same(bootstrap_intervals(MME, outcomes, keys, resamples=200, seed=2024), want)


class Counting:
    """A protocol wrapper that counts ``summarize`` calls; ``ratios`` on or off."""

    def __init__(self, inner: Any, *, ratios: bool) -> None:
        self.inner, self.columns, self.calls = inner, inner.columns, 0
        if ratios:
            self.ratios = inner.ratios

    def summarize(self, outcomes: list[Outcome]) -> dict[str, Any]:
        self.calls += 1
        return self.inner.summarize(outcomes)


def test_ratio_figures_do_not_run_summarize_per_resample_and_others_still_do() -> None:
    outcomes = atp_outcomes(50, 4)
    keys = [column.key for column in ATP.columns]
    vectorised = Counting(ATP, ratios=True)
    looped = Counting(ATP, ratios=False)
    got = bootstrap_intervals(vectorised, outcomes, keys, resamples=100, seed=3)
    want = bootstrap_intervals(looped, outcomes, keys, resamples=100, seed=3)
    assert vectorised.calls == 0 and looped.calls == 100
    assert_same(got, want)
    # A key the protocol has no ratio for (a count in its summary) comes from summarize.
    mixed = Counting(ATP, ratios=True)
    out = bootstrap_intervals(mixed, outcomes, ["f1", "n_answered"], resamples=100, seed=3)
    assert mixed.calls == 100 and set(out) == {"f1", "n_answered"}
    assert out["f1"] == got["f1"]


def test_intervals_are_seeded_and_a_ratio_of_the_wrong_length_is_refused() -> None:
    outcomes = atp_outcomes(30, 6)
    keys = ["f1", "format_correctness"]
    assert bootstrap_intervals(ATP, outcomes, keys) == bootstrap_intervals(ATP, outcomes, keys)
    assert bootstrap_intervals(ATP, outcomes, keys, seed=1) != bootstrap_intervals(
        ATP, outcomes, keys, seed=2
    )

    class Broken(Counting):
        def ratios(self, outcomes: list[Outcome]) -> dict[str, Ratio]:
            return {"f1": Ratio((1.0,), (1.0,))}

    with pytest.raises(ValueError, match="f1: the protocol's ratio has not one pair per item"):
        bootstrap_intervals(Broken(ATP, ratios=False), outcomes, keys)


def test_a_figure_no_resample_has_gets_no_interval_and_two_items_are_enough() -> None:
    outcomes = atp_outcomes(40, 8)
    for outcome in outcomes:
        for key in ("precision", "recall", "f1"):
            outcome.scores.pop(key, None)
    keys = ["f1", "format_valid"]
    got = bootstrap_intervals(ATP, outcomes, keys)
    assert "f1" not in got and "format_valid" in got
    assert_same(got, by_summarize(ATP, outcomes, keys, resamples=200, seed=2024))
    assert bootstrap_intervals(ATP, outcomes[:1], keys) == {}
