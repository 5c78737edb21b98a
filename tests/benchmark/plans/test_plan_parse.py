"""Reading m&m's plans (JSON, Python literal, code) and m&m's own JSON→code conversion."""

from __future__ import annotations

import ast
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmark.plans.parse import (
    ParsedPlan,
    PlanFormatError,
    looks_like_code,
    normalize_tool_name,
    parse_plan,
    plan_to_code,
    plan_to_code_lines,
    plan_to_solve_code,
    resolve_tool_name,
)
from tests.shared_data import MMS_DATA

ROOT = Path(__file__).resolve().parents[3]
TOOL_NAMES = [
    t["name"]
    for t in json.loads(
        (ROOT / "benchmark" / "builtin" / "data" / "tool_metadata.json").read_text("utf-8")
    )
]


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    path = MMS_DATA / "tasks.json"
    if not path.exists():
        pytest.skip(f"m&m's sample data not found at {MMS_DATA}")
    return json.loads(path.read_text("utf-8"))


# --------------------------------------------------------------------------- JSON → code


def test_solve_code_reproduces_every_code_str(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        plan = ast.literal_eval(row["plan_str"])
        assert plan_to_solve_code(plan) == row["code_str"], row["id"]


def test_evaluator_conversion_matches_upstream_lines_for_row_36(
    rows: list[dict[str, Any]],
) -> None:
    plan = ast.literal_eval(next(r for r in rows if r["id"] == 36)["plan_str"])
    # m&m's nodes_to_code: whole references become outputK['key']; references inside text
    # become an f-string whose reference is NOT wrapped in braces (upstream quirk).
    assert plan_to_code_lines(plan) == [
        'output0 = automatic_speech_recognition(audio="1995-1826-0002.flac")',
        "output1 = text_summarization(text=output0['text'])",
        "output2 = image_generation(text=f\"a vivid illustration based on output1['text']\")",
    ]
    assert plan_to_code(plan) == "\n".join(plan_to_code_lines(plan))
    assert "{output1['text']}" in plan_to_code_lines(plan, braces=True)[2]


def test_conversion_value_rules() -> None:
    plan = [
        {
            "id": 3,
            "name": "search movie",
            "args": {
                "movie_title": 'The "Thing"',
                "movie_year": 1982,
                "ref": "<node-12>.text",
                "mixed": 'a "b" <node-1>.text and <node-2>.image',
            },
        }
    ]
    (line,) = plan_to_code_lines(plan)
    assert line == (
        'output3 = search_movie(movie_title="The \\"Thing\\"", movie_year="1982", '
        "ref=output12['text'], mixed=f\"a \\\"b\\\" output1['text'] and output2['image']\")"
    )
    # Upstream escapes nothing but double quotes: a newline splits the line in two.
    (broken,) = plan_to_code_lines([{"id": 0, "name": "t", "args": {"text": "a\nb"}}])
    assert broken == 'output0 = t(text="a\nb")'


@pytest.mark.parametrize(
    "plan",
    [
        "not a list",
        {"nodes": []},
        [["id", 0]],
        [{"name": "count", "args": {}}],
        [{"id": 0, "args": {}}],
        [{"id": 0, "name": "count"}],
        [{"id": 0, "name": 7, "args": {}}],
        [{"id": 0, "name": "count", "args": ["objects"]}],
        [{"id": 0, "name": "count", "args": {"objects": "<node-x>.objects"}}],
        [{"id": 0, "name": "count", "args": {"objects": "<node-0"}}],
        [{"id": 0, "name": "count", "args": {"objects": "<node-0>"}}],
        [{"id": 0, "name": "t", "args": {"text": "a {b} <node-0>.text"}}],
    ],
)
def test_conversion_raises_plan_format_error_where_upstream_fails(plan: Any) -> None:
    with pytest.raises(PlanFormatError):
        plan_to_code_lines(plan)


# --------------------------------------------------------------------------- JSON form


def test_plan_str_literals_and_json_text_read_alike(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        plan = ast.literal_eval(row["plan_str"])
        from_literal = parse_plan(row["plan_str"])
        from_json = parse_plan(json.dumps(plan))
        from_object = parse_plan(plan)
        assert from_literal.ok and from_json.ok and from_object.ok
        assert from_literal.format == "json"
        assert from_literal.to_json() == from_json.to_json() == from_object.to_json() == plan


def test_nodes_wrapper_and_result_marker_are_accepted() -> None:
    steps = [{"id": 0, "name": "get date fact", "args": {"date": "May 7"}}]
    assert parse_plan({"nodes": steps}).to_json() == steps
    answer = '# RESULT #:\n{"nodes": ' + json.dumps(steps) + "}\nHope this helps."
    assert parse_plan(answer).to_json() == steps


def test_json_syntax_error_has_line_and_column() -> None:
    text = '[{"id": 0, "name": "count", "args": {"objects": "x"}},\n {"id": 1 "name": "x"}]'
    parsed = parse_plan(text)
    assert not parsed.ok and parsed.steps == []
    (finding,) = parsed.findings
    assert (finding.code, finding.step, finding.line, finding.column) == (
        "parse_error",
        None,
        2,
        11,
    )


def test_truncated_model_output_is_a_parse_error() -> None:
    text = '# RESULT #: {"nodes": [{"id": 0, "name": "text summarization", "args": {"text": "Le'
    (finding,) = parse_plan(text).findings
    assert finding.code == "parse_error"
    assert (finding.line, finding.column) == (1, len(text) + 1)


@pytest.mark.parametrize(
    ("plan", "step", "fragment"),
    [
        ([], None, "no steps"),
        ("42", None, "not int"),
        ([{"id": 0, "name": "count", "args": {}}, "oops"], 1, "a step is an object"),
        ([{"id": 0, "args": {}}], 0, "no tool name"),
        ([{"id": 0, "name": "count", "args": []}], 0, "'args'"),
        ([{"id": 0, "name": "count"}], 0, "no 'args'"),
        ([{"id": "zero", "name": "count", "args": {}}], 0, "integer 'id'"),
        ([{"id": 0, "name": "a", "args": {}}, {"id": 0, "name": "b", "args": {}}], 1, "twice"),
    ],
)
def test_malformed_json_plans(plan: Any, step: int | None, fragment: str) -> None:
    parsed = parse_plan(plan)
    assert [f.code for f in parsed.findings] == ["parse_error"]
    assert parsed.findings[0].step == step
    assert fragment in parsed.findings[0].message


def test_good_steps_survive_a_bad_one() -> None:
    parsed = parse_plan([{"id": 0, "name": "count", "args": {"objects": []}}, 5])
    assert [s.name for s in parsed.steps] == ["count"]
    assert [f.step for f in parsed.findings] == [1]


# --------------------------------------------------------------------------- code form


def test_code_str_reads_back_to_plan_str(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        parsed = parse_plan(row["code_str"], tool_names=TOOL_NAMES)
        assert parsed.ok and parsed.format == "code", row["id"]
        assert parsed.to_json() == ast.literal_eval(row["plan_str"]), row["id"]


def test_prediction_9005_is_code_form() -> None:
    code = (
        "def solve():\n"
        '    output0 = image_captioning(image="2339720.jpg")\n'
        "    output1 = image_generation(text=f\"a watercolor painting of {output0['text']}\")\n"
        "    result = {0: output0, 1: output1}\n"
        "    return result\n"
    )
    parsed = parse_plan(code, tool_names=TOOL_NAMES)
    assert parsed.to_json() == [
        {"id": 0, "name": "image captioning", "args": {"image": "2339720.jpg"}},
        {
            "id": 1,
            "name": "image generation",
            "args": {"text": "a watercolor painting of <node-0>.text"},
        },
    ]
    step = parsed.steps[1]
    assert (step.line, step.column) == (3, 15)
    assert step.arg_positions["text"] == (3, 32)


def test_code_names_references_and_fences() -> None:
    code = (
        "Here is the program:\n"
        "```python\n"
        'output0 = Image_Captioning(image="a.jpg")\n'
        'caption = tools.text_summarization(text="x " + output0.text)\n'
        "question = 'Who?'\n"
        "output5 = question_answering(text=caption['text'], question=question)\n"
        "count(output0, objects=output9['objects'], **extra)\n"
        "```\n"
    )
    parsed = parse_plan(code, tool_names=TOOL_NAMES)
    assert parsed.ok
    assert [(s.id, s.name) for s in parsed.steps] == [
        (0, "image captioning"),
        (1, "text summarization"),
        (5, "question answering"),
        (3, "count"),
    ]
    assert parsed.steps[1].args == {"text": "x <node-0>.text"}
    assert parsed.steps[2].args == {"text": "<node-1>.text", "question": "Who?"}
    assert parsed.steps[3].args == {
        "<positional 1>": "<node-0>",
        "objects": "<node-9>.objects",
        "**": "extra",
    }
    assert parsed.steps[0].line == 3  # lines count from the top of the whole text


def test_code_without_tool_names_maps_underscores_to_spaces() -> None:
    parsed = parse_plan("output0 = Get_Date_Fact(date='May 7')")
    assert parsed.to_json() == [{"id": 0, "name": "Get Date Fact", "args": {"date": "May 7"}}]


def test_code_syntax_error_has_line_and_column() -> None:
    code = 'def solve():\n    output0 = image_captioning(image="a.jpg"\n    return output0\n'
    parsed = parse_plan(code)
    (finding,) = parsed.findings
    assert finding.code == "parse_error" and parsed.format == "code"
    assert (finding.line, finding.column) == (2, 31)


def test_code_without_calls_is_a_parse_error() -> None:
    (finding,) = parse_plan("x = 1\nprint\n", plan_format="code").findings
    assert finding.code == "parse_error" and "no tool call" in finding.message


def test_format_detection_and_forced_formats() -> None:
    assert looks_like_code("output0 = count(objects=x)")
    assert looks_like_code("def solve():\n    pass")
    assert not looks_like_code("[{'id': 0, 'name': 'count', 'args': {'objects': 'x'}}]")
    assert parse_plan([{"id": 0, "name": "count", "args": {}}], plan_format="code").findings
    assert parse_plan("output0 = count(objects=x)", plan_format="json").findings
    assert parse_plan("   \n").findings[0].message == "the plan is empty"


def test_tool_name_normalisation() -> None:
    assert normalize_tool_name("  Image__Crop  LEFT ") == "image crop left"
    assert resolve_tool_name("image_crop_left", TOOL_NAMES) == "image crop left"
    assert resolve_tool_name("IMAGE CAPTIONING", TOOL_NAMES) == "image captioning"
    assert resolve_tool_name("text translation", TOOL_NAMES) is None


# --------------------------------------------------------------------------- never raises

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
plan_like = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "id": st.integers(-2, 5) | st.text(max_size=3),
            "name": st.sampled_from(TOOL_NAMES) | st.text(max_size=12),
            "args": st.dictionaries(
                st.text(max_size=8),
                st.text(alphabet="<>node-.{}0123 abc\"'\\\n", max_size=24) | json_values,
                max_size=3,
            ),
        },
    ),
    max_size=4,
)
code_like = st.lists(
    st.sampled_from(
        [
            "def solve():\n",
            "    ",
            "output0 = ",
            "output1",
            "image_captioning(",
            "image=",
            "output0['text']",
            "f\"x {output0['text']}\"",
            ")",
            "\n",
            "(",
            "'",
            '"',
            "**",
            "return result",
            "```python\n",
            "```",
        ]
    ),
    max_size=20,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.text() | code_like)
def test_parse_never_raises_on_text(text: str) -> None:
    for fmt in ("auto", "json", "code"):
        parsed = parse_plan(text, plan_format=fmt, tool_names=TOOL_NAMES)
        assert isinstance(parsed, ParsedPlan)
        assert all(f.code == "parse_error" for f in parsed.findings)


@settings(max_examples=300, deadline=None)
@given(json_values | plan_like)
def test_parse_never_raises_on_objects(value: Any) -> None:
    assert isinstance(parse_plan(value), ParsedPlan)
    with contextlib.suppress(PlanFormatError):  # the only exception it may raise
        plan_to_code_lines(value)
