"""Fuzzing: on any mixture of tag fragments, braces, quotes and text, ``parse`` and ``validate``
only ever return findings, and the segments always rebuild the input exactly."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # pytest-django adds the project root; -p no:django does not
    sys.path.insert(0, str(ROOT))

from benchmark.tags import (  # noqa: E402
    CODES,
    SEVERITIES,
    ParsedText,
    TextSegment,
    ToolCall,
    parse,
    serialize,
    validate,
)

FUZZ = settings(
    max_examples=int(os.environ.get("BENCHWRIGHT_TAG_FUZZ_EXAMPLES", "2000")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

FRAGMENTS = [
    "<tool>",
    "</tool>",
    "<imgen>",
    "</imgen>",
    "<tool",
    "</imgen",
    "{",
    "}",
    "[",
    "]",
    "'",
    '"',
    "\\",
    ":",
    ",",
    "\n",
    "\n\n",
    " ",
    "\t",
    '"tool_name"',
    '"description"',
    '"params"',
    '"img_index"',
    "'source'",
    "'code'",
    "'description'",
    "'params'",
    "'img_index'",
    "'prompt'",
    '"Reference"',
    '"Edit"',
    '"Code"',
    "'edit'",
    "'code'",
    "'search'",
    "0",
    "-1",
    "99",
    "1.5",
    "True",
    "null",
    "true",
    "As shown in the image below, ",
    "see the figure",
    "Some words.",
    "print(1)",
    "plt.plot([1, 2]",
    "\\n",
    "\\'",
    "é",
    "\u2028",
    "\x00",
    '{"tool_name": "Reference", "description": "d", "params": {"img_index": 0}}',
    "{'source': 'edit', 'description': 'd', 'params': {'img_index': 1, 'prompt': 'p'}}",
    "{'source': 'code', 'description': 'd', 'params': {'code': 'x = ['a']'}}",
    '<tool>{"tool_name": "Code", "description": "c", "params": {"code": "x = ("}}</tool>',
    "<imgen>{'source': 'search', 'description': 's', 'params': {'query': ''}}</imgen>",
]

fuzz_text = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=6), min_size=0, max_size=40).map(
    "".join
)


def check_parse(parsed: ParsedText, text: str) -> None:
    assert serialize(parsed) == text
    pos = 0
    for segment in parsed.segments:
        assert isinstance(segment, (TextSegment, ToolCall))
        assert segment.start == pos and segment.end >= segment.start
        pos = segment.end
    assert pos == len(text)
    for index, tool in enumerate(parsed.tools):
        assert tool.index == index and parsed.segments[tool.segment_pos] is tool
        assert tool.start <= tool.payload_start <= tool.payload_end <= tool.end
        assert tool.payload is None or isinstance(tool.payload, dict)


def check_findings(findings: list, parsed: ParsedText) -> None:
    for finding in findings:
        assert finding.code in CODES and finding.severity in SEVERITIES
        assert 0 <= finding.start <= finding.end <= len(parsed.text)
        assert finding.tag is None or 0 <= finding.tag < len(parsed.tools)
        assert isinstance(finding.message, str) and finding.message
        finding.to_dict()


@FUZZ
@given(
    fuzz_text,
    st.none() | st.integers(0, 8),
    st.integers(0, 4),
    st.none() | st.sampled_from([-1, 0, 1, 2, 4, 99, "inf"]),
)
def test_parse_and_validate_only_return_findings(
    text: str, image_count: int | None, input_images: int, image_num: int | str | None
) -> None:
    for syntax in ("atp", "llmi"):
        parsed = parse(text, syntax)  # type: ignore[arg-type]
        check_parse(parsed, text)
        check_findings(parsed.findings, parsed)
        findings = validate(
            parsed,
            None,
            image_count=image_count,
            input_images=input_images,
            image_num=image_num,
            placement=True,
        )
        check_findings(findings, parsed)


@settings(max_examples=300, deadline=None)
@given(st.text(), st.sampled_from(["atp", "llmi"]))
def test_arbitrary_unicode(text: str, syntax: str) -> None:
    parsed = parse(text, syntax)  # type: ignore[arg-type]
    check_parse(parsed, text)
    check_findings(
        validate(parsed, None, image_count=3, image_num=2 if syntax == "llmi" else None), parsed
    )


def test_pathological_inputs() -> None:
    """Huge, deep and repetitive inputs: findings only, in reasonable time."""
    deep = "<imgen>" + "[" * 5000 + "</imgen>"
    deep_dict = "<tool>" + '{"a": ' * 3000 + "1" + "}" * 3000 + "</tool>"
    long_unclosed = "<tool>{'" + "x" * 200_000
    quotes = "<imgen>{'source': '" + "'" * 20_000 + "</imgen>"
    code = (
        '<tool>{"tool_name": "Code", "description": "c", "params": {"code": "'
        + "(" * 500
        + '"}}</tool>'
    )
    many = "<tool>" * 5000 + "</tool>" * 5000
    nested_value = (  # deep enough for repr() to hit the recursion limit, not orjson's
        '<tool>{"tool_name": "Reference", "description": "d", "params": {"img_index": '
        + "[" * 1000
        + "]" * 1000
        + "}}</tool>"
    )
    wide = (
        '<tool>{"tool_name": "Search", "description": "d", "params": {'
        + ", ".join(f'"k{i}": {i}' for i in range(5000))
        + ', "query": "q"}}</tool>'
    )
    huge_key = (
        '<tool>{"tool_name": "Search", "description": "d", "params": {"'
        + "k" * 500_000
        + '": 1}}</tool>'
    )
    cases = (deep, deep_dict, long_unclosed, quotes, code, many, nested_value, wide, huge_key)
    for text in cases:
        for syntax in ("atp", "llmi"):
            parsed = parse(text, syntax)  # type: ignore[arg-type]
            check_parse(parsed, text)
            check_findings(validate(parsed, None, image_count=1, placement=True), parsed)
    wide_findings = validate(parse(wide, "atp"), None)
    assert [f.code for f in wide_findings] == ["unknown_param"] * 11
    assert any("4990 more" in f.message for f in wide_findings)
