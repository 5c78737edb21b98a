"""Which per-item score says a model solved an item (``EvalProtocol.solved``) and the rule
that reads it (``benchmark.evaluation.base.solved``): at its maximum, 100 on a percent
scale, 1 on a 0-1 scale, a true/false score as it is; None when unscored."""

from __future__ import annotations

import math
from typing import Any

import pytest

from benchmark.evaluation import agentic_mme, atp, llmi, mms
from benchmark.evaluation.base import Column, solved, solved_maximum
from tests.benchmark.evaluation.test_atp_protocol import ANSWERS, GOLD

PROTOCOLS = [atp.PROTOCOL, llmi.PROTOCOL, agentic_mme.PROTOCOL, mms.PROTOCOL]


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: type(p).__name__)
def test_every_protocol_names_a_score_its_leaderboard_shows(protocol: Any) -> None:
    assert protocol.solved in {c.key for c in protocol.columns}


def test_each_protocols_key_and_scale() -> None:
    assert (atp.PROTOCOL.solved, solved_maximum(atp.PROTOCOL)) == ("f1", 100.0)
    assert (llmi.PROTOCOL.solved, solved_maximum(llmi.PROTOCOL)) == ("r_rule", 1.0)
    assert agentic_mme.PROTOCOL.solved == "acc"
    assert (mms.PROTOCOL.solved, solved_maximum(mms.PROTOCOL)) == ("plan_accuracy", 100.0)


def test_atp_scores_as_the_protocol_gives_them() -> None:
    right = atp.score_answer(ANSWERS["good"], GOLD)
    wrong = atp.score_answer(ANSWERS["extra"], GOLD)
    assert solved(right, atp.PROTOCOL) is True
    assert solved(wrong, atp.PROTOCOL) is False
    assert solved(atp.score_answer(ANSWERS["good"], None), atp.PROTOCOL) is None  # no truth


def test_llmi_r_rule_of_one_is_solved_and_no_constraint_is_unscored() -> None:
    assert solved(llmi.score_answer("no images", image_num=-1), llmi.PROTOCOL) is True
    assert solved(llmi.score_answer("no images", image_num=2), llmi.PROTOCOL) is False
    assert solved(llmi.score_answer("no images"), llmi.PROTOCOL) is None


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ({"acc": True}, True),
        ({"acc": False}, False),
        ({}, None),
        ({"acc": None}, None),
    ],
)
def test_agentic_mme_acc_is_true_or_false(scores: dict, expected: bool | None) -> None:
    assert solved(scores, agentic_mme.PROTOCOL) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (100.0, True),
        (100, True),
        (99.999, False),
        (0.0, False),
        (1.0, False),  # a percent scale: 1 % is not solved
        (None, None),
        ("100", None),
        (math.nan, None),
        (math.inf, None),
    ],
)
def test_a_percent_score_is_solved_at_100(value: Any, expected: bool | None) -> None:
    assert solved({"plan_accuracy": value}, mms.PROTOCOL) is expected


class _Bare:
    """A protocol with a 0-1 score no column names, or none at all."""

    def __init__(self, key: str) -> None:
        self.solved = key
        self.columns = (Column("other", "Other"),)


def test_a_key_without_a_column_is_on_a_zero_to_one_scale_and_no_key_is_unscored() -> None:
    assert solved({"ok": 1.0}, _Bare("ok")) is True  # type: ignore[arg-type]
    assert solved({"ok": 0.5}, _Bare("ok")) is False  # type: ignore[arg-type]
    assert solved({"ok": 1.0}, _Bare("")) is None  # type: ignore[arg-type]
    assert solved(None, atp.PROTOCOL) is None
