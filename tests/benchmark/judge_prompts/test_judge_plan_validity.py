"""m&m's plan validity judge: the template, the strict parser and the share judged valid."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmark.judge_prompts import TEMPLATES, judgment_from_outputs
from benchmark.judge_prompts.base import JudgeOutputError, Judgment
from benchmark.judge_prompts.plan_validity import (
    LABEL,
    PLAN_VALIDITY_TEMPLATE,
    PlanVerdict,
    parse_plan_validity,
    plan_text,
    plan_validity_call,
    validity_figure,
)

STEPS = [
    {"id": 0, "name": "wikipedia simple search", "args": {"text": "Ada Lovelace"}},
    {"id": 1, "name": "text summarization", "args": {"text": "<node-0>.text"}},
]


def test_parser_accepts_the_verdict_and_one_line_why() -> None:
    assert parse_plan_validity("VALID\nThe search feeds the summary.") == PlanVerdict(
        True, "The search feeds the summary."
    )
    assert parse_plan_validity("  INVALID \n\n  Step 1 reads a field step 0 lacks.  \n") == (
        PlanVerdict(False, "Step 1 reads a field step 0 lacks.")
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", "empty output"),
        ("Valid\nfine", "first line must be VALID or INVALID"),
        ("VALID.\nfine", "first line must be VALID or INVALID"),
        ("The plan is VALID\nfine", "first line must be VALID or INVALID"),
        ("VALID", "one line saying why"),
        ("INVALID\nfirst reason\nsecond reason", "got 3 lines"),
    ],
)
def test_parser_is_strict(raw: str, message: str) -> None:
    with pytest.raises(JudgeOutputError, match=message):
        parse_plan_validity(raw)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.text(max_size=120),
        st.sampled_from(["VALID", "INVALID"]).flatmap(
            lambda w: st.text(max_size=40).map(lambda t: w + t)
        ),
    )
)
def test_parser_raises_only_its_own_error(raw: str) -> None:
    try:
        verdict = parse_plan_validity(raw)
    except JudgeOutputError:
        return
    assert isinstance(verdict.valid, bool) and verdict.why


def test_plan_text_numbers_steps_and_falls_back_to_code() -> None:
    assert plan_text(STEPS) == (
        '0. wikipedia simple search({"text": "Ada Lovelace"})\n'
        '1. text summarization({"text": "<node-0>.text"})'
    )
    assert plan_text([], "def solve():\n    return {}\n") == "def solve():\n    return {}"
    assert plan_text(None) == "(empty plan)"


def test_call_is_keyed_on_query_plan_and_model() -> None:
    call = plan_validity_call(query="Summarise Ada Lovelace", steps=STEPS, model="m")
    assert call.label == LABEL
    assert call.template_id == PLAN_VALIDITY_TEMPLATE.id
    assert "VALID or INVALID" in call.messages[0]["content"]
    assert "Summarise Ada Lovelace" in call.messages[1]["content"]
    assert "text summarization" in call.messages[1]["content"]
    same = plan_validity_call(query="Summarise Ada Lovelace", steps=STEPS, model="m")
    other = plan_validity_call(query="Summarise Ada Lovelace", steps=STEPS[:1], model="m")
    assert call.key == same.key != other.key
    assert TEMPLATES[PLAN_VALIDITY_TEMPLATE.id] is PLAN_VALIDITY_TEMPLATE


def test_share_judged_valid_excludes_failures() -> None:
    def judged(*raws: str) -> Judgment[PlanVerdict]:
        return judgment_from_outputs(None, list(raws), parse_plan_validity, label=LABEL)

    figure = validity_figure(
        [
            judged("VALID\nok"),
            judged("INVALID\nno"),
            judged("VALID\nok"),
            judged("maybe", "still unsure"),  # failed twice: excluded
        ]
    )
    assert figure.n == 3 and figure.n_valid == 2 and figure.excluded == 1
    assert figure.percent == pytest.approx(200 / 3)
    assert validity_figure([]).percent is None
