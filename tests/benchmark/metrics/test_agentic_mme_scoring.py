"""Agentic-MME run scoring on the shared sample runs and on small made-up runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from benchmark.metrics import agentic_mme as mme
from benchmark.metrics.agentic_mme import FailureMode, FailureObservation, RunRecord
from tests.shared_data import SHARED_DATA, needs_data

DATA = SHARED_DATA / "agentic-mme"
pytestmark = needs_data("agentic-mme")


def task(task_id: str) -> dict[str, Any]:
    return json.loads((DATA / "json" / f"{task_id}.json").read_text(encoding="utf-8"))


def sample_run(task_id: str) -> RunRecord:
    return RunRecord.from_dir(DATA / "runs" / task_id)


class Events:
    """Builds an Atm-mode tool_use_list the way the released runner logs it."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.images = 1

    def image(self, tool: str, source: int = 0, **args: Any) -> int:
        new = self.images
        self.images += 1
        self.events.append(
            {
                "index": len(self.events),
                "tool_name": tool,
                "raw_tool_name": tool,
                "arguments": {"image_index": source, **args},
                "output": {"ok": "true", "op": tool, "new_image_index": new},
            }
        )
        return new

    def search(self, query: str, context: str) -> None:
        self.events.append(
            {
                "index": len(self.events),
                "tool_name": "google_search",
                "raw_tool_name": "google_search",
                "arguments": {"query": query},
                "output": {"query": query, "context": context},
            }
        )

    def run(self, answer: str, **kwargs: Any) -> RunRecord:
        return RunRecord(tuple(self.events), answer, **kwargs)


# --------------------------------------------------------------------------- the sample runs


def test_run_0001_is_efficient() -> None:
    score = mme.score_run(task("0001"), sample_run("0001"))
    assert score.acc and score.answer == "Willow St"
    assert score.calls == 1 and score.reference_calls == 1
    assert score.overthink == 0 and score.penalty == 0
    assert score.overthink_ratio == 1.0 and score.overthink_category == "optimal"
    assert (score.S, score.V, score.V_tool, score.V_true) == (None, 1.0, 1.0, 1.0)
    assert score.pqs == 1.0 and score.undetermined == 0
    c1 = score.checkpoints[0]
    assert c1.tool_passed and c1.visual_passed and c1.hit_index == 0
    assert c1.detail["visual"]["match"]["iou"] == 1.0


def test_run_0003_overthinks() -> None:
    score = mme.score_run(task("0003"), sample_run("0003"))
    assert score.calls == 9 and score.reference_calls == 2 and score.excess_calls == 7
    assert score.overthink == pytest.approx(7 / 3) and round(score.overthink, 2) == 2.33
    assert score.overthink_ratio == 4.5 and score.overthink_category == "overthink"
    assert score.penalty == pytest.approx(0.70)
    assert score.acc and score.answer == "317"
    assert (score.V, score.V_tool, score.V_true) == (1.0, 1.0, 1.0)
    assert score.pqs == pytest.approx(0.30)
    # C1 (enhance) hits the first enhance call, C2 (crop) the first crop (released require_op).
    assert [c.hit_index for c in score.checkpoints[:2]] == [1, 0]
    # The proxy's best matching artifact is an exact crop of the reference box.
    assert score.checkpoints[1].detail["visual"]["match"]["iou"] == 1.0


def test_aggregate_over_the_sample_runs() -> None:
    scores = [mme.score_run(task(t), sample_run(t)) for t in ("0001", "0003")]
    report = mme.aggregate(scores)
    overall = report["overall"]
    assert overall["n"] == 2 and overall["acc"] == 1.0
    assert overall["calls"] == 5.0 and overall["reference_calls"] == 1.5
    assert overall["overthink"] == pytest.approx((0 + 7 / 3) / 2)
    assert overall["overthink_of_means"] == pytest.approx(3.5 / 2.5)
    assert overall["overthink_ratio"] == pytest.approx(2.75)
    assert overall["penalty"] == pytest.approx(0.35)
    assert overall["S"] is None and overall["V"] == 1.0
    assert set(report["levels"]) == {"L1", "L2"}
    assert report["levels"]["L2"]["overthink"] == pytest.approx(7 / 3)
    analysis = report["overthink_analysis"]
    assert analysis["human_total_reference_calls"] == 3 and analysis["model_total_calls"] == 10
    assert analysis["total_excess_calls"] == 7 and analysis["avg_overthink_ratio"] == 2.75
    assert (analysis["pct_overthink"], analysis["pct_underthink"], analysis["pct_optimal"]) == (
        50.0,
        0.0,
        50.0,
    )
    json.dumps([s.to_dict() for s in scores])  # JSON-ready


