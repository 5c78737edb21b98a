"""benchmark.tags.validate: toolset checks, image indices, placement rules, LLM-I R_rule, and the
findings expected on the sample answers."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # pytest-django adds the project root; -p no:django does not
    sys.path.insert(0, str(ROOT))

from benchmark.tags import (  # noqa: E402
    ATP_TOOLSET,
    CODES,
    LLMI_TOOLSET,
    Finding,
    parse,
    parse_image_num,
    rule_score,
    toolset_from_specs,
    validate,
)
from benchmark.tags.validate import _FIGURE_PHRASE_ANY_CASE, _figure_phrases  # noqa: E402
from tests.shared_data import SHARED_DATA, needs_data  # noqa: E402

DATA = SHARED_DATA
needs_atp = needs_data("atp")


def atp_tag(tool: str, params: dict[str, Any], description: str = "An image") -> str:
    payload = {"tool_name": tool, "description": description, "params": params}
    return f"<tool>{json.dumps(payload)}</tool>"


def llmi_tag(source: str, params: dict[str, Any], description: str = "An image") -> str:
    return f"<imgen>{ {'source': source, 'description': description, 'params': params}!r}</imgen>"


def check(text: str, syntax: str = "atp", **kwargs: Any) -> list[Finding]:
    return validate(parse(text, syntax), None, **kwargs)  # type: ignore[arg-type]


def summary(findings: list[Finding]) -> list[tuple[str, int | None]]:
    return [(f.code, f.tag) for f in findings]


def errors(findings: list[Finding]) -> list[tuple[str, int | None]]:
    return [(f.code, f.tag) for f in findings if f.severity == "error"]


def para(*blocks: str) -> str:
    return "\n\n".join(blocks)


# --------------------------------------------------------------------------- rule score


@pytest.mark.parametrize(
    ("n_gen", "image_num", "expected"),
    [
        (0, -1, 1.0),
        (2, -1, 0.0),
        (0, 0, 1.0),
        (7, 0, 1.0),
        (0, math.inf, 0.0),
        (1, "Inf", 1.0),
        (3, 99, 1.0),
        (0, 99, 0.0),
        (2, 4, 0.5),
        (4, 4, 1.0),
        (5, 4, 0.7),
        (6, 4, 0.4),
        (7, 4, 0.1),
        (8, 4, 0.0),
        (20, 1, 0.0),
        (0, 3, 0.0),
    ],
)
def test_rule_score(n_gen: int, image_num: Any, expected: float) -> None:
    assert rule_score(n_gen, image_num) == pytest.approx(expected)


@pytest.mark.parametrize("value", [-2, 1.5, "x", True, "", None])
def test_invalid_image_num(value: Any) -> None:
    with pytest.raises((ValueError, TypeError)):
        parse_image_num(value)


def test_image_num_aliases() -> None:
    assert parse_image_num("inf") == parse_image_num(99) == parse_image_num(math.inf) == math.inf
    assert parse_image_num("4") == 4 and parse_image_num(-1) == -1 and parse_image_num(2.0) == 2


def test_image_count_constraint_finding() -> None:
    tags = [llmi_tag("search", {"query": f"q{i}"}) for i in range(5)]
    text = para("Intro.", *tags)
    findings = check(text, "llmi", image_num=4)
    (finding,) = findings
    assert finding.code == "image_count_constraint" and finding.score == pytest.approx(0.7)
    assert finding.tag is None
    parsed = parse(text, "llmi")
    assert (finding.start, finding.end) == (parsed.tools[4].start, parsed.tools[4].end)
    assert check(text, "llmi", image_num=5) == []
    assert check(text, "llmi", image_num=0) == []
    (none_allowed,) = check(text, "llmi", image_num=-1)
    assert none_allowed.score == 0.0 and "no images" in none_allowed.message
    (too_few,) = check(text, "llmi", image_num=10)
    assert too_few.score == pytest.approx(0.5) and "5/10" in too_few.message


def test_image_count_ignores_unclosed_and_unreadable_tags() -> None:
    text = para(
        llmi_tag("search", {"query": "a"}),
        "<imgen>{broken}</imgen>",
        "<imgen>{'source': 'search', 'description': 'x', 'params': {'query': 'b'}}",
    )
    (finding,) = [f for f in check(text, "llmi", image_num=2) if f.code == "image_count_constraint"]
    assert finding.score == pytest.approx(0.5)


def test_validate_rejects_bad_arguments() -> None:
    parsed = parse("x", "llmi")
    with pytest.raises(ValueError):
        validate(parsed, None, image_num=-3)
    with pytest.raises(ValueError):
        validate(parsed, None, input_images=-1)


# --------------------------------------------------------------------------- toolset checks


def test_clean_atp_answer_has_no_findings() -> None:
    text = para(
        "Step one.",
        atp_tag("Reference", {"img_index": 0}),
        "Step two.",
        atp_tag("Edit", {"img_index": 1, "prompt": "circle the valve"}),
        "Chart.",
        atp_tag("Code", {"code": "import matplotlib.pyplot as plt\nplt.bar([1], [2])"}),
        atp_tag("Search", {"query": "valve"}),
        atp_tag("Diffusion", {"prompt": "a tidy kitchen"}),
    )
    assert check(text, image_count=2) == []


def test_tool_names_match_case_insensitively() -> None:
    for name in ("reference", "REFERENCE", "Reference"):
        assert check(atp_tag(name, {"img_index": 0}), image_count=1) == []


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        (atp_tag("Painter", {"prompt": "x"}), "unknown_tool"),
        (atp_tag("Reference", {}), "missing_param"),
        (atp_tag("Search", {"query": "q", "lang": "en"}), "unknown_param"),
        (atp_tag("Reference", {"img_index": "1"}), "bad_param_type"),
        (atp_tag("Reference", {"img_index": True}), "bad_param_type"),
        (atp_tag("Reference", {"img_index": 1.0}), "bad_param_type"),
        (atp_tag("Diffusion", {"prompt": "   "}), "empty_prompt"),
        (atp_tag("Search", {"query": ""}), "empty_prompt"),
        (atp_tag("Search", {"query": "q"}, description=" "), "empty_prompt"),
        (atp_tag("Code", {"code": ""}), "empty_prompt"),
        (atp_tag("Code", {"code": "plt.plot([1, 2]"}), "code_syntax"),
        (atp_tag("Code", {"code": "for x in y\n  pass"}), "code_syntax"),
        (atp_tag("Reference", {"img_index": 3}), "img_index_out_of_range"),
        (atp_tag("Edit", {"img_index": -1, "prompt": "x"}), "img_index_out_of_range"),
        ('<tool>{"tool_name": "Search", "params": {"query": "q"}}</tool>', "missing_param"),
        ('<tool>{"description": "d", "params": {"query": "q"}}</tool>', "missing_param"),
        ('<tool>{"tool_name": "Search", "description": "d"}</tool>', "missing_param"),
        ('<tool>{"tool_name": 3, "description": "d", "params": {}}</tool>', "bad_param_type"),
        (
            '<tool>{"tool_name": "Search", "description": 1, "params": {"query": "q"}}</tool>',
            "bad_param_type",
        ),
        (
            '<tool>{"tool_name": "Search", "description": "d", "params": []}</tool>',
            "bad_param_type",
        ),
        (
            '<tool>{"tool_name": "Search", "description": "d", "params": {"query": "q"}, '
            '"why": "x"}</tool>',
            "unknown_param",
        ),
    ],
)
def test_single_tag_problems(tag: str, expected: str) -> None:
    findings = check(tag, image_count=2)
    assert [f.code for f in findings] == [expected]
    finding = findings[0]
    assert finding.tag == 0 and finding.severity == "error"
    tool = parse(tag, "atp").tools[0]
    assert tool.start <= finding.start < finding.end <= tool.end


def test_param_findings_point_at_the_value() -> None:
    tag = atp_tag("Reference", {"img_index": 7})
    (finding,) = check(tag, image_count=2)
    assert tag[finding.start : finding.end] == '"img_index": 7'


def test_code_syntax_reports_line_and_accepts_markdown_fences() -> None:
    (finding,) = check(atp_tag("Code", {"code": "x = 1\ny = (2"}))
    assert finding.code == "code_syntax" and "line 2" in finding.message
    assert check(atp_tag("Code", {"code": "```python\nx = 1\n```"})) == []


def test_no_range_check_without_image_count() -> None:
    assert check(atp_tag("Reference", {"img_index": 40})) == []
    (finding,) = check(atp_tag("Reference", {"img_index": 0}), image_count=0)
    assert finding.code == "img_index_out_of_range" and "no images" in finding.message


def test_reference_reused_but_edit_of_same_image_is_fine() -> None:
    text = para(
        "A.",
        atp_tag("Reference", {"img_index": 0}),
        "B.",
        atp_tag("Edit", {"img_index": 0, "prompt": "label it"}),
        "C.",
        atp_tag("Reference", {"img_index": 1}),
        "D.",
        atp_tag("reference", {"img_index": 0}),
    )
    assert summary(check(text, image_count=2)) == [("reference_reused", 3)]


def test_toolset_decides_the_parameters() -> None:
    toolset = {
        "Code": {
            "params": [
                {"name": "diagram_type", "type": "str", "required": True},
                {"name": "data", "type": "list[float]", "required": True},
                {"name": "title", "type": "str", "required": False},
            ]
        }
    }
    ok = atp_tag("code", {"diagram_type": "bar", "data": [1, 2.5]})
    assert validate(parse(ok, "atp"), toolset) == []
    bad = atp_tag("code", {"diagram_type": "bar", "data": [1, "x"], "code": "x"})
    assert sorted(f.code for f in validate(parse(bad, "atp"), toolset)) == [
        "bad_param_type",
        "unknown_param",
    ]
    assert [f.code for f in validate(parse(atp_tag("Search", {"query": "q"}), "atp"), toolset)] == [
        "unknown_tool"
    ]


def test_unknown_type_names_are_not_checked() -> None:
    toolset = {"x": {"params": [{"name": "thing", "type": "audio", "required": True}]}}
    assert validate(parse(atp_tag("x", {"thing": 3}), "atp"), toolset) == []


def test_toolset_matches_the_project_builtin_rows() -> None:
    from benchmark.builtin.toolsets import ATP_TOOLS, LLMI_TOOLS

    def shape(toolset: dict[str, Any]) -> dict[str, list[tuple[str, str, bool]]]:
        return {
            name: [(p["name"], p["type"], p["required"]) for p in tool["params"]]
            for name, tool in toolset.items()
        }

    assert shape(toolset_from_specs(ATP_TOOLS)) == shape(ATP_TOOLSET)
    assert shape(toolset_from_specs(LLMI_TOOLS)) == shape(LLMI_TOOLSET)


# --------------------------------------------------------------------------- LLM-I indices


def test_llmi_edit_indexes_inputs_then_earlier_tags() -> None:
    text = para(
        llmi_tag("edit", {"img_index": 0, "prompt": "a"}),  # input 0
        llmi_tag("edit", {"img_index": 2, "prompt": "b"}),  # 2 inputs + tag 0 -> 0..2
        llmi_tag("edit", {"img_index": 4, "prompt": "c"}),  # 2 + 2 -> 0..3: out of range
    )
    (finding,) = check(text, "llmi", input_images=2)
    assert (finding.code, finding.tag) == ("img_index_out_of_range", 2)
    assert "valid: 0-3" in finding.message
    assert summary(check(text, "llmi", input_images=3)) == []


def test_llmi_edit_of_its_own_or_a_later_image_is_out_of_range() -> None:
    text = para(
        llmi_tag("edit", {"img_index": 0, "prompt": "x"}), llmi_tag("search", {"query": "q"})
    )
    (finding,) = check(text, "llmi")
    assert finding.code == "img_index_out_of_range" and "none" in finding.message


def test_llmi_placement_rules_off_by_default() -> None:
    text = "See the image below <imgen>{'source': 'search', 'description': 'x', 'params': {'query': 'q'}}</imgen> ok"
    assert check(text, "llmi") == []
    assert {f.code for f in check(text, "llmi", placement=True)} == {
        "mid_sentence",
        "figure_phrase",
    }


def test_llmi_missing_description() -> None:
    text = "<imgen>{'source': 'diffusion', 'params': {'prompt': 'a cat'}}</imgen>"
    (finding,) = check(text, "llmi")
    assert finding.code == "missing_param" and "description" in finding.message


# --------------------------------------------------------------------------- mid_sentence


REF0 = atp_tag("Reference", {"img_index": 0})
REF1 = atp_tag("Reference", {"img_index": 1})


@pytest.mark.parametrize(
    "text",
    [
        para("Intro.", REF0, "Next."),
        REF0 + "\n\nText after.",
        "Text before.\n\n" + REF0,
        "Text before.\n\n" + REF0 + "\n",
        "Text.\n \t\n" + REF0 + "  \n\t \nMore.",  # blank lines holding spaces
        "\n\n" + REF0,
        para("Intro.", REF0 + " " + REF1, "Next."),  # a block of two tags on one line
        para("Intro.", REF0 + "\n" + REF1, "Next."),
        para("Intro.", REF0, REF1, "Next."),
        "# Heading\n\n" + REF0 + "\n\n- item",
    ],
)
def test_at_paragraph_boundary(text: str) -> None:
    assert [f for f in check(text) if f.code == "mid_sentence"] == []


@pytest.mark.parametrize(
    ("text", "severity"),
    [
        ("Press both buttons " + REF0 + " for 3 seconds.", "error"),
        ("Sentence ends.\n\n" + REF0 + " The next one starts here.", "error"),
        ("Sentence ends. " + REF0 + "\n\nNext.", "error"),
        ("Line one\n" + REF0 + "\nline two of the same paragraph.", "warning"),
        ("Para.\n\n" + REF0 + "\nStill glued below.", "warning"),
        ("Intro " + REF0 + " " + REF1 + "\n\nNext.", "error"),
    ],
)
def test_not_at_paragraph_boundary(text: str, severity: str) -> None:
    findings = [f for f in check(text) if f.code == "mid_sentence"]
    assert findings and all(f.severity == severity for f in findings)
    first = parse(text, "atp").tools[0]
    assert (findings[0].start, findings[0].end) == (first.start, first.end)


# --------------------------------------------------------------------------- figure_phrase


@pytest.mark.parametrize(
    ("before", "after", "phrase"),
    [
        (
            "Stir constantly. As shown in the image below, keep the curds small.",
            "Done.",
            "As shown in the image below",
        ),
        ("Here is a photo of the finished plate.", "Enjoy.", "Here is a photo"),
        ("Compare the two rooms.", "The picture above shows the oak vanity.", "The picture above"),
        ("Check the seams.", "This diagram shows where the stitching runs.", "This diagram shows"),
        ("For details, see the figure.", "Next.", "see the figure"),
        ("The chart below compares both kettles.", "Next.", "The chart below"),
    ],
)
def test_figure_phrase_found(before: str, after: str, phrase: str) -> None:
    text = para(before, REF0, after)
    findings = [f for f in check(text) if f.code == "figure_phrase"]
    assert len(findings) == 1
    finding = findings[0]
    assert text[finding.start : finding.end].lower() == phrase.lower()
    assert finding.tag == 0 and finding.severity == "error"


@pytest.mark.parametrize(
    "sentence",
    [
        "Ask the seller for a sharp photo of both labels.",
        "Check each against the genuine details below.",
        "As shown by the 2019 results, sales grew.",
        "Keep the big picture in mind.",
        "Figs and dates go well together.",
    ],
)
def test_no_figure_phrase_false_positives(sentence: str) -> None:
    assert [f for f in check(para(sentence, REF0, sentence)) if f.code == "figure_phrase"] == []


def test_figure_phrase_only_next_to_a_tag() -> None:
    text = para("The image below is nice.", "Unrelated paragraph.", REF0, "End.")
    assert [f for f in check(text) if f.code == "figure_phrase"] == []


def test_figure_phrase_between_two_tags_is_reported_once() -> None:
    text = para(REF0, "The photo above shows the hall; the image below the stairs.", REF1)
    findings = [f for f in check(text) if f.code == "figure_phrase"]
    assert sorted((text[f.start : f.end], f.tag) for f in findings) == [
        ("The photo above", 0),
        ("the image below", 1),
    ]


# --------------------------------------------------------------------------- general


def test_findings_are_sorted_and_serializable() -> None:
    text = para(
        "See the figure " + atp_tag("Reference", {"img_index": 9}) + " now.",
        '<tool>{"tool_name": "Search",}</tool>',
    )
    findings = check(text, image_count=2)
    assert findings == sorted(findings, key=lambda f: (f.start, f.end, f.code))
    for finding in findings:
        data = finding.to_dict()
        assert set(data) >= {"code", "message", "start", "end", "tag", "severity"}
        assert data["code"] in CODES
        json.dumps(data)


# --------------------------------------------------------------------------- sample answers

ATP_EXPECTED: dict[str, list[tuple[str, int | None]]] = {
    "atp_0001": [],
    "atp_0002": [("mid_sentence", 3)],
    "atp_0003": [("figure_phrase", 2)],
    "atp_0004": [],
    "atp_0005": [("reference_reused", 3)],
    "atp_0006": [("malformed_payload", 2)],
    "atp_0007": [],
    "atp_0008": [("img_index_out_of_range", 2)],
    "atp_0009": [],
    "atp_0010": [],  # the decorative Diffusion call is a reviewer's judgment, not a rule
    "atp_0011": [],
    "atp_0012": [],
}


@needs_atp
def test_atp_sample_findings() -> None:
    rows = [json.loads(line) for line in (DATA / "atp" / "data.jsonl").open(encoding="utf-8")]
    got = {
        row["trace_id"]: summary(check(row["gt"], image_count=len(row["images"]))) for row in rows
    }
    assert got == ATP_EXPECTED


@needs_atp
def test_atp_sample_details() -> None:
    rows = {
        row["trace_id"]: row
        for row in map(json.loads, (DATA / "atp" / "data.jsonl").open(encoding="utf-8"))
    }
    gt = rows["atp_0003"]["gt"]
    (phrase,) = check(gt, image_count=4)
    assert gt[phrase.start : phrase.end] == "As shown in the image below"
    gt = rows["atp_0006"]["gt"]
    (malformed,) = check(gt, image_count=4)
    assert gt[malformed.start] == "," and "trailing comma" in malformed.message
    (out_of_range,) = check(rows["atp_0008"]["gt"], image_count=5)
    assert "= 6" in out_of_range.message and "0-4" in out_of_range.message


LLMI_EXPECTED: dict[tuple[str, int], list[tuple[str, int | None]]] = {
    ("text_only.json", 1): [("fallback_parse", 1)],
    ("text_only.json", 2): [("missing_param", 2)],
    ("text_only.json", 3): [("image_count_constraint", None)],
    ("text_only.json", 4): [("img_index_out_of_range", 2)],
    ("text_only.json", 5): [],
    ("mm_input.json", 1): [],
    ("mm_input.json", 2): [],
    ("mm_input.json", 3): [("unclosed_tag", 2)],
    ("mm_input.json", 4): [],
    ("mm_input.json", 5): [],
}


@needs_atp
def test_llmi_sample_findings() -> None:
    answers = json.loads((DATA / "llmi" / "answers.json").read_text(encoding="utf-8"))
    mm = json.loads((DATA / "llmi" / "mm_input.json").read_text(encoding="utf-8"))
    got = {}
    for answer in answers:
        key = (answer["input_file"], answer["sample_index"])
        inputs = len(mm[key[1] - 1]["images"]) if key[0] == "mm_input.json" else 0
        image_num = 4 if key == ("text_only.json", 3) else None  # "Include exactly four images"
        findings = check(answer["answer"], "llmi", input_images=inputs, image_num=image_num)
        got[key] = summary(findings)
        if key == ("text_only.json", 3):
            assert findings[0].score == pytest.approx(0.7)
        if key == ("text_only.json", 2):
            assert "description" in findings[0].message
        if key == ("text_only.json", 1):
            assert findings[0].severity == "info"
    assert got == LLMI_EXPECTED


# --------------------------------------------------------------------------- figure-phrase search


phrase_words = st.lists(
    st.sampled_from(
        [
            "as", "shown", "seen", "see", "you", "can", "in", "on", "the", "this", "our", "an",
            "image", "Images", "photo", "figure", "chart", "map", "below", "above", "here",
            "following", "is", "are", "shows", "look", "at", "refer", "to", "big", "PICTURE",
            "illustrated", "depicted", "mock-up", "x" * 30, ".", ",", "\n", "é", "İ",
        ]
    ),
    max_size=60,
).map(" ".join)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(phrase_words)
def test_keyword_guided_search_equals_a_plain_scan(text: str) -> None:
    """The keyword pre-filter and stretch scanning find exactly what one IGNORECASE scan of the
    whole window finds."""
    expected = [m.span() for m in _FIGURE_PHRASE_ANY_CASE.finditer(text)]
    assert _figure_phrases(text, 0, len(text)) == expected
