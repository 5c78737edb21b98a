"""The code form written from the JSON form reads back, with the code-form parser, as the same
steps; on m&m's own plans it is the dataset's ``code_str``."""

from __future__ import annotations

import ast
import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from benchmark.plans.codegen import plan_to_code
from benchmark.plans.parse import PlanFormatError, parse_code_plan, parse_plan
from tests.shared_data import MMS_DATA, needs_data

TOOLS = ["image editing", "image captioning", "text generation", "get_weather", "Optical Flow"]
ARG_NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda s: s.isidentifier() and s not in {"if", "in", "is", "or", "as", "def", "for", "and"}
)
REF = st.builds(
    lambda n, k: f"<node-{n}>.{k}", st.integers(0, 12), st.sampled_from(["text", "image", "x1"])
)
TEXT = st.lists(
    st.one_of(st.text(max_size=12), REF, st.sampled_from(["{", "}", '"', "\\", "\n", "{}"])),
    max_size=5,
).map("".join)
JSON_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
VALUE = st.recursive(
    JSON_SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def plans(draw: Any) -> list[dict[str, Any]]:
    ids = draw(st.lists(st.integers(0, 40), min_size=1, max_size=6, unique=True))
    return [
        {
            "id": i,
            "name": draw(st.sampled_from(TOOLS)),
            "args": draw(st.dictionaries(ARG_NAMES, VALUE, max_size=4)),
        }
        for i in ids
    ]


@settings(max_examples=300, deadline=None)
@given(plans())
@example([{"id": 0, "name": "image editing", "args": {"_": {"```": None}}}])  # found by CI
def test_code_form_parses_back_to_the_same_steps(steps: list[dict[str, Any]]) -> None:
    code = plan_to_code(steps)
    parsed = parse_code_plan(code, TOOLS)
    assert parsed.findings == []
    assert parsed.to_json() == steps
    # Key order survives too (the code form lists arguments in the JSON form's order).
    assert [list(s["args"]) for s in parsed.to_json()] == [list(s["args"]) for s in steps]
    # And the automatic reader takes it for code.
    assert parse_plan(code, tool_names=TOOLS).to_json() == steps


@needs_data("mms", "tasks.json")
def test_mms_plans_give_the_datasets_code_str() -> None:
    rows = json.loads((MMS_DATA / "tasks.json").read_text())
    for row in rows:
        assert plan_to_code(ast.literal_eval(row["plan_str"])) == row["code_str"], row["id"]


def test_embedded_reference_and_braces() -> None:
    steps = [
        {"id": 0, "name": "text generation", "args": {"text": 'say "hi" {x}'}},
        {"id": 1, "name": "image captioning", "args": {"image": "a {b} <node-0>.text\n"}},
    ]
    code = plan_to_code(steps)
    assert "output1 = image_captioning(image=f\"a {{b}} {output0['text']}\\n\")" in code
    assert parse_code_plan(code, TOOLS).to_json() == steps


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([{"id": -1, "name": "text generation", "args": {}}], "step 1: the id -1"),
        ([{"id": "0", "name": "text generation", "args": {}}], "step 1: the id '0'"),
        ([{"id": 0, "name": "text-to-speech", "args": {}}], "tool name 'text-to-speech'"),
        ([{"id": 0, "name": "text generation", "args": {"bad arg": 1}}], "argument name 'bad arg'"),
        ([{"id": 0, "name": "text generation", "args": {"class": 1}}], "argument name 'class'"),
        (
            [{"id": 0, "name": "a", "args": {}}, {"id": 0, "name": "b", "args": {}}],
            "step 2: the id 0 is used twice",
        ),
        ("[]", "a plan is a list of steps"),
    ],
)
def test_what_code_cannot_say_names_the_step(steps: Any, message: str) -> None:
    with pytest.raises(PlanFormatError, match=message.replace("(", r"\(")):
        plan_to_code(steps)


def test_three_backticks_in_a_string_are_text_fenced_or_not() -> None:
    """A markdown fence is looked for only where the text is not Python as it stands, and a
    fenced program ends at the fence that starts a line, not at backticks in one of its
    strings."""
    line = 'output0 = image_captioning(image="a ``` b")'
    plain = parse_code_plan(line, TOOLS)
    fenced = parse_code_plan(f"Here is the plan:\n```python\n{line}\n```\nDone.", TOOLS)
    closed_inline = parse_code_plan(f"```python\n{line}```", TOOLS)
    for parsed in (plain, fenced, closed_inline):
        assert parsed.findings == []
        assert parsed.to_json() == [
            {"id": 0, "name": "image captioning", "args": {"image": "a ``` b"}}
        ]
    # A fenced program's error is reported on the answer's own line.
    broken = parse_code_plan("Plan:\n```python\noutput0 = (\n```", TOOLS)
    assert broken.findings[0].code == "parse_error" and broken.findings[0].line == 3