# --------------------------------------------------------------------------- logged artifacts


def fixture_quantization(image: Image.Image) -> Image.Image:
    """The sample PNGs were stored as 48-colour median-cut palettes to keep them small."""
    return image.quantize(colors=48, method=Image.Quantize.MEDIANCUT).convert("RGB")


@pytest.mark.parametrize(
    ("run_id", "ops"),
    [
        ("0001", ["crop"]),
        ("0003", ["crop", "enhance", "autocontrast", "crop", "crop", "sharpen", "enhance", "crop"]),
    ],
)
def test_every_logged_image_is_the_logged_operation_applied(run_id: str, ops: list[str]) -> None:
    run = sample_run(run_id)
    original = Image.open(DATA / task(run_id)["input"]["image"])
    checks = mme.check_run_artifacts(run, original, chain="memory", normalize=fixture_quantization)
    assert [c.op for c in checks] == ops  # every image event (0003's search makes no image)
    for c in checks:
        assert c.ok, (c.event_index, c.op, c.diff, c.error)
        assert c.diff is not None and c.diff.max_abs == 0


def test_replay_from_the_logged_files_is_close_but_not_exact() -> None:
    # Fed the stored (palette-reduced) inputs, the ops give near, not equal, pixels.
    run = sample_run("0003")
    checks = mme.check_run_artifacts(run, Image.open(DATA / "images/image_0003.png"))
    assert all(c.diff is not None and c.diff.same_size for c in checks)
    assert all(c.diff.mean_abs < 2.0 for c in checks if c.diff)
    assert {c.op for c in checks if c.ok} == {"autocontrast", "enhance"}


def test_crop_replay_uses_the_logged_pixel_box() -> None:
    event = sample_run("0001").events[0]
    assert mme.event_to_step(event) == ("crop", {"zoom_scale": 3.0, "box": [922, 322, 1020, 362]})
    op, params = mme.event_to_step(event, prefer_logged_pixels=False)
    assert params["bbox_2d"] == [769, 403, 850, 452]
    with pytest.raises(mme.ops.OpError, match="not an image operation"):
        mme.event_to_step(sample_run("0003").events[6])  # google_search


# --------------------------------------------------------------------------- answers


@pytest.mark.parametrize(
    ("answer", "golden", "match_type", "tolerance", "expected"),
    [
        ("Willow St", "Willow St", "contains", 0, True),
        ("The sign says WILLOW ST.", "Willow St", "contains", 0, True),
        ("Maple Ave", "Willow St", "contains", 0, False),
        ("Cu", "Cu", "exact", 0, True),
        (" Cu\n", "Cu", "exact", 0, True),
        ("cu", "Cu", "exact", 0, False),  # released exact match is case-sensitive
        ("1284.5", "1284.50", "numeric", 0.01, True),
        ("1284.52", "1284.50", "numeric", 0.01, False),
        ("1,284.50", "1284.50", "numeric", 0.01, False),  # whole answer must parse
        ("28", "28", "numeric", 0, True),
        ("In 2017 the answer is 17", "17", "contains", 0, True),
        ("2017", "17", "contains", 0, False),  # short numbers need word boundaries
        ("Answer: 7 items", "7", "contains", 0, True),
        ("Willow", "Willow St", "unknown_type", 0, False),
    ],
)
def test_answer_matching(
    answer: str, golden: str, match_type: str, tolerance: float, expected: bool
) -> None:
    assert mme.answer_matches(answer, golden, match_type, tolerance) is expected


