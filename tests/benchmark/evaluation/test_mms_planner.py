"""The m&m's planner for a model under test: each strategy × format with a scripted chat,
each kind of feedback changing what the model is sent next, not-executable plans, scores
equal to the plan scorer's, and the prediction file read back by the existing readers."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from benchmark.evaluation.base import (
    EvalItem,
    EvalSettings,
    EvaluationError,
    MemoryRecords,
    ModelReply,
    Outcome,
    ReplayMiss,
    Status,
    ToolLayer,
    ToolResult,
)
from benchmark.evaluation.mms import PROTOCOL, SettingsError
from benchmark.formats import mms as mms_format
from benchmark.kinds.base import resolve
from benchmark.kinds.mms import KIND
from benchmark.metrics.mms import read_predictions, score_plans
from benchmark.plans.parse import parse_plan
from review.plan_scoring.services import parse_predictions

GOLD = [
    {"id": 0, "name": "image crop left", "args": {"image": "photo.png"}},
    {"id": 1, "name": "image captioning", "args": {"image": "<node-0>.image"}},
]
TRUTH = {"id": 7, "user_request": "Caption the left half of photo.png", "plan_str": repr(GOLD)}


def png(size: tuple[int, int] = (40, 20), color: tuple[int, int, int] = (200, 10, 10)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, "PNG")
    return out.getvalue()


ITEM = EvalItem(
    id="7", record={"id": 7, "user_request": TRUTH["user_request"]}, images={"photo.png": png()}
)


class Script:
    """A chat callable answering the given texts in order, keeping what it was sent."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.sent: list[list[dict[str, Any]]] = []

    def __call__(
        self,
        messages: list[dict[str, Any]],
        *,
        images: Mapping[str, bytes] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> ModelReply:
        self.sent.append([dict(m) for m in messages])
        if not self.answers:
            raise AssertionError("the model was asked more often than scripted")
        return ModelReply(self.answers.pop(0), prompt_tokens=10, completion_tokens=5)

    def last_user(self) -> str:
        return str(self.sent[-1][-1]["content"])


class Captions:
    """A provider for image captioning that answers a fixed caption."""

    takes_files = True

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, Any], dict[str, bytes]]] = []

    def tools(self) -> Iterable[str]:
        return ["image captioning"]

    def call(
        self, name: str, arguments: Mapping[str, Any], files: Mapping[str, bytes] | None = None
    ) -> ToolResult:
        self.calls.append((dict(arguments), dict(files or {})))
        return ToolResult(output={"text": "a red square"})


def run(
    chat: Script, layer: ToolLayer | None = None, item: EvalItem = ITEM, **settings: Any
) -> Outcome:
    return PROTOCOL.run_item(
        item,
        settings=EvalSettings(**settings),
        chat=chat,
        tools=layer if layer is not None else ToolLayer([Captions()]),
        truth=TRUTH,
    )


JSON_PLAN = "# RESULT #: " + json.dumps({"nodes": GOLD})
CODE_PLAN = (
    "Here is the program:\n```python\ndef solve():\n"
    '    output0 = image_crop_left(image="photo.png")\n'
    "    output1 = image_captioning(image=output0['image'])\n"
    "    result = {0: output0, 1: output1}\n    return result\n```"
)


# --------------------------------------------------------------------------- strategy × format


def test_multi_step_json_plan_is_predicted_run_and_scored_perfect() -> None:
    chat = Script(JSON_PLAN)
    outcome = run(chat)
    assert outcome.status == Status.OK
    assert outcome.output["prediction"] == GOLD
    assert outcome.output["execution"]["status"] == "passed"
    assert outcome.scores["pass"] is True
    assert outcome.scores["tool_f1"] == 100.0 and outcome.scores["plan_accuracy"] == 100.0
    assert outcome.model_calls == 1 and outcome.tool_calls == 2
    # The cropped image is kept as the run's artifact, named by its hash in the step's output.
    ref = outcome.output["execution"]["steps"][0]["outputs"]["image"]
    data = outcome.files[f"artifacts/{ref.removeprefix('sha256:')}.png"]
    assert Image.open(io.BytesIO(data)).size == (20, 19)
    prompt = chat.sent[0][0]["content"]
    # The prompt lists the tools with argument names and types, and the input files.
    assert "- image crop(image: image, object: object) -> image" in prompt
    assert "photo.png" in prompt and TRUTH["user_request"] in prompt
    assert "plan_str" not in prompt and "<node-0>.image" not in prompt.split("# USER REQUEST")[1]


