"""m&m's detection, segmentation, speech and public-API tools through the HTTP provider
(``MmsToolProvider``) against the recorded tool server: their outputs feed the next steps as
in m&m's (detected objects into select object, crop, tag, count; masks into colour pop; the
location into the weather), every call recorded and replayed, a miss naming the call, and no
provider meaning "not executable here"."""

from __future__ import annotations

import base64
import hashlib
import io
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image

from benchmark.evaluation.base import EvalItem, MemoryRecords, ReplayMiss, ToolLayer
from benchmark.evaluation.mms import builtin_toolset
from benchmark.evaluation.mms_provided import MmsToolError, MmsToolProvider, function_name
from benchmark.evaluation.mms_tools import PROVIDED_TOOLS, Blob, Executor
from benchmark.pacing import RateGate
from benchmark.plans.parse import parse_json_plan
from tests.mms_tool_server import RecordedTools

RED, BLUE, WHITE = (220, 20, 20), (20, 20, 220), (255, 255, 255)
AUDIO = b"RIFF....WAVEfmt fake speech"
DOG = {"bbox": [24.0, 4.0, 36.0, 16.0], "label": "dog"}
CUP = {"bbox": [2.0, 2.0, 12.0, 14.0], "label": "cup"}


def picture() -> bytes:
    """40x20: left half red, right half blue."""
    image = Image.new("RGB", (40, 20), RED)
    image.paste(BLUE, (20, 0, 40, 20))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def ref(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def mask() -> list[list[int]]:
    """The right half's top-left 5x5 corner (x 20-24, y 0-4)."""
    return [[1 if 20 <= x < 25 and y < 5 else 0 for x in range(40)] for y in range(20)]


@pytest.fixture
def server() -> Iterator[RecordedTools]:
    tools = RecordedTools(api_key="mms-key").start()
    tools.add("object_detection", {"image": ref(picture())}, {"objects": [CUP, DOG]})
    tools.add(
        "image_segmentation",
        {"image": ref(picture())},
        {"objects": [{"bbox": [20, 0, 24, 4], "label": "sky", "mask": mask(), "inst_id": 1}]},
    )
    tools.add("automatic_speech_recognition", {"audio": ref(AUDIO)}, {"text": "Curiosity rover"})
    yield tools
    tools.stop()


def provider(server: RecordedTools, **kwargs: Any) -> MmsToolProvider:
    kwargs.setdefault("sleep", lambda seconds: None)
    kwargs.setdefault("gate", RateGate(clock=lambda: 0.0, sleep=lambda seconds: None))
    return MmsToolProvider(server.base_url, api_key="mms-key", timeout=5, **kwargs)


def executor(layer: ToolLayer) -> Executor:
    item = EvalItem("1", {"user_request": "..."}, {"in.png": picture(), "speech.wav": AUDIO})
    return Executor(item, layer, builtin_toolset())


def run(layer: ToolLayer, steps: list[dict[str, Any]]) -> tuple[Executor, Any]:
    ex = executor(layer)
    return ex, ex.run(parse_json_plan(steps).steps)


def image_of(ex: Executor, step: int) -> Image.Image:
    value = ex.outputs[step]["image"]
    assert isinstance(value, Blob)
    return Image.open(io.BytesIO(ex.files[value.digest])).convert("RGB")


DETECT_THEN_CROP = [
    {"id": 0, "name": "object detection", "args": {"image": "in.png"}},
    {
        "id": 1,
        "name": "select object",
        "args": {"objects": "<node-0>.objects", "object_name": "dog"},
    },
    {
        "id": 2,
        "name": "image crop",
        "args": {"image": "<node-0>.image", "object": "<node-1>.object"},
    },
    {"id": 3, "name": "count", "args": {"objects": "<node-0>.objects"}},
    {"id": 4, "name": "tag", "args": {"image": "in.png", "objects": "<node-0>.objects"}},
]


def test_detected_objects_feed_select_crop_count_and_tag(server: RecordedTools) -> None:
    records = MemoryRecords()
    ex, result = run(ToolLayer([provider(server)], records=records), DETECT_THEN_CROP)
    assert result.passed, result.error
    # The provider was sent the image's bytes under its hash, with the key.
    request = server.requests[0]
    assert request.tool == "object_detection"
    assert request.headers["Authorization"] == "Bearer mms-key"
    digest = request.arguments["image"].removeprefix("sha256:")
    assert base64.b64decode(request.body["files"][digest]) == picture()
    # m&m's detection passes its input image on, with the objects.
    assert ex.outputs[0]["image"] == Blob(hashlib.sha256(picture()).hexdigest())
    assert ex.outputs[1] == {"object": DOG}
    assert image_of(ex, 2).size == (12, 12)  # the dog's box
    assert {c for _, c in image_of(ex, 2).getcolors() or []} == {BLUE}
    assert ex.outputs[3] == {"number": 2}
    assert image_of(ex, 4).getpixel((2, 8)) == (0, 128, 0)  # the cup's green outline
    # One call recorded (the item, the tool, the arguments by hash).
    [record] = records.records.values()
    assert (record.item, record.name, record.output["objects"]) == (
        "1",
        "object detection",
        [CUP, DOG],
    )


def test_segmentation_masks_feed_colour_pop(server: RecordedTools) -> None:
    plan = [
        {"id": 0, "name": "image segmentation", "args": {"image": "in.png"}},
        {
            "id": 1,
            "name": "select object",
            "args": {"objects": "<node-0>.objects", "object_name": "sky"},
        },
        {"id": 2, "name": "color pop", "args": {"image": "in.png", "object": "<node-1>.object"}},
    ]
    ex, result = run(ToolLayer([provider(server)]), plan)
    assert result.passed, result.error
    popped = image_of(ex, 2)
    assert popped.getpixel((22, 2)) == BLUE  # inside the mask: in colour
    r, g, b = popped.getpixel((30, 15))  # outside: grey
    assert r == g == b


def test_speech_and_public_api_tools_chain(server: RecordedTools) -> None:
    plan = [
        {"id": 0, "name": "automatic speech recognition", "args": {"audio": "speech.wav"}},
        {"id": 1, "name": "wikipedia simple search", "args": {"text": "<node-0>.text"}},
        {"id": 2, "name": "get location", "args": {"city": "Seattle"}},
        {"id": 3, "name": "get weather", "args": {"lon": "<node-2>.lon", "lat": "<node-2>.lat"}},
        {"id": 4, "name": "count", "args": {"objects": "<node-3>.objects"}},
        {"id": 5, "name": "love calculator", "args": {"first_name": "Alice", "second_name": "Bob"}},
        {"id": 6, "name": "get math fact", "args": {"number": "<node-5>.number"}},
        {"id": 7, "name": "get trivia fact", "args": {"number": 87}},
        {"id": 8, "name": "get year fact", "args": {"year": 2012}},
        {"id": 9, "name": "get date fact", "args": {"date": "July 20"}},
        {
            "id": 10,
            "name": "search movie",
            "args": {"movie_title": "Inception", "movie_year": "2010"},
        },
    ]
    ex, result = run(ToolLayer([provider(server)]), plan)
    assert result.passed, result.error
    assert ex.outputs[1]["text"].startswith("Curiosity is a car-sized Mars rover")
    assert ex.outputs[4] == {"number": 3}
    assert ex.outputs[6]["text"] == "the sum of the squares of the first four primes"
    assert ex.outputs[10]["text"].startswith("Title: Inception")
    assert server.calls("get_weather") == [{"lon": "-122.330062", "lat": "47.6038321"}]
    assert {r.tool for r in server.requests} == {function_name(t) for t in PROVIDED_TOOLS} - {
        "object_detection",
        "image_segmentation",
    }


def test_replay_answers_from_the_record_and_a_miss_names_the_call(
    server: RecordedTools,
) -> None:
    records = MemoryRecords()
    _, first = run(ToolLayer([provider(server)], records=records), DETECT_THEN_CROP)
    asked = len(server.requests)
    server.stop()
    _, again = run(ToolLayer(records=records, replay=True), DETECT_THEN_CROP)
    assert again.to_dict() == first.to_dict() and again.passed
    assert len(server.requests) == asked
    plan = [{"id": 0, "name": "get location", "args": {"city": "Paris"}}]
    with pytest.raises(ReplayMiss, match=r'get location\(\{"city": "Paris"\}\) for item 1'):
        run(ToolLayer(records=records, replay=True), plan)


def test_without_a_provider_or_for_tools_it_does_not_offer_the_plan_is_not_executable(
    server: RecordedTools,
) -> None:
    _, result = run(ToolLayer(), DETECT_THEN_CROP)
    assert (result.status, result.unavailable) == ("not_executable", ["object detection"])
    only_apis = provider(server, offered=("get location", "get weather"))
    _, result = run(ToolLayer([only_apis]), DETECT_THEN_CROP)
    assert result.status == "not_executable" and server.requests == []
    with pytest.raises(ValueError, match="unknown tool 'image captioning'"):
        provider(server, offered=("image captioning",))


def test_the_services_error_is_the_tools_answer_and_recorded(server: RecordedTools) -> None:
    records = MemoryRecords()
    plan = [{"id": 0, "name": "get location", "args": {"city": "Atlantis"}}]
    _, result = run(ToolLayer([provider(server)], records=records), plan)
    assert result.status == "failed"
    assert "step 0 (get location): get location: the m&m's tool provider answered 404" in (
        result.error
    )
    assert "no recorded answer of get_location" in result.error
    assert [r.error for r in records.records.values()] == [result.error.split(": ", 1)[1]]


def test_a_wrong_shaped_answer_or_a_failing_service_fails_the_item_unrecorded(
    server: RecordedTools,
) -> None:
    server.add("object_detection", {"image": ref(AUDIO)}, {"objects": [{"label": "dog"}]})
    records = MemoryRecords()
    plan = [{"id": 0, "name": "object detection", "args": {"image": "other.png"}}]
    layer = ToolLayer([provider(server)], records=records)
    ex = Executor(EvalItem("1", {}, {"other.png": AUDIO}), layer, builtin_toolset())
    with pytest.raises(MmsToolError, match=r"object 0 needs a bbox \[x1, y1, x2, y2\]"):
        ex.run(parse_json_plan(plan).steps)
    server.failures.extend([503, 503])
    with pytest.raises(MmsToolError, match="answered 503.*gave up after 2 attempts"):
        run(ToolLayer([provider(server, max_retries=1)], records=records), DETECT_THEN_CROP)
    assert records.records == {}
    # A transient failure retried once, then answered.
    server.failures.append(502)
    _, result = run(ToolLayer([provider(server)]), DETECT_THEN_CROP)
    assert result.passed


def test_recorded_results_answer_a_plan_where_no_provider_is_configured(
    server: RecordedTools,
) -> None:
    """A release's (or an earlier run's) records run the plan here without a provider; a
    call they do not hold leaves it not executable, neither passed nor failed."""
    records = MemoryRecords()
    _, first = run(ToolLayer([provider(server)], records=records), DETECT_THEN_CROP)
    server.stop()
    ex, again = run(ToolLayer(records=records), DETECT_THEN_CROP)
    assert again.passed and again.to_dict() == first.to_dict()
    assert ex.tool_calls == 5  # the detection answered by the record, and four local steps
    other = [
        *DETECT_THEN_CROP[:2],
        {"id": 2, "name": "get location", "args": {"city": "Reykjavik"}},
    ]
    ex, result = run(ToolLayer(records=records), other)
    assert result.status == "not_executable"
    assert result.unavailable == ["object detection", "get location"]
    assert [s.name for s in result.steps] == ["object detection", "select object"]
    assert ex.tool_calls == 2  # the unanswered location is not a call made


def _step_by_step(layer: ToolLayer) -> Any:
    from benchmark.evaluation.base import EvalSettings
    from benchmark.evaluation.mms import PROTOCOL
    from tests.benchmark.evaluation.test_mms_planner import Script

    chat = Script(
        'THOUGHT 0: find the objects.\nACTION 0: {"id": 0, "name": "object detection", '
        '"args": {"image": "in.png"}}',
        'THOUGHT 1: count them.\nACTION 1: {"id": 1, "name": "count", '
        '"args": {"objects": "<node-0>.objects"}}',
        "TERMINATE",
    )
    item = EvalItem("1", {"user_request": "How many objects are in in.png?"}, {"in.png": picture()})
    settings = EvalSettings(strategy="step-by-step", feedback=("parse", "verify", "execute"))
    return PROTOCOL.run_item(item, settings=settings, chat=chat, tools=layer)


def test_step_by_step_runs_provided_tools_turn_by_turn_or_from_the_record(
    server: RecordedTools,
) -> None:
    records = MemoryRecords()
    live = _step_by_step(ToolLayer([provider(server)], records=records))
    assert live.scores["pass"] is True and live.tool_calls == 2
    assert live.output["execution"]["steps"][1]["outputs"] == {"number": 2}
    server.stop()
    recorded = _step_by_step(ToolLayer(records=records))
    assert recorded.scores["pass"] is True
    assert recorded.output["execution"]["steps"] == live.output["execution"]["steps"]
    nothing = _step_by_step(ToolLayer())
    assert nothing.scores["pass"] is None and nothing.status == "not_executable"
    assert nothing.error == "not executable here: object detection"


def test_a_task_file_not_stored_here_makes_the_plan_not_executable(
    server: RecordedTools,
) -> None:
    """m&m's audio inputs (and images imported without their files) are not stored with the
    item: a plan on the file its request names cannot run here; a file name the request
    does not mention is the plan's error."""
    item = EvalItem("36", {"user_request": "Summarize the audio file '1995-1826-0002.flac'."})
    layer = ToolLayer([provider(server)])
    plan = [
        {"id": 0, "name": "automatic speech recognition", "args": {"audio": "1995-1826-0002.flac"}}
    ]
    result = Executor(item, layer, builtin_toolset()).run(parse_json_plan(plan).steps)
    assert result.status == "not_executable"
    assert result.unavailable == ["automatic speech recognition"]
    assert result.error == "the task's file '1995-1826-0002.flac' is not stored here"
    plan[0]["args"]["audio"] = "other.flac"
    result = Executor(item, layer, builtin_toolset()).run(parse_json_plan(plan).steps)
    assert result.status == "failed" and "must be an audio" in result.error
    assert server.requests == []
