"""No input makes a parser raise anything but JudgeOutputError."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmark.judge_prompts.agentic_mme import parse_s, parse_v
from benchmark.judge_prompts.base import JudgeOutputError
from benchmark.judge_prompts.llmi import parse_llm, parse_mllm
from benchmark.judge_prompts.mam import parse_chief, parse_precision, parse_recall
from benchmark.judge_prompts.rubric import parse_rubric

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "score",
                    "justification",
                    "calls",
                    "index",
                    "necessity",
                    "format",
                    "comment",
                    "missed",
                    "after",
                    "tool",
                    "why",
                    "tier",
                    "x",
                ]
            ),
            inner,
            max_size=6,
        )
    ),
    max_leaves=20,
)
texts = st.one_of(
    st.text(max_size=200),
    json_values.map(json.dumps),
    json_values.map(lambda v: f"```json\n{json.dumps(v)}\n```"),
    st.lists(
        st.tuples(
            st.sampled_from(["Text", "Image", "Image quality", "Task relevance", "Answer", "X"]),
            st.text(max_size=8),
        ),
        max_size=4,
    ).map(lambda rows: "\n".join(f"{a}: {b}" for a, b in rows)),
    st.sampled_from(["PASS", "FAIL"]).flatmap(lambda w: st.text(max_size=20).map(lambda t: w + t)),
)

PARSERS = [
    parse_rubric,
    parse_llm,
    parse_mllm,
    parse_recall,
    parse_chief,
    parse_s,
    parse_v,
    lambda raw: parse_precision(raw, 1),
    lambda raw: parse_precision(raw, 0),
]


@settings(max_examples=300, deadline=None)
@given(texts)
def test_parsers_raise_only_their_own_error(raw):
    for parser in PARSERS:
        try:
            parser(raw)
        except JudgeOutputError:
            pass


@settings(max_examples=50, deadline=None)
@given(st.one_of(st.none(), st.integers(), st.binary()))
def test_non_text_output_is_a_judge_output_error(raw):
    for parser in PARSERS:
        try:
            parser(raw)
        except JudgeOutputError:
            pass
