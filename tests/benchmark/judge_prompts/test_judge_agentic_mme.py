from pathlib import Path

import pytest

from benchmark.judge_prompts.agentic_mme import (
    VAnswer,
    parse_s,
    parse_v,
    s_call,
    search_check_from,
    v_calls,
    v_checkpoint,
    visual_check_from,
)
from benchmark.judge_prompts.base import JudgeOutputError, judgment_from_outputs


def test_parse_v():
    assert parse_v("  Answer: Elm Street \n").answer == "Elm Street"
    for raw, message in [
        ("Elm Street", "expected a line 'Answer: ...'"),
        ("Answer: a\nAnswer: b", "got 2 lines"),
        ("Answer:   ", "empty"),
        ("", "empty output"),
    ]:
        with pytest.raises(JudgeOutputError) as err:
            parse_v(raw)
        assert message in str(err.value)


def test_parse_s():
    verdict = parse_s("PASS\nThe second result gives 1887.")
    assert verdict.passed and verdict.reason == "The second result gives 1887."
    assert not parse_s(" FAIL ").passed
    for raw in ("pass", "The answer is PASS", "PASSED", "Reason first\nPASS", ""):
        with pytest.raises(JudgeOutputError) as err:
            parse_s(raw)
        assert "PASS or FAIL" in str(err.value) or "empty" in str(err.value)


def v(label, raw):
    return judgment_from_outputs(None, [raw], parse_v, label=label)


def test_any_pass_over_images():
    # image 2's answer contains "red mailbox" in another case -> pass
    result = v_checkpoint(
        [v("image 1", "Answer: a tree"), v("image 2", "Answer: A Red Mailbox"), v("image 3", "??")],
        "red mailbox",
    )
    assert result.passed is True and result.passing == ("image 2",)
    assert (result.n, result.excluded) == (2, 1)
    assert v_checkpoint([v("image 1", "Answer: a tree")], "red mailbox").passed is False
    assert v_checkpoint([v("image 1", "garbage")], "red mailbox").passed is None
    assert v_checkpoint([], "x").passed is None


def test_v_calls_one_per_image_with_image_attached():
    calls = v_calls(question="What road?", images=["sha256:a", "sha256:b"], model="gpt-4o-mini")
    assert [c.label for c in calls] == ["image 1", "image 2"]
    assert calls[1].messages[1]["content"][1]["image_url"]["url"] == "sha256:b"
    assert calls[0].key != calls[1].key


def test_hooks_for_the_run_scorer():
    check = visual_check_from({("img_2.png", "Q"): VAnswer("it says ELM st")})
    assert check(Path("/run/img_2.png"), "Q", "elm st") is True
    assert check(Path("/run/img_2.png"), "Q", "oak") is False
    assert check(Path("/run/img_3.png"), "Q", "elm") is None
    search = search_check_from({"s1": parse_s("PASS"), "s2": None})
    assert search({"id": "s1"}, [], []) is True
    assert search({"id": "s2"}, [], []) is None


def test_s_call_carries_everything_the_judge_needs():
    call = s_call(
        description="Find the bridge's opening year",
        keywords=["bridge", "opened"],
        expected="1887",
        queries=["bridge opened"],
        results=["Opened in 1887."],
        model="m",
    )
    text = call.messages[1]["content"]
    for part in ("Find the bridge", "bridge, opened", "1887", "- bridge opened", "[1] Opened"):
        assert part in text
