import pytest

from benchmark.judge_prompts.base import JudgeOutputError, judgment_from_outputs
from benchmark.judge_prompts.rubric import (
    RUBRIC_TEMPLATE,
    answer_rubric,
    criteria_of,
    parse_rubric,
    released_rubric,
    rubric_calls,
    rubric_figure,
)


def judged(label, raw):
    return judgment_from_outputs(None, [raw], parse_rubric, label=label)


def ok(label, score):
    return judged(label, f'{{"score": {score}, "justification": "because"}}')


def test_parse_good_output_and_fence():
    value = parse_rubric('```json\n{"score": 2, "justification": "All twelve points."}\n```')
    assert (value.score, value.justification) == (2, "All twelve points.")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"score": 2, "justification": "x"', "not valid JSON"),
        ('{"score": "2", "justification": "x"}', "score must be an integer, got a string"),
        ('{"score": 3, "justification": "x"}', "score must be between 0 and 2, got 3"),
        ('{"score": -1, "justification": "x"}', "between 0 and 2, got -1"),
        ('{"score": 1.5, "justification": "x"}', "score must be an integer, got a number"),
        ('{"score": true, "justification": "x"}', "got a boolean"),
        ('{"justification": "x"}', "missing key(s): score"),
        ('{"score": 1}', "missing key(s): justification"),
        ('{"score": 1, "justification": 5}', "justification must be a string"),
        ('{"score": 1, "justification": "x", "extra": 1}', "unexpected key(s): extra"),
        ("Score: 2", "not valid JSON"),
    ],
)
def test_parse_malformed_names_the_problem(raw, message):
    with pytest.raises(JudgeOutputError) as err:
        parse_rubric(raw)
    assert message in str(err.value)


def test_one_call_per_criterion_in_order():
    row = {"prompt": "P", "r2": "second", "r10": "tenth", "r1": "first"}
    criteria = criteria_of(row)
    assert list(criteria) == ["r1", "r2", "r10"]
    calls = rubric_calls(prompt="P", answer="A", criteria=criteria, model="gpt-4o")
    assert [c.label for c in calls] == ["r1", "r2", "r10"]
    assert "Criterion r10: tenth" in calls[2].messages[1]["content"]
    assert all(c.template_id == RUBRIC_TEMPLATE.id for c in calls)
    assert len({c.key for c in calls}) == 3


def test_answer_rate_and_model_percent():
    # answer A: [2, 1, 0] -> 3 / 6 = 50 %
    a = answer_rubric([ok("r1", 2), ok("r2", 1), ok("r3", 0)])
    assert a.rate == pytest.approx(0.5)
    # answer B: [2, 2, failed] -> valid [2, 2] -> 4 / 4 = 100 %, one criterion excluded
    b = answer_rubric([ok("r1", 2), ok("r2", 2), judged("r3", "oops")])
    assert (b.rate, b.n, b.excluded) == (1.0, 2, 1)
    assert b.scores["r3"] is None and "not valid JSON" in b.errors["r3"]
    # answer C: every criterion failed -> no rate, excluded from the model figure
    c = answer_rubric([judged("r1", "x")])
    assert c.rate is None
    figure = rubric_figure([a, b, c])
    # (50 + 100) / 2 = 75 %
    assert figure.percent == pytest.approx(75.0)
    assert (figure.n, figure.excluded, figure.criteria_excluded) == (2, 1, 2)


def test_released_scores_read_into_the_same_structure():
    record = {
        "scores": {"r2": 1, "r1": 2, "r10": 0, "r3": "high"},
        "justifications": {"r1": "fine", "r2": "half"},
    }
    released = released_rubric(record)
    assert list(released.scores) == ["r1", "r2", "r3", "r10"]
    assert released.scores["r1"].justification == "fine"
    assert released.scores["r10"].score == 0 and released.scores["r10"].justification == ""
    assert released.scores["r3"] is None and "must be an integer" in released.errors["r3"]
    # [2, 1, 0] -> 3 / 6
    assert released.rate == pytest.approx(0.5)
    assert released_rubric({}).rate is None
