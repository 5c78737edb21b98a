"""The ATP-Bench protocol for a model under test: the prompt it sends, the scores it gives
(those of benchmark.metrics.tag_scores), its summary and the answer file it writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmark.evaluation.atp import PROTOCOL, TOOLS, score_answer
from benchmark.evaluation.base import (
    EvalItem,
    EvalSettings,
    EvaluationError,
    Outcome,
    Status,
    ToolLayer,
    sha256,
)
from benchmark.metrics.tag_scores import (
    ItemInfo,
    ResolvedAnswer,
    read_answer_file,
    score_answers,
)
from tests.benchmark.evaluation.scripted import (
    ScriptedChat,
    failing_chat,
    image_hashes,
    parts,
    text_of,
)


def tag(name: str, params: dict[str, Any]) -> str:
    payload = {"tool_name": name, "description": "d", "params": params}
    return "<tool>" + json.dumps(payload) + "</tool>"


REF0 = tag("Reference", {"img_index": 0})
REF1 = tag("Reference", {"img_index": 1})
SEARCH = tag("Search", {"query": "espresso machine front panel"})
DIFF = tag("Diffusion", {"prompt": "a cosy kitchen"})
EDIT = tag("Edit", {"img_index": 0, "prompt": "circle the button"})
BROKEN = '<tool>{"tool_name": "Diffusion", "description": "x", "params": {"prompt": "p"},}</tool>'
UNKNOWN = tag("Teleport", {"where": "Paris"})


def png(n: int) -> bytes:
    return b"\x89PNG fake image " + bytes([n]) * 8


def record(trace_id: str, *, gt: str = "", query_image: bool = False) -> dict[str, Any]:
    """Two documents: the first with images 0 and 1, the second with image 2."""
    images = [f"images/{trace_id}_{i}.png" for i in range(3)]
    rec: dict[str, Any] = {
        "trace_id": trace_id,
        "query": f"How do I descale the machine? ({trace_id})",
        "image_query": f"images/{trace_id}_q.png" if query_image else None,
        "doc": [
            {"text": f"Manual of {trace_id}, part one.", "images": images[:2]},
            {"text": f"Manual of {trace_id}, part two.", "images": images[2:]},
        ],
        "images": images,
        "category": "Manual",
        "intent": "Operation Guide",
    }
    if gt:
        rec["gt"] = gt
    return rec


def item(trace_id: str, **kwargs: Any) -> EvalItem:
    rec = record(trace_id, **kwargs)
    names = list(rec["images"]) + ([rec["image_query"]] if rec["image_query"] else [])
    seed = sum(trace_id.encode())
    return EvalItem(
        id=trace_id, record=rec, images={n: png((seed + i) % 256) for i, n in enumerate(names)}
    )


def answer_with(text: str) -> ScriptedChat:
    return ScriptedChat(lambda messages: text)


def run(it: EvalItem, chat: Any, **kwargs: Any) -> Outcome:
    settings = kwargs.pop("settings", EvalSettings())
    return PROTOCOL.run_item(it, settings=settings, chat=chat, tools=ToolLayer(), **kwargs)


# --------------------------------------------------------------------------- the prompt


def test_prompt_has_documents_images_by_img_index_query_image_last_and_the_tools() -> None:
    it = item("atp_1", query_image=True)
    chat = answer_with(REF0)
    run(it, chat)

    (call,) = chat.calls
    system, user = call["messages"]
    for name in ("Reference", "Diffusion", "Search", "Code", "Edit"):
        assert f"- {name}:" in system["content"]
    assert '<tool>{"tool_name":' in system["content"]
    assert '"img_index": <int>' in system["content"]

    # the images in img_index order, each announced by its index, the query image last
    paths = it.record["images"] + [it.record["image_query"]]
    assert image_hashes(user) == [sha256(it.images[p]) for p in paths]
    assert call["images"] == {sha256(it.images[p]): it.images[p] for p in paths}
    seq = parts(user)
    for index in range(3):
        at = next(
            i
            for i, p in enumerate(seq)
            if p["type"] == "image_url"
            and p["image_url"]["url"].endswith(sha256(it.images[it.record["images"][index]]))
        )
        assert seq[at - 1]["text"].rstrip().endswith(f"[img_index {index}]")
    text = text_of(user)
    assert text.index("part one") < text.index("[img_index 1]") < text.index("part two")
    assert text.index("part two") < text.index("[img_index 2]") < text.index("Query:")
    assert it.record["query"] in text
    assert "no img_index" in seq[-2]["text"]  # the query image is not indexable


def test_img_index_follows_the_records_images_list_not_the_document_order() -> None:
    it = item("atp_2")
    rec = dict(it.record)
    rec["images"] = [rec["images"][2], rec["images"][0], rec["images"][1]]
    it = EvalItem(id=it.id, record=rec, images=it.images)
    chat = answer_with(REF0)
    run(it, chat)
    user = chat.calls[0]["messages"][-1]
    seq = parts(user)
    labelled = {
        p["image_url"]["url"].removeprefix("sha256:"): seq[i - 1]["text"].rstrip()[-13:]
        for i, p in enumerate(seq)
        if p["type"] == "image_url"
    }
    for index, path in enumerate(rec["images"]):
        assert labelled[sha256(it.images[path])] == f"[img_index {index}]"


def test_the_ground_truth_answer_of_the_item_is_never_in_the_prompt() -> None:
    it = item("atp_3", gt=f"SECRET ANSWER {REF1}")
    chat = answer_with(REF0)
    run(it, chat, truth=it.record)
    assert "SECRET ANSWER" not in json.dumps(chat.calls[0]["messages"])


def test_n_shot_shows_examples_with_their_ground_truth_before_the_item() -> None:
    examples = tuple(item(f"ex_{n}", gt=f"Example answer {n}.\n\n{REF0}") for n in range(3))
    it = item("atp_4")
    chat = answer_with(REF0)
    run(it, chat, settings=EvalSettings(shots=2, examples=examples))

    messages = chat.calls[0]["messages"]
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert "ex_0" in text_of(messages[1]) and "ex_1" in text_of(messages[3])
    assert messages[2]["content"] == examples[0].record["gt"]
    assert messages[4]["content"] == examples[1].record["gt"]
    assert "ex_2" not in json.dumps(messages)  # only the first N
    assert "atp_4" in text_of(messages[5])
    # the examples' images travel with the call too
    assert sha256(examples[1].images[examples[1].record["images"][2]]) in chat.calls[0]["images"]


def test_zero_shot_by_default_even_with_examples_given() -> None:
    examples = (item("ex_0", gt=REF0),)
    chat = answer_with(REF0)
    run(item("atp_5"), chat, settings=EvalSettings(examples=examples))
    assert [m["role"] for m in chat.calls[0]["messages"]] == ["system", "user"]


@pytest.mark.parametrize(
    ("eval_settings", "message"),
    [
        (EvalSettings(shots=3, examples=(item("ex_0", gt=REF0),)), "3-shot needs 3 example"),
        (EvalSettings(shots=1, examples=(item("ex_0"),)), "example item ex_0 has no ground"),
        (EvalSettings(shots=1, examples=(item("atp_6", gt=REF0),)), "its own few-shot"),
    ],
)
def test_bad_few_shot_settings_say_what_is_wrong(eval_settings: EvalSettings, message: str) -> None:
    chat = answer_with(REF0)
    with pytest.raises(EvaluationError, match=message):
        run(item("atp_6"), chat, settings=eval_settings)
    assert chat.calls == []


def test_a_missing_image_or_a_bad_record_names_the_item_and_what() -> None:
    it = item("atp_7")
    missing = EvalItem(id=it.id, record=it.record, images={})
    with pytest.raises(EvaluationError, match=r"item atp_7: .*img_index 0 \('images/atp_7_0"):
        run(missing, answer_with(REF0))
    bad = EvalItem(id="atp_8", record={"trace_id": "atp_8", "query": ""})
    with pytest.raises(EvaluationError, match="item atp_8: .*query"):
        run(bad, answer_with(REF0))


def test_an_error_of_the_chat_callable_reaches_the_caller() -> None:
    with pytest.raises(EvaluationError, match="503"):
        run(item("atp_9"), failing_chat)


# --------------------------------------------------------------------------- scores

GOLD = f"Intro.\n\n{REF0}\n\nMore.\n\n{SEARCH}"  # {reference, search}

ANSWERS = {
    "good": f"Step one.\n\n{REF0}\n\nStep two.\n\n{SEARCH}",  # P 1, R 1
    "extra": f"{REF0}\n\n{DIFF}\n\n{EDIT}",  # {reference, diffusion, edit}: P 1/3, R 1/2
    "broken": f"Text.\n\n{REF1}\n\n{BROKEN}",  # the Diffusion call is unreadable
    "unknown": f"{REF0}\n\n{UNKNOWN}",  # a tool outside the toolset
    "none": "Just text, no images at all.",
    "unclosed": '<tool>{"tool_name": "Search", "description": "x", "params": {"query": "q"}}',
}


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_item_scores_are_the_existing_scorers(name: str) -> None:
    text = ANSWERS[name]
    it = item(f"atp_{name}")
    outcome = run(it, answer_with(text), truth={**it.record, "gt": GOLD})

    assert outcome.status == Status.OK
    assert outcome.output == text
    assert (outcome.model_calls, outcome.prompt_tokens, outcome.completion_tokens) == (1, 10, 5)
    assert outcome.trace[-1] == {"role": "assistant", "content": text}

    model = score_answers(
        [ResolvedAnswer("m", it.id, text)], {it.id: ItemInfo(gold=GOLD)}, syntax="atp"
    )["models"]["m"]
    s = outcome.scores
    assert (s["n_calls"], s["n_well_formed"]) == (model["n_calls"], model["n_well_formed"])
    for tool in TOOLS:
        assert s[f"adoption_{tool}"] == pytest.approx(model["adoption"].get(tool) or 0.0)
    for key in ("precision", "recall", "f1"):
        assert s[key] == pytest.approx(model["tool_set"][key])
    assert s["calls_per_answer"] == model["calls_per_answer"]["mean"]


def test_format_validity_is_zero_for_no_tags_broken_json_unknown_tool_or_unclosed_tag() -> None:
    valid = {name: score_answer(text, GOLD)["format_valid"] for name, text in ANSWERS.items()}
    assert valid == {
        "good": 100.0,
        "extra": 100.0,
        "broken": 0.0,
        "unknown": 0.0,
        "none": 0.0,
        "unclosed": 0.0,
    }
    assert score_answer(ANSWERS["extra"], GOLD)["precision"] == pytest.approx(100 / 3)
    assert score_answer(ANSWERS["none"], GOLD)["f1"] == 0.0
    assert "f1" not in score_answer(ANSWERS["good"], None)  # no ground truth: unscored


def outcomes_for(answers: dict[str, str], gold: dict[str, str | None]) -> list[Outcome]:
    out = []
    for trace_id, text in answers.items():
        it = item(trace_id)
        g = gold.get(trace_id)
        truth = {**it.record, "gt": g} if g is not None else None
        out.append(run(it, answer_with(text), truth=truth))
    return out


def test_summary_is_the_score_command_figures_over_items() -> None:
    answers = {f"atp_s{n}": text for n, text in enumerate(ANSWERS.values())}
    gold: dict[str, str | None] = {trace_id: GOLD for trace_id in answers}
    gold["atp_s5"] = None  # an item without a verified ground truth
    outcomes = outcomes_for(answers, gold)
    outcomes.append(Outcome(item="atp_err", status=Status.ERROR, error="timeout"))

    summary = PROTOCOL.summarize(outcomes)

    expected = score_answers(
        [ResolvedAnswer("m", t, a) for t, a in answers.items()],
        {t: ItemInfo(gold=g) for t, g in gold.items()},
        syntax="atp",
        tools=TOOLS,
    )["models"]["m"]
    assert (summary["n_items"], summary["n_answered"], summary["n_errors"]) == (7, 6, 1)
    assert summary["n_scored"] == expected["tool_set"]["n_queries"] == 5
    for key in ("precision", "recall", "f1"):
        assert summary[key] == pytest.approx(expected["tool_set"][key])
    for tool in TOOLS:
        assert summary[f"adoption_{tool}"] == pytest.approx(expected["adoption"][tool])
    assert summary["format_correctness"] == pytest.approx(expected["format_correctness"])
    assert summary["calls_per_answer"] == pytest.approx(expected["calls_per_answer"]["mean"])
    assert (summary["n_calls"], summary["n_well_formed"]) == (
        expected["n_calls"],
        expected["n_well_formed"],
    )
    assert summary["format_valid"] == pytest.approx(100 * 2 / 6)
    assert {c.key for c in PROTOCOL.columns} <= set(summary)


def test_summary_of_nothing_has_no_figures() -> None:
    summary = PROTOCOL.summarize([Outcome(item="x", status=Status.ERROR)])
    assert summary["n_answered"] == 0
    assert summary["f1"] is None and summary["format_correctness"] is None


# --------------------------------------------------------------------------- outputs


def test_outputs_are_read_back_by_the_answer_reader_with_the_same_figures(tmp_path: Path) -> None:
    answers = {f"atp_w{n}": text for n, text in enumerate(ANSWERS.values())}
    outcomes = outcomes_for(answers, dict.fromkeys(answers, GOLD))
    outcomes.append(Outcome(item="atp_err", status=Status.ERROR, error="timeout"))

    (path,) = PROTOCOL.write_outputs(outcomes, str(tmp_path / "out"), model="org/GPT 4o")

    assert Path(path).name == "org_GPT_4o.jsonl"
    records = read_answer_file(Path(path).name, Path(path).read_bytes())
    assert [(r.item_id, r.model, r.text) for r in records] == [
        (t, "org/GPT 4o", a) for t, a in answers.items()
    ]
    figures = score_answers(
        [ResolvedAnswer(r.model, r.item_id or "", r.text) for r in records],
        {t: ItemInfo(gold=GOLD) for t in answers},
        syntax="atp",
    )["models"]["org/GPT 4o"]
    summary = PROTOCOL.summarize(outcomes)
    assert figures["tool_set"]["f1"] == pytest.approx(summary["f1"])
    assert figures["format_correctness"] == pytest.approx(summary["format_correctness"])


# --------------------------------------------------------------------------- any text

_PIECES = st.sampled_from(
    ["<tool>", "</tool>", "{", "}", '"tool_name"', ": ", '"Reference"', ", ", '"params"']
    + ['{"img_index": 0}', '"description"', '"x"', "\n\n", "text", "<imgen>", "]", "null"]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=5)), max_size=30))
def test_any_answer_text_is_scored_never_raised_on(pieces: list[str]) -> None:
    scores = score_answer("".join(pieces), GOLD)
    assert scores["format_valid"] in (0.0, 100.0)
    assert 0 <= scores["n_well_formed"] <= scores["n_calls"]
    assert 0.0 <= scores["f1"] <= 100.0
