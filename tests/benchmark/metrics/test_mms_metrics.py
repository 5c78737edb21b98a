"""m&m's plan metrics: labels, each metric on a hand-computed example, upstream quirks, and the
shared sample predictions with expected values derived independently."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmark.metrics.mms import (
    best_match,
    code_calls,
    code_labels,
    gold_to_code,
    indel_ratio,
    normalized_edit_distance,
    plan_accuracy,
    prediction_to_code,
    prf_scores,
    read_gold,
    read_predictions,
    score_plans,
)
from benchmark.plans.verify import Toolset, load_toolset
from tests.shared_data import MMS_DATA

ROOT = Path(__file__).resolve().parents[3]
BUNDLED = ROOT / "benchmark" / "builtin" / "data"

EXACT = [8, 28, 9001, 9003, 9007]


@pytest.fixture(scope="module")
def toolset() -> Toolset:
    return load_toolset(BUNDLED / "tool_metadata.json", BUNDLED / "tool_graph.json")


@pytest.fixture(scope="module")
def sample() -> tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any]]:
    if not (MMS_DATA / "tasks.json").exists():
        pytest.skip(f"m&m's sample data not found at {MMS_DATA}")
    gold, alternatives = read_gold(MMS_DATA / "tasks.json")
    return gold, read_predictions(MMS_DATA / "predictions.jsonl"), alternatives


# --------------------------------------------------------------------------- labels


def test_code_labels_follow_upstream_line_rules() -> None:
    code = (
        "def solve():\n"
        '    output0 = image_captioning(image="A.jpg")\n'
        "    output1 = text_summarization(\n"  # a call over several lines is not read
        "        text=output0['text'])\n"
        "    output2 = question_answering(text=output0['text'], question='Why?')\n"
        "    x.y = count(objects=output0)\n"  # target is not a plain name
        "    output3 = tools.count(objects=output0)\n"  # function is not a plain name
        "    z = 1; output4 = count(objects=output0)\n"  # the first assignment decides
        "    result = {0: output0}\n"
        "    return result\n"
    )
    assert [c.func_name for c in code_calls(code)] == ["image_captioning", "question_answering"]
    assert code_labels(code) == ["image_captioning", "question_answering"]
    assert code_labels(code, "argname") == [
        "image_captioning--image",
        "question_answering--question--text",  # names sorted
    ]
    assert code_labels(code, "argvalue") == [
        "image_captioning--image='a.jpg'",  # ast.unparse text, lower-cased
        "question_answering--question='why?'--text=output0['text']",
    ]
    assert code_labels(code, "edge") == ["image_captioning--question_answering"]


def test_edges_are_consecutive_steps_not_data_flow() -> None:
    code = "o0 = a(x='1')\no1 = b(x='2')\no2 = c(x=o0['t'])"
    assert code_labels(code, "edge") == ["a--b", "b--c"]


def test_kwargs_get_a_name_instead_of_crashing() -> None:
    assert code_labels("o = a(x=1, **k)", "argname") == ["a--**--x"]


# --------------------------------------------------------------------------- each metric by hand

# Two items over a toolset of four tools a, b, c, d (the tool labels are the names):
#   item 1  gold: a(x="1") -> b(y=<a>.t)       pred: a(x="1") -> c(y=<a>.t)
#   item 2  gold: b(y="Q")                      pred: b(y="q")
ITEM1_GOLD = "output0 = a(x=\"1\")\noutput1 = b(y=output0['t'])"
ITEM1_PRED = "output0 = a(x=\"1\")\noutput1 = c(y=output0['t'])"
ITEM2_GOLD = 'output0 = b(y="Q")'
ITEM2_PRED = 'output0 = b(y="q")'
TINY_TOOLS = ["a", "b", "c", "d"]


def _pairs(kind: str) -> list[tuple[list[str], list[str]]]:
    return [
        (code_labels(ITEM1_GOLD, kind), code_labels(ITEM1_PRED, kind)),  # type: ignore[arg-type]
        (code_labels(ITEM2_GOLD, kind), code_labels(ITEM2_PRED, kind)),  # type: ignore[arg-type]
    ]


def test_tool_f1_is_a_macro_average_over_every_tool_of_the_toolset() -> None:
    # Pooled samples (one per distinct label of an item): item 1 gives a: (a, a) TP,
    # b: (b, none) FN, c: (none, c) FP; item 2 gives b: (b, b) TP.
    # Per class:  a  P=1 R=1   F=1
    #             b  P=1 R=1/2 F=2/3
    #             c  P=0 R=0   F=0
    #             d  absent everywhere: P=R=F=0 (zero_division), still averaged
    # Macro: P = 2/4 = 50.00, R = 1.5/4 = 37.50, F = (5/3)/4 = 41.67
    assert prf_scores(_pairs("tool"), categories=TINY_TOOLS) == {
        "precision": 50.0,
        "recall": 37.5,
        "f1": 41.67,
    }
    # Without the unused tool d: F = (5/3)/3 = 55.56.
    assert prf_scores(_pairs("tool"), categories=["a", "b", "c"])["f1"] == 55.56


def test_argname_f1() -> None:
    # item 1: gold {a--x, b--y}, pred {a--x, c--y}: TP 1, FP 1, FN 1; item 2: b--y both: TP 1.
    # P = R = 2/3, F = 66.67
    assert prf_scores(_pairs("argname")) == {"precision": 66.67, "recall": 66.67, "f1": 66.67}


def test_argvalue_f1_lower_cases_values() -> None:
    # item 1: a--x='1' TP; b--y=output0['t'] FN; c--y=output0['t'] FP.
    # item 2: "Q" and "q" both become b--y='q': TP.  P = R = F = 2/3.
    assert code_labels(ITEM2_GOLD, "argvalue") == code_labels(ITEM2_PRED, "argvalue")
    assert prf_scores(_pairs("argvalue"))["f1"] == 66.67


def test_edge_f1() -> None:
    # item 1: gold {a--b}, pred {a--c}: FN 1, FP 1; item 2 has one step, so no edge labels.
    # TP 0: P = R = F = 0.
    assert prf_scores(_pairs("edge")) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    # Nothing to score at all (upstream: scikit-learn raises) gives 0.
    assert prf_scores([([], [])]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}


def test_plan_accuracy() -> None:
    # Tool lists: item 1 [a, b] vs [a, c] differ; item 2 [b] == [b]: 1/2 = 50.00.
    assert plan_accuracy(_pairs("tool")) == 50.0
    # Order and repeats matter: [a, a] vs [a] is a miss.
    assert plan_accuracy([(["a", "a"], ["a"])]) == 0.0


def test_normalized_edit_distance() -> None:
    # As class numbers: item 1 gold [1, 2], pred [1, 3]: LCS 1, ratio 2*1/4 = 0.5;
    # item 2 [2] vs [2]: ratio 1.  NED = 1 - (0.5 + 1)/2 = 25.00.
    assert normalized_edit_distance(_pairs("tool"), TINY_TOOLS) == 25.0
    # Unknown tools are all class 0, so two different unknown tools count as equal.
    assert normalized_edit_distance([(["x"], ["y"])], TINY_TOOLS) == 0.0


def test_score_plans_reports_every_metric_on_the_tiny_example() -> None:
    result = score_plans(
        {1: ITEM1_GOLD, 2: ITEM2_GOLD}, {1: ITEM1_PRED, 2: ITEM2_PRED}, TINY_TOOLS, "code"
    )
    assert result["tool_macro_f1"] == 41.67
    assert result["argname_f1"] == result["argvalue_f1"] == 66.67
    assert result["edge_f1"] == 0.0
    assert result["plan_tool_accuracy"] == 50.0
    # argname lists: item 1 differs, item 2 equal.
    assert result["plan_argname_accuracy"] == result["plan_argvalue_accuracy"] == 50.0
    assert result["tool_normalized_edit_distance"] == 25.0
    assert result["n_items"] == 2 and result["n_invalid"] == 0


def test_repeated_labels_count_once_in_f1() -> None:
    # gold [a, a], pred [a]: the union {a} is one TP sample, so F1 is perfect, while plan
    # accuracy misses and the edit distance is 1 - 2*1/3 = 33.33.
    pairs = [(["a", "a"], ["a"])]
    assert prf_scores(pairs, categories=["a"])["f1"] == 100.0
    assert normalized_edit_distance(pairs, ["a"]) == 33.33


@pytest.mark.parametrize(
    ("a", "b", "ratio"),
    [([1, 2, 3], [1, 3], 0.8), ([], [], 1.0), ([1], [], 0.0), ([1, 2], [2, 1], 0.5)],
)
def test_indel_ratio_known_values(a: list[int], b: list[int], ratio: float) -> None:
    # These are Levenshtein.ratio's values for the same lists.
    assert indel_ratio(a, b) == ratio


def _lcs(a: list[int], b: list[int]) -> int:
    if not a or not b:
        return 0
    if a[0] == b[0]:
        return 1 + _lcs(a[1:], b[1:])
    return max(_lcs(a[1:], b), _lcs(a, b[1:]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=6), st.lists(st.integers(0, 3), max_size=6))
def test_indel_ratio_is_twice_lcs_over_total_length(a: list[int], b: list[int]) -> None:
    expected = 1.0 if not a and not b else 2 * _lcs(a, b) / (len(a) + len(b))
    assert indel_ratio(a, b) == pytest.approx(expected)


# --------------------------------------------------------------------------- formats


def test_prediction_formats() -> None:
    plan = [{"id": 0, "name": "count", "args": {"objects": "<node-1>.objects"}}]
    line = "output0 = count(objects=output1['objects'])"
    assert prediction_to_code(plan, "json") == line
    assert prediction_to_code(json.dumps(plan), "json") is None  # upstream wants a list
    assert prediction_to_code(json.dumps(plan), "auto") == line
    assert prediction_to_code(repr(plan), "auto") == line
    assert prediction_to_code({"nodes": plan}, "auto") == line
    assert prediction_to_code(line, "auto") == line
    assert prediction_to_code("I cannot help", "auto") is None
    assert prediction_to_code(plan, "code") == str(plan)  # upstream: str() of anything
    assert prediction_to_code([{"id": 0}], "auto") is None  # malformed step
    with pytest.raises(ValueError):
        prediction_to_code(plan, "yaml")


def test_gold_forms() -> None:
    plan = [{"id": 0, "name": "count", "args": {"objects": "x"}}]
    assert gold_to_code(plan) == gold_to_code(repr(plan)) == 'output0 = count(objects="x")'
    assert gold_to_code("output0 = count(objects='x')") == "output0 = count(objects='x')"
    assert gold_to_code([{"id": 0}]) is None


def test_empty_evaluation_gives_no_figures() -> None:
    result = score_plans({}, {}, TINY_TOOLS)
    assert result["n_items"] == 0
    assert result["tool_macro_f1"] is None and result["parse_rate"] is None


def test_best_match_prefers_gold_on_ties() -> None:
    gold = "o0 = a(x='1')\no1 = b(y=o0['t'])"
    alt = "o0 = a(x='1')\no1 = c(y=o0['t'])"
    assert best_match([gold, alt], "o0 = a(x='1')\no1 = c(y=o0['t'])") == 1
    assert best_match([gold, alt], "o0 = a(x='1')") == 0  # both score 66.67
    assert best_match([gold, alt], "") == 0


# --------------------------------------------------------------------------- the shared sample


def _labels(plan: list[dict[str, Any]], kind: str) -> list[str]:
    """Tool/argname/edge labels straight from a JSON plan, for an independent check."""
    names = [step["name"].replace(" ", "_") for step in plan]
    if kind == "tool":
        return names
    if kind == "argname":
        return ["--".join([n, *sorted(step["args"])]) for n, step in zip(names, plan, strict=True)]
    return [f"{x}--{y}" for x, y in zip(names, names[1:], strict=False)]


def _set_prf(pairs: list[tuple[list[str], list[str]]]) -> tuple[float, float, float]:
    tp = sum(len(set(g) & set(p)) for g, p in pairs)
    fp = sum(len(set(p) - set(g)) for g, p in pairs)
    fn = sum(len(set(g) - set(p)) for g, p in pairs)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return round(100 * precision, 2), round(100 * recall, 2), round(100 * f1, 2)


def _macro(pairs: list[tuple[list[str], list[str]]], classes: list[str]) -> float:
    scores = []
    for cls in classes:
        tp = sum(cls in g and cls in p for g, p in pairs)
        fp = sum(cls in p and cls not in g for g, p in pairs)
        fn = sum(cls in g and cls not in p for g, p in pairs)
        scores.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return round(100 * sum(scores) / len(classes), 2)


def _as_json_plans(
    gold: dict[Any, Any], preds: dict[Any, Any]
) -> dict[Any, tuple[list[Any], list[Any]]]:
    """Gold and predicted JSON plans; 9005's code prediction is the gold plan in code form
    and 9010's unreadable text has no steps."""
    plans = {}
    for item_id, plan in gold.items():
        pred = preds[item_id]
        if item_id == 9005:
            pred = plan
        elif isinstance(pred, str):
            pred = []
        plans[item_id] = (plan, pred)
    return plans


