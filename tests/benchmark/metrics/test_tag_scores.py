"""benchmark.metrics.tag_scores on hand-worked examples: format correctness, adoption, calls
per answer, tool-set P/R/F1 (ATP-Bench Table 6), LLM-I's N_gen and R_rule, answer files."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmark.formats.base import FormatError
from benchmark.metrics.tag_scores import (
    AnswerRecord,
    ItemIndex,
    ItemInfo,
    ResolvedAnswer,
    answer_facts,
    llmi_generated_images,
    read_answer_file,
    score_answers,
    tool_set_scores,
)


def tag(name: str, params: dict[str, Any], description: str = "d") -> str:
    payload = json.dumps({"tool_name": name, "description": description, "params": params})
    return f"<tool>{payload}</tool>"


REF0 = tag("Reference", {"img_index": 0})
REF1 = tag("reference", {"img_index": 1})
SEARCH = tag("Search", {"query": "q"})

# Answer A: three well-formed calls; Reference twice (once capitalised) and Search.
ANSWER_A = f"Intro.\n\n{REF0}\n\nMore.\n\n{REF1}\n\nEnd.\n\n{SEARCH}"
# Answer B: a Diffusion call with a trailing comma (unreadable), a Code call with an unknown
# parameter (readable, not well-formed) and an Edit call that is never closed (unreadable).
ANSWER_B = (
    'A.\n\n<tool>{"tool_name": "Diffusion", "description": "x", "params": {"prompt": "p"},}</tool>'
    '\n\nB.\n\n<tool>{"tool_name": "Code", "description": "c", "params": {"code": "x = 1", '
    '"dpi": 3}}</tool>\n\nC.\n\n<tool>{"tool_name": "Edit", "description": "e", "params": '
    '{"img_index": 0, "prompt": "p"}}'
)
ANSWER_C = "Only text, no tools at all."

GT_A = f"{REF0}\n\n{tag('Diffusion', {'prompt': 'p'})}"
GT_B = f"{tag('Code', {'code': 'x = 1'})}\n\n{tag('Edit', {'img_index': 0, 'prompt': 'p'})}"
GT_C = REF0


def approx(value: float) -> Any:
    return pytest.approx(value, abs=1e-9)


# --------------------------------------------------------------------------- one answer


def test_calls_readability_and_well_formedness() -> None:
    a = answer_facts(ANSWER_A, "atp")
    assert (a.n_calls, a.n_well_formed) == (3, 3)
    assert a.tools == {"reference", "search"}  # Reference and reference are one tool

    b = answer_facts(ANSWER_B, "atp")
    assert b.n_calls == 3
    assert [c.tool for c in b.calls] == [None, "code", None]
    assert [c.well_formed for c in b.calls] == [False, False, False]
    assert b.tools == {"code"}

    c = answer_facts(ANSWER_C, "atp")
    assert (c.n_calls, c.n_well_formed, c.tools) == (0, 0, frozenset())


def test_index_range_and_placement_are_not_format_errors() -> None:
    text = f"It sits mid {tag('Reference', {'img_index': 99})} sentence, as shown below."
    facts = answer_facts(text, "atp")
    assert facts.n_well_formed == 1


def test_unknown_tool_is_readable_but_not_well_formed() -> None:
    facts = answer_facts(tag("ImageSearch", {"query": "q"}), "atp")
    assert facts.tools == {"imagesearch"}
    assert facts.n_well_formed == 0


def test_project_toolset_decides_what_is_well_formed() -> None:
    toolset = {"code": {"params": [{"name": "chart_type", "type": "str", "required": True}]}}
    text = tag("Code", {"chart_type": "bar"})
    assert answer_facts(text, "atp").n_well_formed == 0  # built-in Code wants "code"
    assert answer_facts(text, "atp", toolset).n_well_formed == 1


def test_missing_description_is_a_format_error() -> None:
    text = '<tool>{"tool_name": "Search", "params": {"query": "q"}}</tool>'
    facts = answer_facts(text, "atp")
    assert facts.tools == {"search"}
    assert facts.n_well_formed == 0


# --------------------------------------------------------------------------- tool sets


@pytest.mark.parametrize(
    ("pred", "gold", "expected"),
    [
        ({"reference", "search"}, {"reference", "diffusion"}, (0.5, 0.5, 0.5)),
        ({"code"}, {"code", "edit"}, (1.0, 0.5, 2 / 3)),
        (set(), {"reference"}, (0.0, 0.0, 0.0)),
        ({"reference"}, set(), (0.0, 0.0, 0.0)),
        (set(), set(), (1.0, 1.0, 1.0)),
        ({"search"}, {"reference"}, (0.0, 0.0, 0.0)),
        ({"imagesearch", "reference"}, {"reference"}, (0.5, 1.0, 2 / 3)),
    ],
)
def test_tool_set_scores(pred: set[str], gold: set[str], expected: tuple[float, ...]) -> None:
    got = tool_set_scores(frozenset(pred), frozenset(gold))
    assert got == pytest.approx(expected)


ITEMS = {
    "a": ItemInfo(gold=GT_A),
    "b": ItemInfo(gold=GT_B),
    "c": ItemInfo(gold=GT_C),
    "d": ItemInfo(gold=None),  # not verified: no ground truth
}
TOOLS = ["reference", "diffusion", "search", "code", "edit"]


def test_score_answers_on_the_hand_worked_run() -> None:
    answers = [
        ResolvedAnswer("m1", "a", ANSWER_A),
        ResolvedAnswer("m1", "b", ANSWER_B),
        ResolvedAnswer("m1", "c", ANSWER_C),
    ]
    result = score_answers(answers, ITEMS, syntax="atp", tools=TOOLS)
    m = result["models"]["m1"]
    assert (m["n_answers"], m["n_calls"], m["n_well_formed"]) == (3, 6, 3)
    assert m["format_correctness"] == approx(50.0)
    assert m["calls_per_answer"] == {"mean": 2.0, "histogram": {"0": 1, "1": 0, "2": 0, "3": 2}}
    assert m["adoption"] == {
        "reference": approx(100 / 3),
        "diffusion": 0.0,
        "search": approx(100 / 3),
        "code": approx(100 / 3),
        "edit": 0.0,
    }
    # per query P/R/F1: a (.5, .5, .5), b (1, .5, 2/3), c (0, 0, 0); then means
    assert m["tool_set"]["n_queries"] == 3
    assert m["tool_set"]["n_missing"] == 0
    assert m["tool_set"]["precision"] == approx(50.0)
    assert m["tool_set"]["recall"] == approx(100 / 3)
    assert m["tool_set"]["f1"] == approx(100 * (0.5 + 2 / 3) / 3)
    per = m["per_tool"]
    assert per["reference"]["precision"] == 100.0
    assert per["reference"]["recall"] == 50.0
    assert per["reference"]["f1"] == approx(200 / 3)
    assert per["search"]["precision"] == 0.0
    assert per["search"]["recall"] is None and per["search"]["f1"] is None
    assert (per["code"]["precision"], per["code"]["recall"], per["code"]["f1"]) == (100, 100, 100)
    assert per["diffusion"]["precision"] is None and per["diffusion"]["recall"] == 0.0
    assert per["code"]["n_calls"] == 1 and per["code"]["format_correctness"] == 0.0
    assert per["reference"]["format_correctness"] == 100.0
    # R_rule belongs to LLM-I only
    assert m["r_rule"]["n_answers"] == 0 and m["r_rule"]["mean"] is None
    gt = result["ground_truth"]
    assert gt["n_items"] == 3 and gt["n_calls"] == 5 and gt["format_correctness"] == 100.0


def test_queries_without_ground_truth_or_answer() -> None:
    answers = [ResolvedAnswer("m1", "a", ANSWER_A), ResolvedAnswer("m1", "d", SEARCH)]
    m = score_answers(answers, ITEMS, syntax="atp", tools=TOOLS)["models"]["m1"]
    assert m["n_answers"] == 2  # "d" counts for adoption and format
    assert m["adoption"]["search"] == 100.0
    assert m["tool_set"]["n_queries"] == 1  # only "a" has a verified ground truth
    assert m["tool_set"]["n_missing"] == 2  # "b" and "c" were not answered
    assert m["tool_set"]["precision"] == 50.0


def test_models_are_separate_and_overall_pools_them() -> None:
    answers = [
        ResolvedAnswer("m1", "a", ANSWER_A),
        ResolvedAnswer("m2", "a", GT_A),
        ResolvedAnswer("m2", "c", ANSWER_C),
    ]
    result = score_answers(answers, ITEMS, syntax="atp", tools=TOOLS)
    assert sorted(result["models"]) == ["m1", "m2"]
    m2 = result["models"]["m2"]
    assert m2["tool_set"]["f1"] == 50.0  # a: 1, c: 0
    overall = result["overall"]
    assert overall["n_models"] == 2 and overall["n_answers"] == 3
    assert overall["tool_set"]["f1"] == approx((0.5 + 1 + 0) / 3 * 100)


def test_no_calls_means_no_format_figure() -> None:
    result = score_answers([ResolvedAnswer("m", "c", ANSWER_C)], ITEMS, syntax="atp", tools=TOOLS)
    assert result["models"]["m"]["format_correctness"] is None


def test_a_model_answering_an_item_twice_is_refused() -> None:
    answers = [ResolvedAnswer("m", "a", ANSWER_A), ResolvedAnswer("m", "a", ANSWER_C)]
    with pytest.raises(ValueError, match="more than once"):
        score_answers(answers, ITEMS, syntax="atp")


# --------------------------------------------------------------------------- LLM-I


def imgen(source: str, params: dict[str, Any], description: str = "d") -> str:
    return (
        "<imgen>"
        + repr({"source": source, "description": description, "params": params})
        + "</imgen>"
    )


def test_n_gen_counts_the_images_llmi_would_make() -> None:
    diffusion = imgen("diffusion", {"prompt": "a cat"})
    assert llmi_generated_images(f"a {diffusion} b {diffusion}") == 2
    # LLM-I's validator is case-sensitive and wants exact keys
    assert llmi_generated_images(imgen("Diffusion", {"prompt": "x"})) == 0
    assert llmi_generated_images(imgen("search", {"query": "x", "top_k": 3})) == 0
    no_description = "<imgen>{'source': 'search', 'params': {'query': 'x'}}</imgen>"
    assert llmi_generated_images(no_description) == 0
    # its regex wants the braces right inside the tag, and the tag closed
    assert llmi_generated_images("<imgen> {'source': 'x'} </imgen>") == 0
    assert llmi_generated_images("<imgen>" + repr({"source": "diffusion"})) == 0
    # thinking is dropped before the tags are read; literal placeholders count
    assert llmi_generated_images(f"<think>{diffusion}</think> plan") == 0
    assert llmi_generated_images("see <image> here") == 1


def test_n_gen_edit_chain() -> None:
    diffusion = imgen("diffusion", {"prompt": "a cat"})
    broken = imgen("diffusion", {"text": "a cat"})
    edit = imgen("edit", {"img_index": 0, "prompt": "hat"})
    edit1 = imgen("edit", {"img_index": 1, "prompt": "hat"})
    # no input: edit 0 is the first generated image
    assert llmi_generated_images(diffusion + edit) == 2
    assert llmi_generated_images(broken + edit) == 0  # the image it edits was never made
    assert llmi_generated_images(edit + diffusion) == 1  # an edit of a later image fails
    # one input image: index 0 is the input, index 1 the first generated image
    assert llmi_generated_images(edit + diffusion + edit1, 1) == 3
    assert llmi_generated_images(imgen("edit", {"img_index": 3, "prompt": "x"}), 1) == 0


def test_n_gen_code_with_quotes_reads_like_llmi() -> None:
    code = "<imgen>{'source': 'code', 'description': 'pie', 'params': {'code': 'plt.title('x')'}}</imgen>"
    assert llmi_generated_images(code) == 1
    facts = answer_facts(code, "llmi")
    assert facts.tools == {"code"} and facts.n_well_formed == 1


def test_r_rule_per_answer_then_mean() -> None:
    three = imgen("diffusion", {"prompt": "p"}) * 3
    items = {
        "exact2": ItemInfo(image_num=2),
        "none": ItemInfo(image_num=-1),
        "atleast": ItemInfo(image_num=99),
        "any": ItemInfo(image_num=0),
        "free": ItemInfo(),
    }
    answers = [
        ResolvedAnswer("m", "exact2", three),  # 1 - 0.3 * (3 - 2) = 0.7
        ResolvedAnswer("m", "none", "text"),  # 1
        ResolvedAnswer("m", "atleast", "text"),  # 0
        ResolvedAnswer("m", "any", three),  # 1
        ResolvedAnswer("m", "free", three),  # no constraint: not scored
    ]
    r = score_answers(answers, items, syntax="llmi")["models"]["m"]["r_rule"]
    assert r["n_answers"] == 4
    assert r["mean"] == approx((0.7 + 1 + 0 + 1) / 4)
    assert r["n_full"] == 2
    assert r["mean_n_gen"] == approx(6 / 4)
    one = score_answers(
        [ResolvedAnswer("m", "exact2", three[: len(three) // 3])], items, syntax="llmi"
    )
    assert one["models"]["m"]["r_rule"]["mean"] == 0.5  # 1 of 2 images


# --------------------------------------------------------------------------- answer files


def test_reads_jsonl_with_model_from_the_file_name() -> None:
    data = b'{"trace_id": "a", "answer": "x"}\n\n{"trace_id": "b", "response": null}\n'
    records = read_answer_file("runs/gpt-4o.jsonl", data)
    assert [(r.model, r.item_id, r.text, r.where) for r in records] == [
        ("gpt-4o", "a", "x", "line 1"),
        ("gpt-4o", "b", "", "line 3"),
    ]


def test_reads_json_array_with_model_field_and_llmi_rows() -> None:
    data = json.dumps(
        [
            {"model": "qwen", "input_file": "text_only.json", "sample_index": 0, "answer": "x"},
            {"model": "qwen", "input_file": "text_only.json", "sample_index": 1, "answer": "y"},
        ]
    ).encode()
    records = read_answer_file("answers.json", data)
    assert [r.model for r in records] == ["qwen", "qwen"]
    assert [r.row_number for r in records] == [1, 2]  # counted from 0 in this file
    assert records[0].label == "text_only#1"


def test_reads_an_object_with_a_model_and_answers() -> None:
    data = json.dumps({"model": "m", "answers": [{"id": 7, "output": "t"}]}).encode()
    (record,) = read_answer_file("x.json", data)
    assert (record.model, record.item_id, record.text) == ("m", "7", "t")


def test_llmi_evaluation_results_take_the_model_folder_name() -> None:
    data = b'[{"sample_index": 1, "prompt": "p", "answer": "a"}]'
    (record,) = read_answer_file("Qwen3-4B/json_results/evaluation_results.json", data)
    assert record.model == "Qwen3-4B"


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        (
            "a.jsonl",
            b'{"trace_id": "a", "answer": "x"}\n{"trace_id": \n',
            "a.jsonl: line 2: not valid JSON",
        ),
        (
            "a.json",
            b'[\n{"trace_id": "a", "answer": "x"},\n{"trace_id": "b"}\n]',
            "a.json, field 'answer': record 2 (line 3): no answer text",
        ),
        (
            "a.json",
            b'[{"trace_id": "a", "answer": 5}]',
            "field 'answer': record 1 (line 1): must be a string, not int",
        ),
        ("a.json", b'[\n  "just text"\n]', "record 1 (line 2): must be an answer object, not str"),
        (
            "a.json",
            b'[{"answer": "x"}]',
            "field 'trace_id': record 1 (line 1): says nothing about which item",
        ),
        ("a.json", b'[{"id": "a", "answer": "x", "model": ""}]', "field 'model'"),
        ("a.json", b'[{"id": "a", "answer": "x", "sample_index": -2}]', "field 'sample_index'"),
        ("a.json", b"[1, 2", "a.json: line 1: not valid JSON"),
        ("a.json", b"   ", "a.json: the file is empty"),
        ("a.json", b"[]", "a.json: the file holds no answers"),
        ("a.json", b"\xff\xfe[", "not UTF-8"),
        ("a.json", b'"text"', "a.json: line 1: must be an answer object, not str"),
        ("a.json", b'[\n{"id": "a", "answer": "x"},\n{"id": "b",, }\n]', "line 3: not valid JSON"),
    ],
)
def test_bad_files_name_file_line_and_field(name: str, data: bytes, message: str) -> None:
    with pytest.raises(FormatError) as info:
        read_answer_file(name, data)
    assert message in str(info.value)


# --------------------------------------------------------------------------- matching items


def record(**kwargs: Any) -> AnswerRecord:
    return AnswerRecord(file="f", where="line 1", model="m", text="", **kwargs)


def test_item_index_resolves_ids_rows_and_prompts() -> None:
    index = ItemIndex(
        [
            ("text_only#1", "text_only.json", "first prompt"),
            ("text_only#2", "text_only.json", "second prompt"),
            ("mm_input#1", "mm_input.json", "image prompt"),
        ]
    )
    assert index.resolve(record(item_id="text_only#2")) == "text_only#2"
    assert index.resolve(record(item_id="nope")) is None
    assert index.resolve(record(input_file="text_only.json", row_number=1)) == "text_only#1"
    # the prompt wins over a row number that does not fit it
    assert (
        index.resolve(record(input_file="text_only.json", row_number=1, prompt="second prompt"))
        == "text_only#2"
    )
    assert index.resolve(record(input_file="text_only.json", row_number=9)) is None
    assert index.resolve(record(prompt="image prompt")) == "mm_input#1"
    assert index.resolve(record(prompt="unknown")) is None
    assert index.resolve(record(row_number=1)) is None  # two files: which one?
    single = ItemIndex([("text_only#1", "text_only.json", "p")])
    assert single.resolve(record(row_number=1)) == "text_only#1"


# --------------------------------------------------------------------------- robustness

SNIPPETS = st.sampled_from(
    [
        "<tool>", "</tool>", "<imgen>", "</imgen>", "<think>", "</think>", "<image>", "{", "}",
        '"tool_name": ', "'source': ", "'edit'", "'code'", "'params': {", "'img_index': ", "1",
        "-1", ",", "'", '"', "\n\n", "Reference", "text ", "'description': 'd', ",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(SNIPPETS, st.text(max_size=8)), max_size=30), st.integers(0, 3))
def test_any_answer_text_gives_facts(parts: list[str], inputs: int) -> None:
    text = "".join(parts)
    for syntax in ("atp", "llmi"):
        facts = answer_facts(text, syntax, input_images=inputs)  # type: ignore[arg-type]
        assert 0 <= facts.n_well_formed <= facts.n_calls
    assert llmi_generated_images(text, inputs) >= 0


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_file_reads_or_raises_format_error(data: bytes) -> None:
    try:
        read_answer_file("f.json", data)
    except FormatError:
        pass