def test_multi_step_code_plan_is_read_with_ast_and_scored_as_code() -> None:
    chat = Script(CODE_PLAN)
    outcome = run(chat, plan_format="code")
    prediction = outcome.output["prediction"]
    assert prediction.startswith("def solve():") and "```" not in prediction
    assert [s["name"] for s in outcome.output["steps"]] == ["image crop left", "image captioning"]
    assert outcome.scores["pass"] is True
    assert outcome.scores["argname_f1"] == 100.0
    assert "image_crop_left(image: image) -> image" in chat.sent[0][0]["content"]


def test_step_by_step_json_one_action_per_turn_until_terminate() -> None:
    chat = Script(
        'THOUGHT 0: crop first.\nACTION 0: {"id": 0, "name": "image crop left", '
        '"args": {"image": "photo.png"}}',
        'THOUGHT 1: caption it.\nACTION 1: {"id": 1, "name": "image captioning", '
        '"args": {"image": "<node-0>.image"}}',
        "TERMINATE",
    )
    outcome = run(chat, strategy="step-by-step", feedback=("parse", "verify", "execute"))
    assert outcome.output["prediction"] == GOLD
    assert outcome.output["ended"] == "done"
    assert outcome.scores["pass"] is True
    assert [s["name"] for s in outcome.output["execution"]["steps"]] == [
        "image crop left",
        "image captioning",
    ]
    assert len(outcome.files) == 1
    # Each accepted step is answered with an observation of its execution.
    observation = str(chat.sent[2][-1]["content"])
    assert observation.startswith("OBSERVATION: Execution succeeded. The output of step 1")
    assert "'text': 'a red square'" in observation
    assert "THOUGHT 0 and ACTION 0" in chat.sent[0][0]["content"]


def test_step_by_step_code_builds_the_program_from_its_steps() -> None:
    chat = Script(
        'ACTION 0: ```python\noutput0 = image_crop_left(image="photo.png")\n```',
        "ACTION 1: ```python\noutput1 = image_captioning(image=output0['image'])\n```\nTERMINATE",
    )
    outcome = run(chat, strategy="step-by-step", plan_format="code")
    prediction = outcome.output["prediction"]
    assert "output1 = image_captioning(image=output0['image'])" in prediction
    assert parse_plan(prediction, plan_format="code").to_json() == GOLD
    assert outcome.scores["plan_argvalue_accuracy"] == 100.0
    assert outcome.model_calls == 2


# --------------------------------------------------------------------------- feedback


def test_parse_feedback_sends_the_parse_error_and_gets_a_second_try() -> None:
    chat = Script('# RESULT #: {"nodes": [{"id": 0, "name": ', JSON_PLAN)
    outcome = run(chat, feedback=("parse",))
    message = chat.last_user()
    assert message.startswith("Parsing failed:") and "brackets are closed" in message
    assert outcome.output["feedback"] == ["parse"]
    assert outcome.output["prediction"] == GOLD


def test_without_parse_feedback_an_unparseable_answer_is_a_scored_failure() -> None:
    chat = Script("I would crop it, then caption it.")
    outcome = run(chat)
    assert outcome.model_calls == 1
    assert outcome.output["prediction"] == []
    assert outcome.scores["pass"] is False and outcome.scores["tool_f1"] == 0.0


def test_verify_feedback_sends_the_verifier_findings() -> None:
    wrong = [{"id": 0, "name": "image crop left", "args": {"img": "photo.png"}}]
    chat = Script("# RESULT #: " + json.dumps({"nodes": wrong}), JSON_PLAN)
    outcome = run(chat, feedback=("parse", "verify"))
    message = chat.last_user()
    assert message.startswith("Verification failed:")
    assert "'img' is not an argument of image crop left" in message
    assert outcome.output["feedback"] == ["verify"]


def test_unknown_tool_without_verify_feedback_fails_execution_not_the_run() -> None:
    plan = [{"id": 0, "name": "teleport", "args": {"image": "photo.png"}}]
    chat = Script("# RESULT #: " + json.dumps({"nodes": plan}))
    outcome = run(chat)
    assert outcome.status == Status.OK
    assert outcome.scores["pass"] is False
    assert "'teleport' is not a tool" in outcome.output["execution"]["error"]