def test_final_answer_extraction_and_variants() -> None:
    t = task("0006")
    assert mme.final_answer_correct(t, "<answer>Cu</answer>")
    assert mme.final_answer_correct(t, "Thinking...\n<answer> Cu ")
    assert not mme.final_answer_correct(t, "Copper")
    assert mme.final_answer_correct(t, "Copper", accepted=["Copper"])
    variant = {**t, "golden_answer": {**t["golden_answer"], "accepted_answers": ["Copper"]}}
    assert mme.final_answer_correct(variant, "Copper")
    # The key Benchwright's own task files write (benchmark.formats.agentic_mme).
    written = {**t, "golden_answer": {**t["golden_answer"], "accepted_variants": ["Copper"]}}
    assert mme.final_answer_correct(written, "Copper")
    assert not mme.final_answer_correct(written, "Bronze")
    assert mme.final_answer_correct(task("0002"), "1284.5")


# --------------------------------------------------------------------------- V_true


def test_injected_visual_judge_any_pass() -> None:
    seen: list[str] = []

    def judge(path: Path, question: str, expected: str) -> bool | None:
        seen.append(path.name)
        assert expected == "317" and "painted" in question
        return path.name == "transformed_image_4.png"

    score = mme.score_run(task("0003"), sample_run("0003"), visual_check=judge)
    c2 = score.checkpoints[1]
    assert c2.visual_passed is True and score.V_true == 1.0
    assert seen[-1] == "transformed_image_4.png"  # stops at the first passing image
    assert seen[0] == "transformed_image_1.png"

    nobody = mme.score_run(task("0003"), sample_run("0003"), visual_check=lambda *a: False)
    assert nobody.V_true == 0.0 and nobody.V == 0.5 and nobody.V_tool == 1.0
    unsure = mme.score_run(task("0003"), sample_run("0003"), visual_check=lambda *a: None)
    assert unsure.checkpoints[1].visual_passed is None and unsure.undetermined == 1
    assert unsure.V_true == 0.0  # undetermined counts as not passed


def test_wrong_crop_region_fails_v_true_but_not_v_tool() -> None:
    ev = Events()
    ev.image("crop", 0, bbox_2d=[0, 0, 200, 200], zoom_scale=3)
    score = mme.score_run(task("0001"), ev.run("Willow St"))
    assert score.V_tool == 1.0 and score.V_true == 0.0 and score.V == 0.0
    closest = score.checkpoints[0].detail["visual"]["closest"]
    assert closest["iou"] == 0.0


def test_a_huge_crop_does_not_count_as_showing_a_tiny_detail() -> None:
    ev = Events()
    ev.image("crop", 0, bbox_2d=[0, 0, 1000, 1000])
    assert mme.score_run(task("0001"), ev.run("x")).V_true == 0.0
    ev = Events()
    ev.image("crop", 0, bbox_2d=[700, 350, 900, 500])  # 7.5x the box, covers it
    assert mme.score_run(task("0001"), ev.run("x")).V_true == 1.0


def test_rotation_direction_matters() -> None:
    good = Events()
    good.image("rotate", 0, angle=90)
    assert mme.score_run(task("0002"), good.run("1284.50")).V == 1.0
    same = Events()
    same.image("rotate", 0, angle=-270)
    assert mme.score_run(task("0002"), same.run("1284.50")).V_true == 1.0
    wrong = Events()
    wrong.image("rotate", 0, angle=-90)
    score = mme.score_run(task("0002"), wrong.run("1284.50"))
    assert score.V_tool == 1.0 and score.V_true == 0.0
    odd = Events()
    odd.image("rotate", 0, angle=45)
    assert mme.score_run(task("0002"), odd.run("x")).V_true == 0.0


def test_flip_then_crop_in_the_flipped_frame() -> None:
    ev = Events()
    flipped = ev.image("flip", 0, direction="horizontal")
    ev.image("crop", flipped, bbox_2d=[430, 408, 530, 552], zoom_scale=3)
    ev.search("atomic number 29 element", "Copper is a chemical element; atomic number 29.")
    ev.search("copper standard atomic weight", "Standard atomic weight Ar(Cu) 63.546")
    score = mme.score_run(task("0006"), ev.run("Cu"))
    assert score.acc and score.S == 1.0 and score.V == 1.0 and score.V_true == 1.0
    # The same box on the unflipped image is elsewhere and mirrored.
    ev = Events()
    ev.image("crop", 0, bbox_2d=[430, 408, 530, 552])
    assert mme.score_run(task("0006"), ev.run("Cu")).V_true == 0.0
    # Cropping the mirrored spot first and flipping the crop shows the same thing.
    ev = Events()
    crop = ev.image("crop", 0, bbox_2d=[470, 408, 570, 552])
    ev.image("flip", crop, direction="horizontal")
    checkpoints = mme.score_run(task("0006"), ev.run("Cu")).checkpoints
    assert checkpoints[1].visual_passed is True  # C2: the label, unmirrored
    assert checkpoints[0].visual_passed is False  # C1 asks about the whole flipped image


