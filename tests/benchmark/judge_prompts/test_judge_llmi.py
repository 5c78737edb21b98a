import pytest

from benchmark.judge_prompts.base import JudgeOutputError, judgment_from_outputs
from benchmark.judge_prompts.llmi import (
    PAPER_TRAINING_WEIGHTS,
    Weights,
    answer_reward,
    llm_call,
    mllm_call,
    parse_llm,
    parse_mllm,
    reward,
    reward_figure,
    rule_reward,
)


def test_parse_llm_good():
    scores = parse_llm("\n Text: 4\nImage: 2  \n")
    assert (scores.text, scores.image) == (4, 2)
    # (4-1)/4 = 0.75, (2-1)/4 = 0.25 -> mean 0.5
    assert scores.normalised == pytest.approx(0.5)


def test_parse_mllm_good():
    scores = parse_mllm("Image quality: 5\nTask relevance: 3\nText-image relevance: 1")
    # (1 + 0.5 + 0) / 3 = 0.5
    assert scores.normalised == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("Text: 4", "expected 2 lines (Text: n; Image: n), got 1"),
        ("Image: 4\nText: 3", "expected a line 'Text: n'"),
        ("Text: 6\nImage: 3", "Text must be between 1 and 5, got 6"),
        ("Text: 0\nImage: 3", "between 1 and 5, got 0"),
        ("Text: four\nImage: 3", "Text must be an integer, got 'four'"),
        ("Text: 4.5\nImage: 3", "must be an integer"),
        ("Text 4\nImage: 3", "expected a line 'Text: n'"),
        ("Text: 4\nImage: 3\nOverall: 4", "got 3"),
        ('{"Text": 4, "Image": 3}', "expected 2 lines"),
        ("", "empty output"),
    ],
)
def test_parse_llm_malformed(raw, message):
    with pytest.raises(JudgeOutputError) as err:
        parse_llm(raw)
    assert message in str(err.value)


def test_parse_mllm_malformed():
    with pytest.raises(JudgeOutputError, match="expected 3 lines"):
        parse_mllm("Text: 4\nImage: 3")
    with pytest.raises(JudgeOutputError, match="'Task relevance: n'"):
        parse_mllm("Image quality: 5\nTask: 3\nText-image relevance: 1")


def test_reward_formula_with_weights():
    # R = 0.2*0.5 + 0.5*0.75 + 0.3*1.0*0.5 = 0.1 + 0.375 + 0.15 = 0.625
    assert reward(0.5, 0.75, 1.0, PAPER_TRAINING_WEIGHTS) == pytest.approx(0.625)
    # default 1/3 each: (1 + 0.5 + 0.5*1) / 3 = 2/3
    assert reward(1.0, 0.5, 0.5) == pytest.approx(2 / 3)
    # R_rule = 0 gates the MLLM term away: (0 + 1 + 0) / 3
    assert reward(0.0, 1.0, 1.0, Weights()) == pytest.approx(1 / 3)


def test_rule_reward_counts_imgen_tags():
    tag = '<imgen>{"source": "search", "description": "d", "params": {"query": "q"}}</imgen>'
    answer = f"Intro {tag} middle {tag} end"
    assert rule_reward(answer, 2) == 1.0
    assert rule_reward(answer, 4) == 0.5  # 2 / 4
    assert rule_reward(answer, 1) == pytest.approx(0.7)  # 1 - 0.3 * (2 - 1)
    assert rule_reward(answer, -1) == 0.0


def test_reward_figure_excludes_failed_judgments():
    llm = judgment_from_outputs(None, ["Text: 5\nImage: 3"], parse_llm)  # (1 + 0.5)/2 = 0.75
    mllm = judgment_from_outputs(
        None, ["Image quality: 5\nTask relevance: 5\nText-image relevance: 5"], parse_mllm
    )  # 1.0
    bad = judgment_from_outputs(None, ["Text: 9\nImage: 3", "Text: 9\nImage: 3"], parse_llm)
    a = answer_reward(1.0, llm, mllm)  # (1 + 0.75 + 1) / 3 = 0.91666
    b = answer_reward(0.5, llm, mllm)  # (0.5 + 0.75 + 0.5) / 3 = 0.58333
    c = answer_reward(1.0, bad, mllm)
    assert c.r is None and c.r_llm is None
    figure = reward_figure([a, b, c])
    assert figure.r == pytest.approx((2.75 / 3 + 1.75 / 3) / 2)  # 0.75
    assert figure.r_rule == pytest.approx(0.75)
    assert figure.r_llm == pytest.approx(0.75)
    assert (figure.n, figure.excluded) == (2, 1)


def test_calls():
    call = llm_call(prompt="P", answer="A", model="qwen")
    assert call.messages[1]["content"] == "Task:\nP\n\nAnswer:\nA"
    assert "Text: n\nImage: n" in call.messages[0]["content"]
    mcall = mllm_call(prompt="P", rendered_answer="A [image 1]", images=["ref:1"], model="vl")
    assert mcall.messages[1]["content"][1]["image_url"]["url"] == "ref:1"
