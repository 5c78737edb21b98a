"""benchmark.tags.parse: segments, spans, payload reading and parse findings."""

from __future__ import annotations

import ast
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # pytest-django adds the project root; -p no:django does not
    sys.path.insert(0, str(ROOT))

from benchmark.tags import ParsedText, TextSegment, ToolCall, parse, serialize  # noqa: E402
from benchmark.tags.payload import (  # noqa: E402
    _NO_VALUE,
    read_code_fallback,
    read_literal,
    read_literal_fast,
)
from tests.shared_data import SHARED_DATA, needs_data  # noqa: E402

DATA = SHARED_DATA
needs_atp = needs_data("atp")

REF = '<tool>{"tool_name": "Reference", "description": "Panel", "params": {"img_index": 1}}</tool>'


def codes(parsed: ParsedText) -> list[str]:
    return [f.code for f in parsed.findings]


def assert_covers(parsed: ParsedText) -> None:
    pos = 0
    for segment in parsed.segments:
        assert segment.start == pos
        assert parsed.text[segment.start : segment.end] == segment.raw
        pos = segment.end
    assert pos == len(parsed.text)
    assert serialize(parsed) == parsed.text


# --------------------------------------------------------------------------- structure


def test_atp_tag_between_paragraphs() -> None:
    text = f"Intro paragraph.\n\n{REF}\n\nOutro."
    parsed = parse(text, "atp")
    assert_covers(parsed)
    assert [s.kind for s in parsed] == ["text", "tool", "text"]
    (tool,) = parsed.tools
    assert isinstance(tool, ToolCall)
    assert tool.index == 0 and tool.segment_pos == 1 and tool.closed
    assert tool.raw == REF
    assert (tool.start, tool.end) == (18, 18 + len(REF))
    assert tool.payload_text.startswith("{") and tool.payload_text.endswith("}")
    assert text[tool.payload_start : tool.payload_end] == tool.payload_text
    assert tool.tool_name == "Reference"
    assert tool.description == "Panel"
    assert tool.params == {"img_index": 1}
    assert parsed.findings == []


def test_payload_span_excludes_whitespace_inside_markers() -> None:
    text = '<tool>\n  {"tool_name": "Search", "description": "d", "params": {}}  \n</tool>'
    tool = parse(text, "atp").tools[0]
    assert tool.payload_text == '{"tool_name": "Search", "description": "d", "params": {}}'
    assert tool.payload == {"tool_name": "Search", "description": "d", "params": {}}


def test_text_without_tags_is_one_segment() -> None:
    parsed = parse("plain answer\n\nwith paragraphs", "atp")
    assert len(parsed) == 1 and isinstance(parsed[0], TextSegment)
    assert parsed.tools == ()
    assert parse("", "llmi").segments == ()


def test_adjacent_tags_have_no_empty_text_between() -> None:
    parsed = parse(REF + REF, "atp")
    assert [s.kind for s in parsed] == ["tool", "tool"]
    assert [t.index for t in parsed.tools] == [0, 1]
    assert_covers(parsed)


def test_each_syntax_ignores_the_other_tag() -> None:
    text = "<imgen>{'source': 'search', 'description': 'x', 'params': {'query': 'q'}}</imgen>"
    assert parse(text, "atp").tools == ()
    assert len(parse(text, "llmi").tools) == 1
    assert parse(REF, "llmi").tools == ()


def test_markers_are_case_sensitive() -> None:
    assert parse(REF.replace("<tool>", "<Tool>").replace("</tool>", "</Tool>"), "atp").tools == ()


def test_unknown_syntax_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown syntax"):
        parse("x", "xml")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- payloads


def test_llmi_dict_literal() -> None:
    text = (
        "Text.\n\n<imgen>{'source': 'edit', 'description': 'Pip', "
        "'params': {'img_index': 0, 'prompt': \"Change the suit; keep the fox's pose\"}}</imgen>"
    )
    tool = parse(text, "llmi").tools[0]
    assert tool.tool_name == "edit"
    assert tool.params == {"img_index": 0, "prompt": "Change the suit; keep the fox's pose"}
    assert not tool.via_fallback


def test_llmi_accepts_json_style_double_quotes() -> None:
    text = '<imgen>{"source": "search", "description": "d", "params": {"query": "q"}}</imgen>'
    assert parse(text, "llmi").tools[0].payload == {
        "source": "search",
        "description": "d",
        "params": {"query": "q"},
    }


def test_llmi_json_literals_are_malformed_like_literal_eval() -> None:
    text = "<imgen>{'source': 'search', 'description': 'd', 'params': {'q': true}}</imgen>"
    parsed = parse(text, "llmi")
    assert codes(parsed) == ["malformed_payload"]
    assert parsed.tools[0].payload is None