def test_ticket_crop_then_rotate_and_search() -> None:
    ev = Events()
    ev.image("crop", 0, bbox_2d=[715, 460, 852, 545], zoom_scale=3)
    ticket = ev.image("crop", 0, bbox_2d=[198, 575, 262, 753], zoom_scale=3)
    ev.image("rotate", ticket, angle=-90)
    ev.search("The Starry Night year painted", "The Starry Night ... painted in June 1889.")
    score = mme.score_run(task("0005"), ev.run("130"))
    assert score.acc and score.S == 1.0 and score.V == 1.0
    assert score.calls == 4 and score.overthink == 0.0 and score.penalty == 0.0
    assert score.R == 0.5  # O1 (C2 -> C3) holds; O2 ends at an answer checkpoint (released)
    # A search whose results lack the expected year fails S.
    ev = Events()
    ev.search("starry night", "A painting by Vincent van Gogh.")
    bad = mme.score_run(task("0005"), ev.run("131"))
    assert bad.S == 0.0 and not bad.acc
    assert bad.checkpoints[3].detail["expected"] == "1889"


def test_injected_search_judge_and_lens() -> None:
    ev = Events()
    ev.search("anything", "no year here")
    calls: list[tuple[list[str], list[str]]] = []

    def judge(cp: Any, queries: Any, contexts: Any) -> bool:
        calls.append((list(queries), list(contexts)))
        return True

    assert mme.score_run(task("0005"), ev.run("130"), search_check=judge).S == 1.0
    assert calls == [(["anything"], ["no year here"])]
    lens_task = task("0005")
    lens_task["process_evaluation"]["checkpoints"][3]["tools"] = ["google_lens_search"]
    ev = Events()
    ev.events.append({"index": 0, "tool_name": "google_lens_search", "arguments": {}, "output": {}})
    assert mme.score_run(lens_task, ev.run("130")).S == 1.0


def test_a_tool_call_satisfies_one_search_checkpoint_only() -> None:
    ev = Events()
    ev.search("copper atomic number 29 weight", "copper, atomic number 29, weight 63.546")
    score = mme.score_run(task("0006"), ev.run("Cu"))
    assert [c.passed for c in score.checkpoints if c.kind == "search"] == [True, False]
    assert score.S == 0.5


# --------------------------------------------------------------------------- counting


def test_count_rules() -> None:
    gen = [
        {"index": 0, "tool_name": "google_search", "arguments": {"query": "q"}, "output": {}},
        {
            "index": 1,
            "tool_name": "crop",
            "raw_tool_name": "python_image_processing",
            "arguments": {"op": "crop", "save": "transformed_image_1.png", "line": 3},
            "output": {"ok": "true", "output_path": ""},
        },
        {
            "index": 2,
            "tool_name": "run_visual_processing_code",
            "raw_tool_name": "script_exec",
            "arguments": {"turn": 0},
            "output": {"ok": "true"},
        },
        {"index": 3, "tool_name": "crop", "arguments": {}, "output": {"declared_only": True}},
    ]
    assert mme.count_tool_calls(gen) == 2
    assert mme.count_tool_calls(gen, effective_tool_calls=3) == 3
    assert RunRecord(tuple(gen), "", effective_tool_calls=7).tool_calls == 7
    # Gen-mode ops are matched through arguments.op.
    assert mme.event_op(gen[1]) == "crop"


def test_penalty_rules() -> None:
    assert mme.efficiency_penalty(9, 2, 0.1) == pytest.approx(0.7)
    assert mme.efficiency_penalty(30, 2, 0.1) == 1.0
    assert mme.efficiency_penalty(1, 2, 0.1) == 0.0
    assert mme.efficiency_penalty(9, 2, 0.01, max_tool_calls=8) == 1.0
    assert mme.paper_overthink(1, 2) == 0.0 and mme.paper_overthink(5, 1) == 2.0
    assert mme.overthink_ratio(3, 0) is None