def test_sample_metrics_match_an_independent_count(
    sample: tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any]], toolset: Toolset
) -> None:
    gold, preds, _ = sample
    result = score_plans(gold, preds, toolset)
    plans = _as_json_plans(gold, preds)
    classes = [name.replace(" ", "_") for name in toolset.names]
    tool_pairs = [(_labels(g, "tool"), _labels(p, "tool")) for g, p in plans.values()]
    assert result["tool_macro_f1"] == _macro(tool_pairs, classes)
    for kind in ("argname", "edge"):
        pairs = [(_labels(g, kind), _labels(p, kind)) for g, p in plans.values()]
        expected = _set_prf(pairs)
        assert (result[f"{kind}_precision"], result[f"{kind}_recall"], result[f"{kind}_f1"]) == (
            expected
        ), kind


def test_sample_metrics_values(
    sample: tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any]], toolset: Toolset
) -> None:
    gold, preds, _ = sample
    result = score_plans(gold, preds, toolset, "auto")
    assert result == {
        "n_items": 15,
        # 15 tools predicted perfectly (F1 1), image captioning 3 TP/1 FP/1 FN (F1 .75), image
        # classification 1 TP/1 FP (F1 2/3); the other 16 of the 33 tools score 0:
        # F1 = 16.4167/33, P = 16.25/33, R = 16.75/33.
        "tool_macro_precision": 49.24,
        "tool_macro_recall": 50.76,
        "tool_macro_f1": 49.75,
        # 21 TP, 5 FP (9002, 9004, 9008, 9009, 9011), 9 FN (9010 twice): 21/26, 21/30.
        "argname_precision": 80.77,
        "argname_recall": 70.0,
        "argname_f1": 75.0,
        # 17 TP, 9 FP, 13 FN. 9005 loses one TP: its code prediction keeps the f-string's
        # braces, while the gold goes through m&m's conversion, which drops them.
        "argvalue_precision": 65.38,
        "argvalue_recall": 56.67,
        "argvalue_f1": 60.71,
        # 15 gold edges, 12 predicted, 8 shared.
        "edge_precision": 66.67,
        "edge_recall": 53.33,
        "edge_f1": 59.26,
        # equal tool lists: 8, 28, 9001, 9003, 9004, 9005, 9007, 9011, 9012 (9/15);
        # argnames also equal: without 9004 and 9011 (7/15); values: 8, 28, 9001, 9003, 9007.
        "plan_tool_accuracy": 60.0,
        "plan_argname_accuracy": 46.67,
        "plan_argvalue_accuracy": 33.33,
        # ratios: 9 perfect, 36 and 9006 0.8, 9008 and 9009 0.5, 9002 and 9010 0:
        # 1 - 11.6/15.
        "tool_normalized_edit_distance": 22.67,
        "n_invalid": 1,
        "invalid_ids": [9010],
        "missing_ids": [],
        "parse_rate": 93.33,  # all but 9010
        "verify_pass_rate": 86.67,  # all but 9004 (argument names) and 9010
    }