def test_execute_feedback_names_the_failing_step_and_its_error() -> None:
    bad = [
        {"id": 0, "name": "image crop left", "args": {"image": "photo.png"}},
        {"id": 1, "name": "image captioning", "args": {"image": "<node-0>.text"}},
    ]
    chat = Script("# RESULT #: " + json.dumps({"nodes": bad}), JSON_PLAN)
    outcome = run(chat, feedback=("parse", "execute"))
    message = chat.last_user()
    assert message.startswith("Execution failed: step 1 (image captioning)")
    assert "'text' of step 0, whose outputs are ['image']" in message
    assert outcome.output["feedback"] == ["execute"]
    assert outcome.scores["pass"] is True


def test_max_rounds_bounds_the_conversation() -> None:
    chat = Script(*["not a plan"] * 3)
    outcome = run(chat, feedback=("parse",), max_rounds=3)
    assert outcome.model_calls == 3
    assert outcome.output["ended"] == "max_rounds"


def test_a_model_error_propagates() -> None:
    def broken(messages: Any, **kwargs: Any) -> ModelReply:
        raise EvaluationError("the endpoint answered 500")

    with pytest.raises(EvaluationError, match="500"):
        PROTOCOL.run_item(ITEM, settings=EvalSettings(), chat=broken, tools=ToolLayer())


def test_bad_settings_name_the_setting() -> None:
    with pytest.raises(SettingsError, match="strategy must be one of"):
        run(Script(), strategy="greedy")
    with pytest.raises(SettingsError, match="feedback must be among"):
        run(Script(), feedback=("self",))


# --------------------------------------------------------------------------- execution


def test_a_plan_with_an_unavailable_tool_is_not_executable_and_counted() -> None:
    plans = [JSON_PLAN, JSON_PLAN]
    done = run(Script(plans[0]))
    missing = run(Script(plans[1]), layer=ToolLayer())  # no captioning provider here
    assert missing.status == Status.NOT_EXECUTABLE
    assert missing.scores["pass"] is None and missing.scores["pass_rate"] is None
    assert done.scores["pass_rate"] == 100.0
    assert missing.output["execution"]["unavailable"] == ["image captioning"]
    assert "tool_f1" in missing.scores  # its plan is scored all the same
    summary = PROTOCOL.summarize([done, missing])
    assert summary["n_not_executable"] == 1
    assert summary["n_executed"] == 1 and summary["pass_rate"] == 100.0


def test_model_tools_run_through_a_scripted_chat() -> None:
    tool_chat = Script("A red square on white.")
    chat = Script(JSON_PLAN)
    outcome = run(chat, layer=ToolLayer(), extra={"tool_chat": tool_chat})
    assert outcome.scores["pass"] is True
    step = outcome.output["execution"]["steps"][1]
    assert step["outputs"] == {"text": "A red square on white."}
    content = tool_chat.sent[0][0]["content"]
    assert content[0]["text"] == "Describe the image in one sentence."
    assert content[1]["image_url"]["url"].startswith("sha256:")


def test_provider_calls_are_recorded_and_replayed() -> None:
    records = MemoryRecords()
    captions = Captions()
    first = run(Script(JSON_PLAN), layer=ToolLayer([captions], records=records))
    assert len(captions.calls) == 1 and len(records.records) == 1
    # The captioner got the cropped image's bytes, named by hash in the arguments.
    arguments, files = captions.calls[0]
    digest = arguments["image"].removeprefix("sha256:")
    assert Image.open(io.BytesIO(files[digest])).size == (20, 19)
    again = run(Script(JSON_PLAN), layer=ToolLayer(records=records, replay=True))
    assert again.output["execution"] == first.output["execution"]
    with pytest.raises(ReplayMiss, match="image captioning"):
        run(Script(JSON_PLAN), layer=ToolLayer(records=MemoryRecords(), replay=True))


# --------------------------------------------------------------------------- scores and files


