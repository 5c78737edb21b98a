"""Plan verification against m&m's toolset: tools, argument names, references and graph edges."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmark.plans.parse import Finding, parse_plan
from benchmark.plans.verify import (
    FINDING_CODES,
    Toolset,
    load_toolset,
    toolset_from_mapping,
    verify_parsed,
    verify_plan,
    verify_text,
)
from tests.shared_data import MMS_DATA

ROOT = Path(__file__).resolve().parents[3]
BUNDLED = ROOT / "benchmark" / "builtin" / "data"
INVALID_ROWS = {9010, 9011, 9012}


@pytest.fixture(scope="module")
def toolset() -> Toolset:
    return load_toolset(BUNDLED / "tool_metadata.json", BUNDLED / "tool_graph.json")


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    path = MMS_DATA / "tasks.json"
    if not path.exists():
        pytest.skip(f"m&m's sample data not found at {MMS_DATA}")
    return json.loads(path.read_text("utf-8"))


def codes(findings: list[Finding]) -> list[str]:
    return sorted(f.code for f in findings)


def step(i: int, name: str, **args: Any) -> dict[str, Any]:
    return {"id": i, "name": name, "args": args}


# --------------------------------------------------------------------------- toolset


def test_load_toolset_reads_33_tools_and_149_edges(toolset: Toolset) -> None:
    assert len(toolset.tools) == 33 and len(toolset.edges) == 149
    assert toolset.tools["get weather"] == {
        "inputs": ["lon", "lat"],
        "outputs": ["objects"],
        "input_types": ["text", "text"],
        "output_types": ["list[dict]"],
    }
    assert ("automatic speech recognition", "text summarization") in toolset.edges
    assert ("image classification", "image captioning") not in toolset.edges


def test_load_toolset_accepts_objects_and_keyed_metadata() -> None:
    metadata = json.loads((BUNDLED / "tool_metadata.json").read_text("utf-8"))
    graph = json.loads((BUNDLED / "tool_graph.json").read_text("utf-8"))
    keyed = {m["name"]: {k: v for k, v in m.items() if k != "name"} for m in metadata}
    a = load_toolset(metadata, graph)
    b = load_toolset(keyed, graph["edges"])
    assert a.tools == b.tools and a.edges == b.edges


def test_plain_mapping_works_as_toolset(toolset: Toolset) -> None:
    plain = {
        "tools": {
            "object detection": {"inputs": ["image"], "outputs": ["image", "objects"]},
            "count": {"inputs": ["objects"], "outputs": ["number"]},
        },
        "edges": [["object detection", "count"]],
    }
    plan = [
        step(0, "object detection", image="a.jpg"),
        step(1, "count", objects="<node-0>.objects"),
    ]
    assert verify_plan(plan, plain) == []
    assert toolset_from_mapping(toolset) is toolset


# --------------------------------------------------------------------------- sample rows


def test_sample_rows_verify_clean_except_the_three_invalid_ones(
    rows: list[dict[str, Any]], toolset: Toolset
) -> None:
    for row in rows:
        if row["id"] in INVALID_ROWS:
            continue
        assert verify_plan(row["plan_str"], toolset) == [], row["id"]
        assert verify_plan(ast.literal_eval(row["plan_str"]), toolset) == [], row["id"]
        assert verify_plan(row["code_str"], toolset) == [], row["id"]
        assert verify_plan(row["code_str"], toolset, plan_format="code") == [], row["id"]


def _row(rows: list[dict[str, Any]], row_id: int) -> dict[str, Any]:
    return next(r for r in rows if r["id"] == row_id)


def test_row_9010_unknown_tool(rows: list[dict[str, Any]], toolset: Toolset) -> None:
    row = _row(rows, 9010)
    (finding,) = verify_plan(row["plan_str"], toolset)
    assert (finding.code, finding.step) == ("unknown_tool", 0)
    assert "text translation" in finding.message
    (in_code,) = verify_plan(row["code_str"], toolset)
    assert (in_code.code, in_code.line, in_code.column) == ("unknown_tool", 2, 15)


def test_row_9011_wrong_argument_name(rows: list[dict[str, Any]], toolset: Toolset) -> None:
    row = _row(rows, 9011)
    findings = verify_plan(row["plan_str"], toolset)
    assert codes(findings) == ["missing_arg", "unknown_arg"]
    by_code = {f.code: f for f in findings}
    assert "'question'" in by_code["missing_arg"].message
    assert "'text'" in by_code["unknown_arg"].message
    assert {f.step for f in findings} == {0}
    in_code = {f.code: f for f in verify_plan(row["code_str"], toolset)}
    assert (in_code["unknown_arg"].line, in_code["unknown_arg"].column) == (2, 62)


def test_row_9012_edge_not_in_graph(rows: list[dict[str, Any]], toolset: Toolset) -> None:
    row = _row(rows, 9012)
    (finding,) = verify_plan(row["plan_str"], toolset)
    assert (finding.code, finding.step) == ("invalid_edge", 1)
    assert "image classification -> image captioning" in finding.message
    assert codes(verify_plan(row["code_str"], toolset)) == ["invalid_edge"]


def test_edges_follow_data_flow_not_step_order(toolset: Toolset) -> None:
    # The prediction for 9012 runs both tools on the image itself: no edge is needed.
    plan = [
        step(0, "image classification", image="a.jpg"),
        step(1, "image captioning", image="a.jpg"),
    ]
    assert verify_plan(plan, toolset) == []


# --------------------------------------------------------------------------- rules


def test_tool_names_match_loosely(toolset: Toolset) -> None:
    plan = [
        step(0, "Image_Captioning", image="a.jpg"),
        step(1, "TEXT  summarization", text="<node-0>.text"),
    ]
    assert verify_plan(plan, toolset) == []


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("<node-2>.text", "later step"),
        ("<node-1>.text", "the step itself"),
        ("<node-7>.text", "does not exist"),
        ("<node-0>.caption", "no output 'caption'"),
        ("<node-0>", "names no output"),
        ("<node-first>.text", "by its number"),
        ("a summary of <node-0>.words please", "no output 'words'"),
    ],
)
def test_dangling_references(toolset: Toolset, value: str, fragment: str) -> None:
    plan = [
        step(0, "image captioning", image="a.jpg"),
        step(1, "text summarization", text=value),
        step(2, "text generation", text="<node-1>.text"),
    ]
    findings = verify_plan(plan, toolset)
    assert codes(findings) == ["dangling_reference"]
    assert findings[0].step == 1 and fragment in findings[0].message


def test_embedded_references_are_checked_for_edges(toolset: Toolset) -> None:
    plan = [
        step(0, "image classification", image="a.jpg"),
        step(1, "image generation", text="a painting of <node-0>.text"),
        step(2, "image captioning", image="<node-1>.image"),
        step(3, "text generation", text="compare <node-0>.text with <node-2>.text"),
    ]
    assert verify_plan(plan, toolset) == []
    plan[1] = step(1, "get weather", lon="<node-0>.text", lat="1")
    found = verify_plan(plan, toolset)
    # Step 1: no edge image classification -> get weather. Step 2: get weather outputs only
    # 'objects' (dangling <node-1>.image) and has no edge into image captioning. Step 3 still
    # passes: both of its sources have edges into text generation.
    assert [(f.code, f.step) for f in found] == [
        ("invalid_edge", 1),
        ("dangling_reference", 2),
        ("invalid_edge", 2),
    ]


def test_missing_and_extra_arguments(toolset: Toolset) -> None:
    plan = [step(0, "get weather", lon="1", latitude="2", units="C")]
    findings = verify_plan(plan, toolset)
    assert codes(findings) == ["missing_arg", "unknown_arg", "unknown_arg"]


def test_unknown_tool_skips_argument_checks_but_references_still_checked(toolset: Toolset) -> None:
    plan = [
        step(0, "text translation", text="bonjour"),
        step(1, "text summarization", text="<node-0>.text"),
    ]
    assert codes(verify_plan(plan, toolset)) == ["unknown_tool"]
    plan[1]["args"]["text"] = "<node-5>.text"
    assert codes(verify_plan(plan, toolset)) == ["dangling_reference", "unknown_tool"]


def test_code_form_findings_carry_positions(toolset: Toolset) -> None:
    code = (
        "def solve():\n"
        '    output0 = image_captioning(image="a.jpg")\n'
        "    output1 = text_summarization(txt=output0['caption'])\n"
        "    output2 = count(objects=output3['objects'])\n"
        "    return {0: output0}\n"
    )
    findings = {(f.code, f.step): f for f in verify_plan(code, toolset)}
    # image captioning -> text summarization is an edge of the graph, so the wrong key and
    # argument name are the only problems of step 1; step 2 names a step that never exists.
    assert set(findings) == {
        ("missing_arg", 1),
        ("unknown_arg", 1),
        ("dangling_reference", 1),
        ("dangling_reference", 2),
    }
    assert (findings["missing_arg", 1].line, findings["missing_arg", 1].column) == (3, 15)
    assert (findings["unknown_arg", 1].line, findings["unknown_arg", 1].column) == (3, 34)
    assert (findings["dangling_reference", 2].line, findings["dangling_reference", 2].column) == (
        4,
        21,
    )


def test_parse_errors_come_back_as_findings(toolset: Toolset) -> None:
    (finding,) = verify_plan("def solve(:\n    pass\n", toolset)
    assert (finding.code, finding.line, finding.column) == ("parse_error", 1, 11)
    parsed = parse_plan([{"id": 0, "name": "count", "args": {"objects": "x"}}, 3])
    assert codes(verify_parsed(parsed, toolset)) == ["parse_error"]


# --------------------------------------------------------------------------- files


def test_verify_text_on_rows_and_jsonl(rows: list[dict[str, Any]], toolset: Toolset) -> None:
    found = verify_text(json.dumps(rows), toolset)
    assert {f["id"] for f in found} == INVALID_ROWS
    in_code = verify_text(json.dumps(rows), toolset, plan_format="code")
    assert {f["id"] for f in in_code} == INVALID_ROWS
    assert all(f["line"] for f in in_code)
    preds = (MMS_DATA / "predictions.jsonl").read_text("utf-8")
    found = verify_text(preds + "not json\n", toolset, jsonl=True)
    assert {(f["id"], f["code"]) for f in found} == {
        (9004, "missing_arg"),
        (9004, "unknown_arg"),
        (9010, "parse_error"),
        (None, "parse_error"),
    }
    bad_line = next(f for f in found if f["id"] is None)
    assert bad_line["line"] == len(preds.splitlines()) + 1


def test_verify_text_on_single_plans(toolset: Toolset) -> None:
    code = "output0 = image_captioning(image='a.jpg')\noutput1 = count(objects=output0['text'])\n"
    found = verify_text(code, toolset)
    assert [f["code"] for f in found] == ["invalid_edge"]
    assert "id" not in found[0]
    plan = [step(0, "get date fact", date="May 7")]
    assert verify_text(json.dumps({"nodes": plan}), toolset) == []


# --------------------------------------------------------------------------- never raises


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_verify_never_raises_on_text(text: str) -> None:
    tools = load_toolset(BUNDLED / "tool_metadata.json", BUNDLED / "tool_graph.json")
    for fmt in ("auto", "json", "code"):
        for finding in verify_plan(text, tools, plan_format=fmt):
            assert finding.code in FINDING_CODES
    for finding in verify_text(text, tools):
        assert finding["code"] in FINDING_CODES


names = st.sampled_from(["image captioning", "count", "text summarization", "nope", "Image_Crop"])
refs = st.builds(
    lambda i, k: f"<node-{i}>.{k}",
    st.integers(-1, 4) | st.text(max_size=3),
    st.sampled_from(["text", "image", "objects", "x", ""]),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "id": st.integers(0, 4) | st.text(max_size=2) | st.none(),
                "name": names | st.integers(),
                "args": st.dictionaries(
                    st.text(max_size=6),
                    refs | st.text(max_size=10) | st.lists(refs, max_size=2) | st.integers(),
                    max_size=3,
                )
                | st.text(max_size=3),
            },
        ),
        max_size=5,
    )
)
def test_verify_never_raises_on_objects(plan: list[dict[str, Any]]) -> None:
    tools = load_toolset(BUNDLED / "tool_metadata.json", BUNDLED / "tool_graph.json")
    for finding in verify_plan(plan, tools):
        assert finding.code in FINDING_CODES