def test_exact_predictions_score_perfectly_per_item(
    sample: tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any]], toolset: Toolset
) -> None:
    gold, preds, _ = sample
    for item_id in EXACT:
        result = score_plans({item_id: gold[item_id]}, {item_id: preds[item_id]}, toolset)
        for name in ("argname_f1", "argvalue_f1", "plan_tool_accuracy", "plan_argvalue_accuracy"):
            assert result[name] == 100.0, (item_id, name)
        assert result["tool_normalized_edit_distance"] == 0.0
        # Tool-F1 stays a macro average over all 33 tools: only the item's tools score 1.
        tools = {step["name"] for step in gold[item_id]}
        assert result["tool_macro_f1"] == round(100 * len(tools) / 33, 2)


def test_unreadable_prediction_contributes_no_labels(
    sample: tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any]], toolset: Toolset
) -> None:
    gold, preds, _ = sample
    with_text = score_plans(gold, preds, toolset)
    without = score_plans(gold, {**preds, 9010: []}, toolset)
    missing = score_plans(gold, {k: v for k, v in preds.items() if k != 9010}, toolset)
    for name in ("tool_macro_f1", "argname_f1", "argvalue_f1", "edge_f1"):
        assert with_text[name] == without[name] == missing[name]
    assert missing["missing_ids"] == [9010] and missing["invalid_ids"] == [9010]