def test_atp_trailing_comma_points_at_the_comma_and_is_recovered() -> None:
    text = (
        'Look 3.\n\n<tool>{"tool_name": "Edit", "description": "d", '
        '"params": {"img_index": 1, "prompt": "p"},}</tool>'
    )
    parsed = parse(text, "atp")
    (finding,) = parsed.findings
    assert finding.code == "malformed_payload" and finding.tag == 0
    assert text[finding.start] == ","
    assert "trailing comma" in finding.message
    tool = parsed.tools[0]
    assert tool.payload is None
    assert tool.recovered == {
        "tool_name": "Edit",
        "description": "d",
        "params": {"img_index": 1, "prompt": "p"},
    }
    assert tool.tool_name == "Edit"  # read from the recovered payload


@pytest.mark.parametrize(
    "body",
    ["", "   ", "[1, 2]", '"just a string"', "{'tool_name': 'Search'", "not json at all"],
)
def test_atp_bad_payloads(body: str) -> None:
    parsed = parse(f"<tool>{body}</tool>", "atp")
    assert codes(parsed) == ["malformed_payload"]
    finding = parsed.findings[0]
    assert 0 <= finding.start < finding.end <= len(parsed.text)


def test_atp_python_literal_is_malformed_but_recovered() -> None:
    text = "<tool>{'tool_name': 'Search', 'description': 'd', 'params': {'query': 'q'}}</tool>"
    parsed = parse(text, "atp")
    assert codes(parsed) == ["malformed_payload"]
    assert parsed.tools[0].recovered is not None


def test_llmi_code_fallback_reads_unescaped_quotes() -> None:
    body = (
        "{'source': 'code', 'description': 'Share', 'params': {'code': "
        "'labels = ['A', 'B']\\nplt.pie([1, 2], labels=labels)\\nplt.title('Mix')'}}"
    )
    with pytest.raises(SyntaxError):
        ast.literal_eval(body)
    parsed = parse(f"<imgen>{body}</imgen>", "llmi")
    tool = parsed.tools[0]
    assert tool.via_fallback
    assert tool.payload == {
        "source": "code",
        "description": "Share",
        "params": {"code": "labels = ['A', 'B']\nplt.pie([1, 2], labels=labels)\nplt.title('Mix')"},
    }
    assert codes(parsed) == ["fallback_parse"]
    assert parsed.findings[0].severity == "info"


def test_code_fallback_only_for_code_source() -> None:
    assert read_code_fallback("{'source': 'search', 'description': 'x', 'params': {}}") is None
    assert read_code_fallback("{'source': 'code', 'params': {'code': 'x'}}") is None


def test_literal_errors_carry_a_position() -> None:
    value, error = read_literal("{'a': 1,\n 'b': 'x' 'y' z}")
    assert value is None and error is not None
    assert error.pos > 8  # on the second line


# --------------------------------------------------------------------------- broken tags


def test_unclosed_tag_at_end_keeps_payload() -> None:
    text = (
        "Closing page.\n\n<imgen>{'source': 'diffusion', 'description': 'Lighthouse', "
        "'params': {'prompt': 'A lighthouse at sunset'}}"
    )
    parsed = parse(text, "llmi")
    assert_covers(parsed)
    (tool,) = parsed.tools
    assert not tool.closed and tool.end == len(text)
    assert tool.payload is not None and tool.tool_name == "diffusion"
    (finding,) = parsed.findings
    assert finding.code == "unclosed_tag" and (finding.start, finding.end) == (tool.start, tool.end)


def test_unclosed_tag_stops_after_its_braces() -> None:
    text = (
        f'A.\n\n<tool>{{"tool_name": "Search", "description": "d", "params": {{}}}} tail\n\n{REF}'
    )
    parsed = parse(text, "atp")
    assert_covers(parsed)
    first, second = parsed.tools
    assert not first.closed and first.raw.endswith("}}")
    assert second.closed and second.payload is not None
    assert isinstance(parsed.segments[2], TextSegment) and "tail" in parsed.segments[2].text
    assert codes(parsed) == ["unclosed_tag"]


def test_unclosed_tag_without_braces_stops_at_blank_line() -> None:
    text = "A.\n\n<tool>oops\n\nNext paragraph stays text."
    parsed = parse(text, "atp")
    assert_covers(parsed)
    assert parsed.tools[0].raw == "<tool>oops"
    assert parsed.segments[-1].raw == "\n\nNext paragraph stays text."
    assert sorted(codes(parsed)) == ["malformed_payload", "unclosed_tag"]


