"""An m&m's evaluation run of a plan whose first step is speech recognition on the item's own
audio file: the run sends the stored audio's bytes to the m&m's tool provider (as it does an
image) and the plan executes; without the file stored the same plan is "not executable here".
Against the scripted planner (tests/llm_server.py) and the recorded tool server
(tests/mms_tool_server.py)."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from benchmark.builtin import toolsets_ensure
from benchmark.models import ItemStatus, Project
from review.evaluation import services
from review.evaluation.models import EvaluationResult, EvaluationRun, ToolCallRecord
from tests.factories import AudioFileFactory, ItemFactory, ProjectFactory, flac_bytes
from tests.llm_server import FakeModelServer, point_at
from tests.mms_tool_server import RecordedTools

pytestmark = pytest.mark.django_db

SPEECH = "1284-1180-0003.flac"
REQUEST = f"What is said in the audio file '{SPEECH}'? Then tell me about Curiosity on Wikipedia."
PLAN = [
    {"id": 0, "name": "automatic speech recognition", "args": {"audio": SPEECH}},
    {"id": 1, "name": "wikipedia simple search", "args": {"text": "<node-0>.text"}},
]
AUDIO = flac_bytes(42)


def planner(body: dict[str, Any]) -> str:
    if SPEECH in json.dumps(body["messages"][0]):
        return "# RESULT #: " + json.dumps({"nodes": PLAN})
    return "TERMINATE"


@pytest.fixture
def tools_server() -> Iterator[RecordedTools]:
    server = RecordedTools(api_key="sk-mms").start()
    digest = hashlib.sha256(AUDIO).hexdigest()
    server.add("automatic_speech_recognition", {"audio": f"sha256:{digest}"}, {"text": "Curiosity"})
    server.add("wikipedia_simple_search", {"text": "Curiosity"}, {"text": "Curiosity is a rover."})
    yield server
    server.stop()


@pytest.fixture
def audio_project(
    settings: Any, monkeypatch: Any, model_server: FakeModelServer, tools_server: RecordedTools
) -> Project:
    settings.EVALUATION_TOOL_PROVIDERS = ["review.evaluation.providers.mms_tool_provider"]
    settings.MODEL_API_KEY_ENV_ALLOWLIST = [f"MMS_TOOLS_KEY={tools_server.base_url}"]
    monkeypatch.setenv("MMS_TOOLS_KEY", "sk-mms")
    model_server.respond = planner
    project = ProjectFactory(
        kind="plan",
        data_format="mms",
        tag_syntax="",
        toolset=toolsets_ensure()["mms"],
        settings={
            "evaluation": {
                "mms_tools": {"base_url": tools_server.base_url, "api_key_env": "MMS_TOOLS_KEY"}
            }
        },
    )
    audio = AudioFileFactory(data=AUDIO, projects=[project])
    ItemFactory(
        project=project,
        external_id="36",
        query=REQUEST,
        status=ItemStatus.VERIFIED,
        audio_refs=[{"sha256": audio.sha256, "path": SPEECH}],
        raw=json.dumps({"id": 36, "user_request": REQUEST, "plan_str": repr(PLAN)}),
    )
    return point_at(project, model_server)


def _run(project: Project) -> EvaluationRun:
    run, jobs = services.evaluation_run_create(project=project, user=None)
    return services.evaluation_run_execute(run=run, jobs=jobs)


def test_speech_recognition_on_the_items_audio_sends_its_bytes_and_executes(
    audio_project: Project, tools_server: RecordedTools
) -> None:
    run = _run(audio_project)
    result = EvaluationResult.objects.get(run=run)
    assert (result.status, result.scores["pass"]) == ("ok", True), result.output["execution"]
    steps = result.output["execution"]["steps"]
    assert steps[0]["outputs"] == {"text": "Curiosity"}
    assert run.summary["pass_rate"] == 100.0 and run.summary["n_not_executable"] == 0
    # The provider got the audio itself (its bytes, under the hash the argument names).
    asr = next(r for r in tools_server.requests if r.tool == "automatic_speech_recognition")
    digest = hashlib.sha256(AUDIO).hexdigest()
    assert asr.arguments == {"audio": f"sha256:{digest}"}
    assert {k: base64.b64decode(v) for k, v in asr.body["files"].items()} == {digest: AUDIO}
    assert ToolCallRecord.objects.filter(
        project=audio_project, name="automatic speech recognition"
    ).exists()


def test_without_the_audio_stored_the_plan_is_not_executable_here(
    audio_project: Project, tools_server: RecordedTools
) -> None:
    audio_project.items.update(audio_refs=[{"sha256": "", "path": SPEECH}])
    run = _run(audio_project)
    result = EvaluationResult.objects.get(run=run)
    assert (result.status, result.scores["pass"]) == ("not_executable", None)
    assert run.summary["n_not_executable"] == 1
    assert tools_server.requests == []