def test_exceeding_the_budget_and_underthinking() -> None:
    ev = Events()
    for _ in range(11):
        ev.image("crop", 0, bbox_2d=[769, 403, 850, 452])
    score = mme.score_run(task("0001"), ev.run("Willow St"))
    assert score.exceeded_max and score.penalty == 1.0 and score.pqs == 0.0
    none = mme.score_run(task("0003"), Events().run("317"))
    assert none.calls == 0 and none.overthink_category == "underthink" and none.V == 0.0
    report = mme.aggregate([score, none])
    assert report["overthink_analysis"]["cases_exceeded_max"] == 1
    assert report["overthink_analysis"]["cases_underthink"] == 1


# --------------------------------------------------------------------------- failure modes


def test_failure_modes_enum() -> None:
    assert len(FailureMode) == 7
    assert [m.label for m in FailureMode][:2] == ["Missing search tools", "Bad search query"]
    assert all(len(m.description) > 40 for m in FailureMode)
    assert FailureMode("overthinking_collapse") is FailureMode.OVERTHINKING_COLLAPSE


def test_dominant_label_rule() -> None:
    # The paper's example: a failed crop, later a poor query -> unfaithful visual tool use.
    assert (
        mme.dominant_failure_mode(
            [
                FailureObservation(FailureMode.BAD_SEARCH_QUERY, step=4),
                FailureObservation(FailureMode.UNFAITHFUL_VISUAL, step=1),
            ]
        )
        is FailureMode.UNFAITHFUL_VISUAL
    )
    # A decisive (most consequential) problem beats an earlier one.
    assert (
        mme.dominant_failure_mode(
            [
                FailureObservation(FailureMode.UNFAITHFUL_VISUAL, step=1),
                FailureObservation(FailureMode.OVERTHINKING_COLLAPSE, step=6, decisive=True),
            ]
        )
        is FailureMode.OVERTHINKING_COLLAPSE
    )
    # Same step: the fixed precedence; unknown steps come last.
    tie = [
        FailureObservation(FailureMode.OVERTHINKING_COLLAPSE, step=2),
        FailureObservation(FailureMode.MISSING_SEARCH, step=2),
        FailureObservation(FailureMode.TOOL_MISEXECUTION, step=None),
    ]
    assert mme.dominant_failure_mode(tie) is FailureMode.MISSING_SEARCH
    assert mme.dominant_failure_mode([]) is None


def test_suggested_failure_observations() -> None:
    ev = Events()
    ev.image("crop", 0, bbox_2d=[0, 0, 200, 200])
    run = ev.run("Maple Ave")
    score = mme.score_run(task("0001"), run)
    found = mme.suggest_failure_observations(task("0001"), run, score)
    assert mme.dominant_failure_mode(found) is FailureMode.UNFAITHFUL_VISUAL
    # No search at all where the task needs one; the visual steps were fine.
    ev = Events()
    flipped = ev.image("flip", 0)
    ev.image("crop", flipped, bbox_2d=[430, 408, 530, 552])
    run = ev.run("Fe")
    score = mme.score_run(task("0006"), run)
    found = mme.suggest_failure_observations(task("0006"), run, score)
    assert mme.dominant_failure_mode(found) is FailureMode.MISSING_SEARCH
    # Nothing visual done at all.
    run = Events().run("Fe")
    score = mme.score_run(task("0006"), run)
    found = mme.suggest_failure_observations(task("0006"), run, score)
    assert mme.dominant_failure_mode(found) is FailureMode.MISSING_VISUAL
    # Evidence surfaced but the answer is wrong, with extra calls.
    ev = Events()
    for _ in range(3):
        ev.image("crop", 0, bbox_2d=[769, 403, 850, 452])
    run = ev.run("Willow Rd")
    score = mme.score_run(task("0001"), run)
    modes = {o.mode for o in mme.suggest_failure_observations(task("0001"), run, score)}
    assert modes == {FailureMode.POSTVISUAL_PERCEPTION, FailureMode.OVERTHINKING_COLLAPSE}
    # A correct run has no failure to label.
    ok = mme.score_run(task("0001"), sample_run("0001"))
    assert mme.suggest_failure_observations(task("0001"), sample_run("0001"), ok) == []
