import json

import pytest

from benchmark.judge_prompts.base import JudgeOutputError, judgment_from_outputs
from benchmark.judge_prompts.mam import (
    SUB_CHECKS,
    TIERS,
    AnswerReport,
    chief_call,
    first_stage_calls,
    mam_figures,
    parse_chief,
    parse_precision,
    parse_recall,
)

TAG = '<tool>{"tool_name": "Search", "description": "d", "params": {"query": "q"}}</tool>'


def entry(index, **scores):
    out = {"index": index, **{name: 2 for name in SUB_CHECKS}, "comment": "c"}
    out.update(scores)
    return out


def precision_raw(*entries):
    return json.dumps({"calls": list(entries)})


def test_precision_good():
    report = parse_precision(precision_raw(entry(1), entry(2, parameters=1)), 2)
    assert [c.index for c in report.calls] == [1, 2]
    assert report.calls[0].successful and not report.calls[1].successful


@pytest.mark.parametrize(
    ("raw", "count", "message"),
    [
        ("calls: []", 0, "not valid JSON"),
        ('{"calls": {}}', 0, "calls must be an array"),
        ('{"calls": [1]}', 1, "calls[1] must be an object"),
        (precision_raw(entry(1)), 2, "calls has 1 entries but the answer has 2 tool call(s)"),
        (precision_raw(entry(1), entry(3)), 2, "calls[2].index must be 2, got 3"),
        (precision_raw(entry(0)), 1, "calls[1].index must be 1, got 0"),
        (precision_raw(entry(1, format=3)), 1, "calls[1].format must be between 0 and 2"),
        (precision_raw(entry(1, necessity="2")), 1, "calls[1].necessity must be an integer"),
        (precision_raw({"index": 1, "comment": ""}), 1, "calls[1]: missing key(s): necessity"),
        ('{"missed": []}', 0, "missing key(s): calls"),
    ],
)
def test_precision_malformed(raw, count, message):
    with pytest.raises(JudgeOutputError) as err:
        parse_precision(raw, count)
    assert message in str(err.value)


def test_recall_good_and_malformed():
    report = parse_recall('{"missed": [{"after": "the tower", "tool": "Search", "why": "w"}]}')
    assert report.missed[0].tool == "Search"
    assert parse_recall('{"missed": []}').missed == ()
    with pytest.raises(JudgeOutputError, match=r"missed\[1\]: missing key\(s\): why"):
        parse_recall('{"missed": [{"after": "a", "tool": "Search"}]}')
    with pytest.raises(JudgeOutputError, match=r"missed\[1\].after must not be empty"):
        parse_recall('{"missed": [{"after": " ", "tool": "Search", "why": ""}]}')


def test_chief_tiers_and_ranges():
    assert TIERS["Good but Flawed"] == (60, 80)
    verdict = parse_chief('{"score": 72, "tier": "Good but Flawed", "why": "w"}')
    assert (verdict.score, verdict.tier) == (72, "Good but Flawed")
    # the paper's ranges share their ends: 80 fits both Excellent and Good but Flawed
    assert parse_chief('{"score": 80, "tier": "Excellent", "why": ""}').score == 80
    assert parse_chief('{"score": 80, "tier": "Good but Flawed", "why": ""}').score == 80
    with pytest.raises(JudgeOutputError, match="unknown tier 'Great'; expected one of Excellent"):
        parse_chief('{"score": 90, "tier": "Great", "why": ""}')
    with pytest.raises(JudgeOutputError, match=r"score 30 is outside tier 'Excellent' \(80-100\)"):
        parse_chief('{"score": 30, "tier": "Excellent", "why": ""}')
    with pytest.raises(JudgeOutputError, match="score must be between 0 and 100, got 101"):
        parse_chief('{"score": 101, "tier": "Excellent", "why": ""}')
    with pytest.raises(JudgeOutputError, match="tier must be a string"):
        parse_chief('{"score": 10, "tier": 1, "why": ""}')


def test_agents_named_in_order_and_precision_skipped_without_calls():
    calls = first_stage_calls(query="Q", answer=f"Look {TAG} here {TAG}.", model="gemini")
    assert [c.label for c in calls] == ["precision", "recall"]
    assert "Precision Inspector" in calls[0].messages[0]["content"]
    assert "Recall Inspector" in calls[1].messages[0]["content"]
    assert "2 tool call(s)" in calls[0].messages[1]["content"]
    assert [c.label for c in first_stage_calls(query="Q", answer="text", model="m")] == ["recall"]
    precision = parse_precision(precision_raw(entry(1), entry(2)), 2)
    chief = chief_call(
        query="Q",
        answer="A",
        precision=precision,
        recall=parse_recall('{"missed": []}'),
        model="gemini",
    )
    assert "Chief Judge" in chief.messages[0]["content"]
    assert '"necessity": 2' in chief.messages[1]["content"]


def report(precision, missed, score, tier):
    p = judgment_from_outputs(None, [precision], lambda r: parse_precision(r, 3))
    recall = json.dumps({"missed": [{"after": "x", "tool": "Search", "why": ""}] * missed})
    r = judgment_from_outputs(None, [recall], parse_recall)
    c = judgment_from_outputs(
        None, [json.dumps({"score": score, "tier": tier, "why": ""})], parse_chief
    )
    return AnswerReport(precision=p, recall=r, chief=c)


def test_figures_on_two_answers_of_three_calls():
    a = report(
        precision_raw(entry(1), entry(2, necessity=1), entry(3, format=0)), 1, 70, "Good but Flawed"
    )
    b = report(
        precision_raw(entry(1), entry(2), entry(3, necessity=1, parameters=1)), 0, 90, "Excellent"
    )
    failed = report("not json", 5, 10, "Fatal")
    figures = mam_figures([a, b, failed])
    assert (figures.n, figures.excluded, figures.calls) == (2, 1, 6)
    assert figures.fs == pytest.approx(80.0)  # (70 + 90) / 2
    assert figures.mi == pytest.approx(0.5)  # (1 + 0) / 2
    # calls fully 2 on all six: a1, b1, b2 -> 3 / 6
    assert figures.sr == pytest.approx(50.0)
    # necessity 2 on a1, a3, b1, b2 -> 4 / 6
    assert figures.sub_checks["necessity"] == pytest.approx(400 / 6)
    assert figures.sub_checks["format"] == pytest.approx(500 / 6)  # all but a3
    assert figures.sub_checks["parameters"] == pytest.approx(500 / 6)  # all but b3
    assert figures.sub_checks["position"] == pytest.approx(100.0)


def test_answer_without_tool_calls_counts_for_fs_and_mi_only():
    r = judgment_from_outputs(None, ['{"missed": []}'], parse_recall)
    c = judgment_from_outputs(None, ['{"score": 10, "tier": "Fatal", "why": ""}'], parse_chief)
    figures = mam_figures([AnswerReport(precision=None, recall=r, chief=c)])
    assert (figures.fs, figures.mi, figures.sr, figures.n) == (10, 0, None, 1)
    assert mam_figures([]).fs is None