def test_wrong_argument_names_lower_argname_but_not_tool_f1(
    sample: tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any]], toolset: Toolset
) -> None:
    gold, preds, _ = sample
    actual = score_plans(gold, preds, toolset)
    fixed = score_plans(gold, {**preds, 9004: gold[9004]}, toolset)
    assert actual["tool_macro_f1"] == fixed["tool_macro_f1"]
    assert actual["argname_f1"] < fixed["argname_f1"]
    assert actual["verify_pass_rate"] < fixed["verify_pass_rate"]


def test_best_match_uses_the_alternative_plan(
    sample: tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any]], toolset: Toolset
) -> None:
    gold, preds, alternatives = sample
    assert list(alternatives) == [9008]
    plain = score_plans({9008: gold[9008]}, {9008: preds[9008]}, toolset)
    best = score_plans({9008: gold[9008]}, {9008: preds[9008]}, toolset, alternatives=alternatives)
    assert best["best_match"] == {"9008": 1}
    assert best["plan_argvalue_accuracy"] == 100.0 and plain["plan_argvalue_accuracy"] == 0.0
    full = score_plans(gold, preds, toolset, alternatives=alternatives)
    assert full["plan_tool_accuracy"] == 66.67  # 9008 now counts: 10/15
    assert [k for k, v in full["best_match"].items() if v] == ["9008"]


def test_json_and_code_modes_follow_upstream(
    sample: tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any]], toolset: Toolset
) -> None:
    gold, preds, _ = sample
    as_json = score_plans(gold, preds, toolset, "json")
    assert as_json["invalid_ids"] == [9005, 9010]  # a code string is no JSON plan
    as_code = score_plans(gold, preds, toolset, "code")
    assert as_code["invalid_ids"] == []  # upstream reads any text as code...
    assert as_code["plan_tool_accuracy"] == round(100 / 15, 2)  # ...and only 9005 is code


def test_readers(sample: tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any]]) -> None:
    gold, preds, _ = sample
    rows = json.loads((MMS_DATA / "tasks.json").read_text("utf-8"))
    assert list(gold) == [r["id"] for r in rows] == list(preds)
    assert gold[28] == ast.literal_eval(rows[1]["plan_str"])
    assert isinstance(preds[9005], str) and isinstance(preds[8], list)