def test_nested_tags() -> None:
    inner = REF
    text = f'<tool>{{"tool_name": "Search", {inner} "x"}}</tool>'
    parsed = parse(text, "atp")
    assert_covers(parsed)
    outer, nested = parsed.tools
    assert not outer.closed and nested.closed and nested.payload is not None
    nested_findings = [f for f in parsed.findings if f.code == "nested_tag"]
    assert len(nested_findings) == 1
    finding = nested_findings[0]
    assert finding.tag == 0 and finding.start == 0 and finding.end == len(text)
    assert "orphan_close_tag" not in codes(parsed) and "unclosed_tag" not in codes(parsed)


def test_orphan_close_tag() -> None:
    text = f"Some text </tool> more.\n\n{REF}"
    parsed = parse(text, "atp")
    assert_covers(parsed)
    (finding,) = parsed.findings
    assert finding.code == "orphan_close_tag" and finding.tag is None
    assert text[finding.start : finding.end] == "</tool>"
    assert len(parsed.tools) == 1


def test_two_opens_then_one_close() -> None:
    text = "<tool>first<tool>{}</tool>"
    parsed = parse(text, "atp")
    assert_covers(parsed)
    assert [t.closed for t in parsed.tools] == [False, True]
    assert "unclosed_tag" in codes(parsed)


# --------------------------------------------------------------------------- fast literal reader

REFUSED = object()


def slow_literal_eval(source: str) -> Any:
    """The reference: ast.literal_eval itself (never the fast path)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.literal_eval(source)
    except Exception:
        return REFUSED


literal_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=8) | st.integers(-5, 5), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(literal_values)
def test_fast_reader_matches_literal_eval_on_reprs(value: Any) -> None:
    source = repr(value)
    fast = read_literal_fast(source)
    if fast is not _NO_VALUE:
        assert fast == ast.literal_eval(source)
        assert type(fast) is type(value)


@settings(max_examples=600, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("{}[]:,'\"\\ntxu0123456789-_ TrueFalsNo\n\té")), max_size=40
    )
)
def test_fast_reader_never_disagrees_with_literal_eval(source: str) -> None:
    fast = read_literal_fast(source)
    if fast is _NO_VALUE:
        return
    expected = slow_literal_eval(source)
    assert expected is not REFUSED, f"fast reader accepted {source!r} but literal_eval refuses it"
    assert fast == expected and type(fast) is type(expected)


# --------------------------------------------------------------------------- sample answers


@needs_atp
def test_sample_answers_parse_and_round_trip() -> None:
    rows = [json.loads(line) for line in (DATA / "atp" / "data.jsonl").open(encoding="utf-8")]
    counts = {row["trace_id"]: len(parse(row["gt"], "atp").tools) for row in rows}
    assert counts["atp_0001"] == 3 and counts["atp_0010"] == 8
    for row in rows:
        assert serialize(parse(row["gt"], "atp")) == row["gt"]
    answers = json.loads((DATA / "llmi" / "answers.json").read_text(encoding="utf-8"))
    for answer in answers:
        parsed = parse(answer["answer"], "llmi")
        assert_covers(parsed)
        assert parsed.tools


@needs_atp
def test_sample_text_only_1_second_tag_needs_the_fallback() -> None:
    answers = json.loads((DATA / "llmi" / "answers.json").read_text(encoding="utf-8"))
    parsed = parse(answers[0]["answer"], "llmi")
    assert [t.via_fallback for t in parsed.tools] == [False, True]
    assert codes(parsed) == ["fallback_parse"]
    code = parsed.tools[1].params["code"]  # type: ignore[index]
    assert code.startswith("labels = ['Single-origin beans'") and "\n" in code


@settings(max_examples=600, deadline=None)
@given(
    literal_values,
    st.lists(
        st.tuples(
            st.integers(0, 400),
            st.integers(0, 3),
            st.sampled_from(["", ",", ":", "'", '"', "{", "}", "[", "]", " ", "\\", "1", "x"]),
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_fast_reader_on_damaged_reprs(value: Any, edits: list[tuple[int, int, str]]) -> None:
    """Near-miss inputs (a repr with characters dropped or inserted): the fast reader either
    gives up or agrees with ast.literal_eval."""
    source = repr(value)
    for at, drop, insert in edits:
        at = min(at, len(source))
        source = source[:at] + insert + source[at + drop :]
    fast = read_literal_fast(source)
    if fast is _NO_VALUE:
        return
    expected = slow_literal_eval(source)
    assert expected is not REFUSED, f"fast reader accepted {source!r} but literal_eval refuses it"
    assert fast == expected and type(fast) is type(expected)
