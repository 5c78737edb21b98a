"""The LLM-I protocol for a model under test: the prompt (tools, input images, the
image-number constraint), the rule scores (R_rule, the tool-call check) as the existing
scorers give them, the summary and the result file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmark.evaluation.base import (
    EvalItem,
    EvalSettings,
    EvaluationError,
    Outcome,
    Status,
    ToolLayer,
    sha256,
)
from benchmark.evaluation.llmi import PROTOCOL, TOOLS, constraint_text, score_answer
from benchmark.formats import llmi as llmi_format
from benchmark.metrics.tag_scores import (
    ItemInfo,
    ResolvedAnswer,
    llmi_generated_images,
    read_answer_file,
    score_answers,
)
from benchmark.tags import rule_score
from tests.benchmark.evaluation.scripted import (
    ScriptedChat,
    failing_chat,
    image_hashes,
    text_of,
)


def imgen(source: str, params: dict[str, Any]) -> str:
    return "<imgen>" + repr({"source": source, "description": "d", "params": params}) + "</imgen>"


SEARCH = imgen("search", {"query": "Eiffel tower at night"})
DIFF = imgen("diffusion", {"prompt": "a tortoise baking bread"})
CODE = imgen("code", {"code": "import matplotlib.pyplot as plt\nplt.plot([1, 2])"})
EDIT0 = imgen("edit", {"img_index": 0, "prompt": "add a star"})
BAD_KEYS = "<imgen>{'source': 'search', 'description': 'd', 'params': {'q': 'x'}}</imgen>"
BROKEN = "<imgen>{'source': 'diffusion', 'description': 'd', 'params': {'prompt': 'p'}</imgen>"
UNKNOWN = "<imgen>{'source': 'teleport', 'description': 'd', 'params': {'to': 'x'}}</imgen>"


def train_row(question: str, image_num: Any, tools: list[str], images: int = 0) -> dict[str, Any]:
    row: dict[str, Any] = {
        "prompt": [{"role": "user", "content": "<image>" * images + question}],
        "data_source": "interleaved",
        "extra_info": {
            "image_num": image_num,
            "tools": tools,
            "split": "test",
            "question": question,
        },
    }
    if images:
        row["images"] = [f"images/in_{n}.png" for n in range(images)]
    return row


def make_item(item_id: str, record: dict[str, Any]) -> EvalItem:
    names = list(record.get("images") or [])
    return EvalItem(
        id=item_id,
        record=record,
        images={n: f"png {item_id} {n}".encode() for n in names},
    )


def answer_with(text: str) -> ScriptedChat:
    return ScriptedChat(lambda messages: text)


def run(it: EvalItem, chat: Any, **kwargs: Any) -> Outcome:
    settings = kwargs.pop("settings", EvalSettings())
    return PROTOCOL.run_item(it, settings=settings, chat=chat, tools=ToolLayer(), **kwargs)


# --------------------------------------------------------------------------- the prompt


def test_prompt_has_the_four_imgen_tools_the_input_images_and_the_constraint() -> None:
    it = make_item("train_sample#1", train_row("Mark the two birds.", 2, ["edit"], images=2))
    chat = answer_with(EDIT0)
    run(it, chat)

    (call,) = chat.calls
    system, user = call["messages"]
    assert "<imgen>{'source':" in system["content"]
    for tool, param in (("search", "query"), ("diffusion", "prompt"), ("code", "code")):
        assert f"- '{tool}':" in system["content"] and f"'{param}':" in system["content"]
    assert "'img_index': <int>" in system["content"]
    assert image_hashes(user) == [
        sha256(it.images["images/in_0.png"]),
        sha256(it.images["images/in_1.png"]),
    ]
    text = text_of(user)
    assert text.startswith("Mark the two birds.")
    assert "<image>" not in text  # the training prompt's placeholders are not sent as text
    assert text.index("[img_index 0]") < text.index("[img_index 1]")
    assert "Include exactly 2 images." in text


@pytest.mark.parametrize(
    ("image_num", "words"),
    [
        (-1, "Do not include any image"),
        (0, "as many images as the answer needs"),
        (1, "Include exactly 1 image."),
        (99, "Include at least one image."),
        ("Inf", "Include at least one image."),
    ],
)
def test_each_image_number_constraint_is_stated(image_num: Any, words: str) -> None:
    chat = answer_with("text")
    run(make_item("train_sample#2", train_row("Explain onions.", image_num, [])), chat)
    assert words in text_of(chat.calls[0]["messages"][-1])
    assert constraint_text(image_num) in text_of(chat.calls[0]["messages"][-1])


def test_the_count_can_be_left_implicit_as_in_llm_i_and_is_still_scored() -> None:
    chat = answer_with(f"{DIFF}\n{SEARCH}")
    it = make_item("train_sample#3", train_row("Two pictures please.", 1, ["diffusion"]))
    outcome = run(it, chat, settings=EvalSettings(extra={"image_count_in_prompt": False}))
    assert "exactly" not in text_of(chat.calls[0]["messages"][-1])
    assert outcome.scores["r_rule"] == pytest.approx(0.7)


def test_a_benchmark_row_has_no_constraint_and_no_r_rule() -> None:
    row = {
        "prompt": "Write a report on bakeries.",
        **{f"r{n}": f"criterion {n}" for n in range(1, 11)},
    }
    chat = answer_with(DIFF)
    outcome = run(make_item("text_only#1", row), chat)
    text = text_of(chat.calls[0]["messages"][-1])
    assert text.strip() == "Write a report on bakeries."  # nor the rubric
    assert "r_rule" not in outcome.scores and "tool_f1" not in outcome.scores


def test_bad_rows_and_missing_images_name_the_item() -> None:
    with pytest.raises(EvaluationError, match="item text_only#4: .*prompt"):
        run(make_item("text_only#4", {"r1": "x"}), answer_with(""))
    it = make_item("mm_input#1", {"prompt": "Edit it.", "images": ["images/x.png"], "r1": "c"})
    with pytest.raises(EvaluationError, match=r"item mm_input#1: .*img_index 0 \('images/x.png'"):
        run(EvalItem(id=it.id, record=it.record, images={}), answer_with(""))
    with pytest.raises(EvaluationError, match="503"):
        run(it, failing_chat)


# --------------------------------------------------------------------------- scores

CASES = {
    "exact": (f"One.\n{DIFF}\nTwo.\n{SEARCH}", 2, ["diffusion", "search"]),
    "too_many": (f"{DIFF}\n{SEARCH}\n{CODE}\n{DIFF}", 2, ["diffusion"]),
    "bad_keys": (f"{SEARCH}\n{BAD_KEYS}", 2, ["search"]),
    "broken": (f"{BROKEN}\n{CODE}", 99, ["code"]),
    "unknown": (f"{UNKNOWN}", 99, ["diffusion"]),
    "none_allowed": ("Only words.", -1, []),
    "none_but_images": (f"Words.\n{DIFF}", -1, []),
    "edit_input": (f"{EDIT0}\n{imgen('edit', {'img_index': 1, 'prompt': 'p'})}", 2, ["edit"]),
    "edit_out_of_range": (imgen("edit", {"img_index": 5, "prompt": "p"}), 1, ["edit"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_item_scores_are_the_existing_scorers(name: str) -> None:
    text, image_num, tools = CASES[name]
    inputs = 1 if name.startswith("edit") else 0
    it = make_item("train_sample#9", train_row("Q?", image_num, tools, images=inputs))
    outcome = run(it, answer_with(text))
    s = outcome.scores

    n_gen = llmi_generated_images(text, inputs)
    assert s["n_gen"] == n_gen
    assert s["r_rule"] == rule_score(n_gen, image_num)
    model = score_answers(
        [ResolvedAnswer("m", it.id, text)],
        {it.id: ItemInfo(image_num=image_num, input_images=inputs)},
        syntax="llmi",
        tools=TOOLS,
    )["models"]["m"]
    assert s["r_rule"] == pytest.approx(model["r_rule"]["mean"])
    assert s["image_num"] == (100.0 if model["r_rule"]["n_full"] else 0.0)
    assert s["n_tags"] == model["n_calls"]
    for tool in TOOLS:
        assert s[f"adoption_{tool}"] == pytest.approx(model["adoption"][tool])


def test_tool_call_check_passes_only_tags_llm_i_would_turn_into_images() -> None:
    checked = {
        name: (
            score_answer(text, input_images=1)["n_tags"],
            score_answer(text, input_images=1)["n_tags_passed"],
        )
        for name, (text, _, _) in CASES.items()
    }
    assert checked == {
        "exact": (2, 2),
        "too_many": (4, 4),
        "bad_keys": (2, 1),
        "broken": (2, 1),
        "unknown": (1, 0),
        "none_allowed": (0, 0),
        "none_but_images": (1, 1),
        "edit_input": (2, 2),  # edit of input 0, then of the first edit's image (index 1)
        "edit_out_of_range": (1, 0),
    }
    assert score_answer(CASES["broken"][0])["tool_check"] == 0.0
    assert score_answer(CASES["exact"][0])["tool_check"] == 100.0
    assert score_answer("no tags")["tool_acc"] is None


def test_tool_f1_against_the_rows_target_tools() -> None:
    s = score_answer(f"{DIFF}\n{SEARCH}", required_tools=["diffusion"])
    assert (s["tool_precision"], s["tool_recall"], s["tool_f1"]) == pytest.approx(
        (50.0, 100.0, 100 * 2 / 3)
    )


def outcomes_for(cases: dict[str, tuple[str, Any, list[str]]]) -> list[Outcome]:
    out = []
    for n, (text, image_num, tools) in enumerate(cases.values(), start=1):
        it = make_item(f"train_sample#{n}", train_row(f"Question {n}?", image_num, tools))
        out.append(run(it, answer_with(text)))
    return out


def test_summary_pools_tool_acc_over_tags_and_averages_the_rule_over_items() -> None:
    cases = {k: v for k, v in CASES.items() if not k.startswith("edit")}
    outcomes = outcomes_for(cases)
    outcomes.append(Outcome(item="text_only#1", status=Status.ERROR, error="replay miss"))

    summary = PROTOCOL.summarize(outcomes)

    expected = score_answers(
        [ResolvedAnswer("m", f"train_sample#{n}", v[0]) for n, v in enumerate(cases.values(), 1)],
        {f"train_sample#{n}": ItemInfo(image_num=v[1]) for n, v in enumerate(cases.values(), 1)},
        syntax="llmi",
        tools=TOOLS,
    )["models"]["m"]
    assert (summary["n_items"], summary["n_answered"], summary["n_errors"]) == (8, 7, 1)
    assert summary["r_rule"] == pytest.approx(expected["r_rule"]["mean"])
    assert summary["image_num"] == pytest.approx(100 * expected["r_rule"]["n_full"] / 7)
    assert summary["n_constrained"] == expected["r_rule"]["n_answers"] == 7
    passed = sum(o.scores["n_tags_passed"] for o in outcomes[:-1])
    tags = sum(o.scores["n_tags"] for o in outcomes[:-1])
    assert (summary["n_tags_passed"], summary["n_tags"]) == (passed, tags) == (9, 12)
    assert summary["tool_acc"] == pytest.approx(100 * 9 / 12)
    assert summary["tool_check"] == pytest.approx(100 * 4 / 7)
    for tool in TOOLS:
        assert summary[f"adoption_{tool}"] == pytest.approx(expected["adoption"][tool])
    assert {c.key for c in PROTOCOL.columns} <= set(summary)


# --------------------------------------------------------------------------- outputs


def test_result_file_is_llm_i_layout_and_read_back_by_both_readers(tmp_path: Path) -> None:
    outcomes = outcomes_for(CASES)
    outcomes.append(Outcome(item="train_sample#99", status=Status.ERROR))

    (path,) = PROTOCOL.write_outputs(outcomes, str(tmp_path), model="Qwen3-4B")

    assert Path(path) == tmp_path / "Qwen3-4B" / "json_results" / "evaluation_results.json"
    rows = json.loads(Path(path).read_text())
    assert rows[0]["sample_index"] == 1 and rows[0]["input_file"] == "train_sample.json"
    name = "Qwen3-4B/json_results/evaluation_results.json"
    records = read_answer_file(name, Path(path).read_bytes())
    assert [(r.item_id, r.row_number, r.model) for r in records] == [
        (f"train_sample#{n}", n, "Qwen3-4B") for n in range(1, len(CASES) + 1)
    ]
    assert [r.text for r in records] == [v[0] for v in CASES.values()]

    # the LLM-I importer places each answer on its row by input_file and sample_index
    placed = [(r.item_id, r.model_name, r.text) for r in llmi_format.read(Path(path))]
    assert placed == [
        (f"train_sample#{n}", "Qwen3-4B", v[0]) for n, v in enumerate(CASES.values(), 1)
    ]


_PIECES = st.sampled_from(
    ["<imgen>", "</imgen>", "{", "}", "'source'", ": ", "'edit'", "'code'", ", ", "'params'"]
    + ["{'img_index': 0, 'prompt': 'p'}", "'description'", "'x'", "<image>", "<think>", "\n"]
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(_PIECES, st.text(max_size=5)), max_size=30), st.sampled_from([-1, 0, 2, 99])
)
def test_any_answer_text_is_scored_never_raised_on(pieces: list[str], image_num: int) -> None:
    scores = score_answer("".join(pieces), input_images=1, image_num=image_num)
    assert 0 <= scores["n_tags_passed"] <= scores["n_tags"]
    assert 0.0 <= scores["r_rule"] <= 1.0
    assert scores["tool_check"] in (0.0, 100.0)
