"""Reading what a model drafted (annotation.model_drafts.parse): JSON lists in code fences or
after a sentence, objects instead of strings, ten criteria in three shapes; anything else is a
DraftParseError saying what was wrong, never another exception."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotation.model_drafts.parse import (
    DraftParseError,
    parse_answer,
    parse_queries,
    parse_rubric,
)

TEN = [f"The answer includes image {n} of the steps." for n in range(1, 11)]


@pytest.mark.parametrize(
    "reply",
    [
        '["a?", "b?"]',
        '```json\n["a?", "b?"]\n```',
        'Here are two queries:\n["a?", "b?"]\nHope this helps [really].',
        '[{"query": "a?"}, {"question": "b?"}]',
        '{"queries": ["a?", "b?"]}',
        '["a?", "", "b?", "a?"]',
    ],
)
def test_queries_are_read_from_the_shapes_models_reply_in(reply: str) -> None:
    assert parse_queries(reply, n=5) == ["a?", "b?"]


def test_queries_are_cut_to_n() -> None:
    assert parse_queries(json.dumps(["a", "b", "c"]), n=2) == ["a", "b"]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("no list", "not a JSON list of queries"),
        ('["a", {"x": 1}]', "entry 2 of the list is not a query"),
        ('["", "  "]', "holds no query"),
        ("[1, 2", "not a JSON list"),
    ],
)
def test_malformed_queries_say_what_is_wrong(reply: str, message: str) -> None:
    with pytest.raises(DraftParseError, match=message):
        parse_queries(reply, n=3)


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps(TEN),
        "```\n" + json.dumps({f"r{n}": t for n, t in enumerate(TEN, 1)}) + "\n```",
        "\n".join(f"{n}. {t}" for n, t in enumerate(TEN, 1)),
        "Criteria:\n" + "\n".join(f"r{n}: {t}" for n, t in enumerate(TEN, 1)),
        json.dumps([{"key": f"r{n}", "text": t} for n, t in enumerate(TEN, 1)]),
    ],
)
def test_ten_criteria_in_three_shapes(reply: str) -> None:
    assert parse_rubric(reply) == TEN


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (json.dumps(TEN[:9]), "holds 9 criteria"),
        (json.dumps([*TEN, "one more"]), "holds 11 criteria"),
        ("The answer should be good.", "holds 0 criteria"),
        ("[1, 2]", "something other than criteria"),
    ],
)
def test_a_rubric_needs_exactly_ten(reply: str, message: str) -> None:
    with pytest.raises(DraftParseError, match=message):
        parse_rubric(reply)


def test_an_answer_loses_only_a_fence_around_all_of_it() -> None:
    text = 'Basil. <tool>{"tool_name": "Search"}</tool>\n```python\nprint(1)\n```'
    assert parse_answer(text) == text
    assert parse_answer("```markdown\nHello\n```") == "Hello"
    with pytest.raises(DraftParseError, match="the reply is empty"):
        parse_answer("   ")


@given(st.text())
def test_no_reply_makes_the_readers_raise_anything_else(reply: str) -> None:
    for read in (lambda r: parse_queries(r, n=3), parse_rubric, parse_answer):
        try:
            read(reply)
        except DraftParseError:
            pass


@given(
    st.lists(
        st.text(min_size=1).filter(lambda s: s.strip() == s and s),
        min_size=1,
        max_size=20,
        unique=True,
    )
)
def test_a_json_list_of_queries_reads_back_as_written(queries: list[str]) -> None:
    assert parse_queries(json.dumps(queries), n=20) == queries