def _outcomes() -> list[Outcome]:
    wrong = [{"id": 0, "name": "image captioning", "args": {"image": "photo.png"}}]
    items = [EvalItem(str(n), ITEM.record, ITEM.images) for n in (7, 8, 9)]
    return [
        run(Script(JSON_PLAN), item=items[0]),
        run(Script("# RESULT #: " + json.dumps({"nodes": wrong})), item=items[1]),
        run(Script("nothing"), item=items[2]),
    ]


def test_summary_equals_the_plan_scorer_on_the_same_predictions() -> None:
    outcomes = _outcomes()
    summary = PROTOCOL.summarize(outcomes)
    expected = score_plans(
        {o.item: GOLD for o in outcomes},
        {o.item: o.output["prediction"] for o in outcomes},
        outcomes[0].output["tool_names"],
        plan_format="json",
    )
    assert summary["tool_f1"] == expected["tool_macro_f1"]
    assert summary["argname_f1"] == expected["argname_f1"]
    assert summary["edge_f1"] == expected["edge_f1"]
    assert summary["normalized_edit_distance"] == expected["tool_normalized_edit_distance"]
    assert summary["plan_accuracy"] == expected["plan_tool_accuracy"]
    assert summary["n_passed"] == 2 and summary["n_executed"] == 3
    assert summary["pass_rate"] == round(100 * 2 / 3, 2)
    assert {c.key for c in PROTOCOL.columns} <= set(summary)


def test_write_outputs_is_read_back_by_the_format_and_the_scorer(tmp_path: Any) -> None:
    outcomes = _outcomes()
    paths = PROTOCOL.write_outputs(outcomes, str(tmp_path), model="org/planner-7b")
    assert [p.rsplit("/", 1)[-1] for p in paths] == ["org_planner-7b.jsonl"]
    predictions = read_predictions(paths[0])
    assert list(predictions) == [7, 8, 9]  # m&m's ids are numbers
    assert predictions == {int(o.item): o.output["prediction"] for o in outcomes}
    records = list(mms_format.read(paths[0]))
    assert [(r.item_id, r.form) for r in records] == [("7", "json"), ("8", "json"), ("9", "json")]
    assert records[0].steps == GOLD and records[0].model_name == "org_planner-7b"
    # Scored from the file, the figures are the summary's.
    rescored = score_plans(
        {n: GOLD for n in predictions}, predictions, outcomes[0].output["tool_names"]
    )
    summary = PROTOCOL.summarize(outcomes)
    assert rescored["tool_macro_f1"] == summary["tool_f1"]
    # The plan scoring page's upload reads the same file.
    uploaded = parse_predictions(Path(paths[0]).read_bytes())
    assert uploaded == {o.item: o.output["prediction"] for o in outcomes}
    assert rescored["argname_f1"] == summary["argname_f1"]


def test_the_kind_names_this_protocol() -> None:
    assert KIND.evaluation is not None
    assert resolve(KIND.evaluation) is PROTOCOL


# --------------------------------------------------------------------------- more of each


def test_step_by_step_verify_feedback_names_the_step_and_keeps_it_out_of_the_plan() -> None:
    chat = Script(
        'ACTION 0: {"id": 0, "name": "image crop left", "args": {"image": "photo.png"}}',
        'ACTION 1: {"id": 1, "name": "image captioning", "args": {"image": "<node-0>.text"}}',
        'ACTION 1: {"id": 1, "name": "image captioning", "args": {"image": "<node-0>.image"}}',
        "TERMINATE",
    )
    outcome = run(chat, strategy="step-by-step", feedback=("parse", "verify"))
    feedback = str(chat.sent[2][-1]["content"])
    assert feedback.startswith("OBSERVATION: Verification failed:")
    assert "image crop left has no output 'text'" in feedback
    accepted = str(chat.sent[1][-1]["content"])
    assert accepted.startswith("OBSERVATION: Verification succeeded.")
    assert outcome.output["prediction"] == GOLD
    assert outcome.output["feedback"] == ["verify"]


def test_public_api_tools_run_through_a_configured_provider() -> None:
    class Facts:
        def __init__(self) -> None:
            self.asked: list[dict[str, Any]] = []

        def tools(self) -> Iterable[str]:
            return ["get year fact"]

        def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
            self.asked.append(dict(arguments))
            return ToolResult(output={"text": "1969 is the year of the Moon landing."})

    facts = Facts()
    plan = [
        {"id": 0, "name": "get year fact", "args": {"year": 1969}},
        {"id": 1, "name": "text summarization", "args": {"text": "<node-0>.text"}},
    ]
    tool_chat = Script("Moon landing.")
    outcome = run(
        Script("# RESULT #: " + json.dumps({"nodes": plan})),
        layer=ToolLayer([facts]),
        extra={"tool_chat": tool_chat},
    )
    assert facts.asked == [{"year": 1969}]
    assert "1969 is the year of the Moon landing." in tool_chat.sent[0][0]["content"][0]["text"]
    assert outcome.scores["pass"] is True


def test_examples_are_shown_in_the_plan_format() -> None:
    example = EvalItem("3", {"user_request": "Caption a.jpg", "plan_str": repr(GOLD[1:])})
    chat = Script(CODE_PLAN)
    run(chat, plan_format="code", examples=(example,))
    prompt = chat.sent[0][0]["content"]
    assert "# USER REQUEST #: Caption a.jpg" in prompt
    assert "output1 = image_captioning(image=output0['image'])" in prompt


REPLY = st.one_of(
    st.text(max_size=60),
    st.sampled_from(
        [
            JSON_PLAN,
            CODE_PLAN,
            "TERMINATE",
            '{"nodes": [{"id": 0, "name": "image crop", "args": {"image": "photo.png", '
            '"object": {"bbox": [1e300, -5, "x", 2]}}}]}',
            'ACTION 0: {"id": 0, "name": "tag", "args": {"image": "photo.png", "objects": 5}}',
            "ACTION 0: ```python\noutput0 = count(objects=[1, 2], extra=output9['x'])\n```",
            '{"nodes": [{"id": "a", "name": 3}]}',
            "```python\ndef solve(:\n```",
        ]
    ),
)


@settings(max_examples=40, deadline=None)
@given(
    replies=st.lists(REPLY, min_size=1, max_size=4),
    strategy=st.sampled_from(["multi-step", "step-by-step"]),
    plan_format=st.sampled_from(["json", "code"]),
)
def test_no_model_answer_crashes_the_planner(
    replies: list[str], strategy: str, plan_format: str
) -> None:
    answers = replies + ["TERMINATE"] * 5
    outcome = run(
        Script(*answers),
        strategy=strategy,
        plan_format=plan_format,
        feedback=("parse", "verify", "execute"),
        max_rounds=5,
    )
    assert outcome.status in (Status.OK, Status.NOT_EXECUTABLE)
    assert outcome.scores["pass"] in (True, False, None)
    json.dumps(outcome.output)  # the output is plain JSON


def test_best_match_scores_against_the_closest_alternative() -> None:
    alternative = [{"id": 0, "name": "image captioning", "args": {"image": "photo.png"}}]
    truth = {**TRUTH, "alt_plans_str": repr([alternative])}
    answer = "# RESULT #: " + json.dumps({"nodes": alternative})
    plain = PROTOCOL.run_item(
        ITEM,
        settings=EvalSettings(),
        chat=Script(answer),
        tools=ToolLayer([Captions()]),
        truth=truth,
    )
    best = PROTOCOL.run_item(
        ITEM,
        settings=EvalSettings(extra={"best_match": True}),
        chat=Script(answer),
        tools=ToolLayer([Captions()]),
        truth=truth,
    )
    assert plain.scores["plan_accuracy"] == 0.0
    assert best.scores["plan_accuracy"] == 100.0
    assert PROTOCOL.summarize([best])["plan_accuracy"] == 100.0


def test_items_whose_run_failed_are_counted_and_left_out_of_the_figures() -> None:
    done = run(Script(JSON_PLAN))
    failed = Outcome(item="8", status=Status.ERROR, error="replay: no record of ...")
    summary = PROTOCOL.summarize([done, failed])
    assert summary["n_items"] == 2 and summary["n_error"] == 1
    assert summary["n_scored"] == 1 and summary["plan_accuracy"] == 100.0


def test_markdown_escaped_underscores_are_read_as_plain_ones() -> None:
    escaped = CODE_PLAN.replace("image_crop_left", "image\\_crop\\_left")
    outcome = run(Script(escaped), plan_format="code")
    assert [s["name"] for s in outcome.output["steps"]] == ["image crop left", "image captioning"]
    assert "\\_" not in outcome.output["prediction"]
