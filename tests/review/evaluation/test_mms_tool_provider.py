"""m&m's evaluation runs with the project's m&m's tool provider (``evaluation.mms_tools``),
end to end against the scripted planner (tests/llm_server.py) and the recorded tool server
(tests/mms_tool_server.py): plans using detection and the public APIs execute and count in
the pass rate, every call is a ToolCallRecord of its item, a replay with the tool server
stopped gives the same results, and without the setting the same plans are "not executable
here". The provider's setting is checked like the retrieval provider's."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from PIL import Image as PILImage

from benchmark.builtin import toolsets_ensure
from benchmark.evaluation.mms_provided import MmsToolProvider
from benchmark.exceptions import ValidationFailed
from benchmark.models import ItemStatus, Project
from review.evaluation import providers, services
from review.evaluation.models import EvaluationResult, EvaluationRun, ToolCallRecord
from tests.factories import ImageFactory, ItemFactory, ProjectFactory
from tests.llm_server import FakeModelServer, point_at
from tests.mms_tool_server import RecordedTools

pytestmark = pytest.mark.django_db

DEFAULT_PROVIDERS = [
    "review.evaluation.providers.retrieval_provider",
    "review.evaluation.providers.mms_tool_provider",
]
DOG = {"bbox": [24.0, 4.0, 36.0, 16.0], "label": "dog"}
CUP = {"bbox": [2.0, 2.0, 12.0, 14.0], "label": "cup"}

#: (external id, request, plan): the planner answers each request with its gold plan.
TASKS = [
    (
        "9007",
        "In photo kitchen.png there is a dog somewhere. Crop the picture to the dog.",
        [
            {"id": 0, "name": "object detection", "args": {"image": "kitchen.png"}},
            {
                "id": 1,
                "name": "select object",
                "args": {"objects": "<node-0>.objects", "object_name": "dog"},
            },
            {
                "id": 2,
                "name": "image crop",
                "args": {"image": "kitchen.png", "object": "<node-1>.object"},
            },
        ],
    ),
    (
        "9004",
        "I'm flying to Seattle tomorrow. Where is it, and what will the weather be like?",
        [
            {"id": 0, "name": "get location", "args": {"city": "Seattle"}},
            {
                "id": 1,
                "name": "get weather",
                "args": {"lon": "<node-0>.lon", "lat": "<node-0>.lat"},
            },
        ],
    ),
    (
        "9009",
        "How compatible are Alice and Bob by a love calculator? Then a math fact about it.",
        [
            {
                "id": 0,
                "name": "love calculator",
                "args": {"first_name": "Alice", "second_name": "Bob"},
            },
            {"id": 1, "name": "get math fact", "args": {"number": "<node-0>.number"}},
        ],
    ),
]


def picture() -> bytes:
    image = PILImage.new("RGB", (40, 20), (220, 20, 20))
    image.paste((20, 20, 220), (20, 0, 40, 20))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def planner(body: dict[str, Any]) -> str:
    """The scripted model under test: the gold plan of the request it is asked about."""
    asked = json.dumps(body["messages"][0])
    for _, request, plan in TASKS:
        if request.replace("'", "\\u0027") in asked or request in asked:
            return "# RESULT #: " + json.dumps({"nodes": plan})
    return "TERMINATE"


@pytest.fixture
def tools_server() -> Iterator[RecordedTools]:
    import hashlib

    server = RecordedTools(api_key="sk-mms").start()
    digest = hashlib.sha256(picture()).hexdigest()
    server.add("object_detection", {"image": f"sha256:{digest}"}, {"objects": [CUP, DOG]})
    yield server
    server.stop()


@pytest.fixture
def mms_project(
    settings: Any, monkeypatch: Any, model_server: FakeModelServer, tools_server: RecordedTools
) -> Project:
    settings.EVALUATION_TOOL_PROVIDERS = DEFAULT_PROVIDERS
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
    image = ImageFactory(data=picture(), projects=[project])
    for external_id, request, plan in TASKS:
        refs = []
        if "kitchen.png" in request:
            refs = [{"sha256": image.sha256, "role": "input", "path": "kitchen.png", "position": 0}]
        ItemFactory(
            project=project,
            external_id=external_id,
            query=request,
            status=ItemStatus.VERIFIED,
            image_refs=refs,
            raw=json.dumps(
                {"id": int(external_id), "user_request": request, "plan_str": repr(plan)}
            ),
        )
    return point_at(project, model_server)


def _run(project: Project, **kwargs: Any) -> EvaluationRun:
    run, jobs = services.evaluation_run_create(project=project, user=None, **kwargs)
    return services.evaluation_run_execute(run=run, jobs=jobs)


def _results(run: EvaluationRun) -> dict[str, tuple[str, Any, Any]]:
    return {
        r.item.external_id: (r.status, r.scores.get("pass"), r.output["execution"])
        for r in EvaluationResult.objects.filter(run=run).select_related("item")
    }


def test_plans_with_provided_tools_execute_are_recorded_and_replay(
    mms_project: Project, tools_server: RecordedTools, model_server: FakeModelServer
) -> None:
    run = _run(mms_project, workers=2)
    results = _results(run)
    assert {key: (status, passed) for key, (status, passed, _) in results.items()} == {
        "9007": ("ok", True),
        "9004": ("ok", True),
        "9009": ("ok", True),
    }
    assert run.summary["pass_rate"] == 100.0
    assert (run.summary["n_executed"], run.summary["n_not_executable"]) == (3, 0)
    assert run.summary["plan_accuracy"] == 100.0
    # Detection's objects fed select object and the crop, as in m&m's.
    steps = results["9007"][2]["steps"]
    assert steps[1]["outputs"] == {"object": DOG}
    assert steps[2]["outputs"]["image"].startswith("sha256:")
    weather = results["9004"][2]["steps"][1]["outputs"]["objects"]
    assert [w["weather"] for w in weather] == ["lightrainday", "cloudyday", "clearnight"]
    # Five calls reached the provider, with the key; each is a record of its item.
    assert sorted(r.tool for r in tools_server.requests) == [
        "get_location",
        "get_math_fact",
        "get_weather",
        "love_calculator",
        "object_detection",
    ]
    assert {r.headers["Authorization"] for r in tools_server.requests} == {"Bearer sk-mms"}
    records = ToolCallRecord.objects.filter(project=mms_project).select_related("item")
    assert sorted((r.item.external_id, r.name) for r in records) == [
        ("9004", "get location"),
        ("9004", "get weather"),
        ("9007", "object detection"),
        ("9009", "get math fact"),
        ("9009", "love calculator"),
    ]
    # Replay: the tool server stopped, every call answered from the record, same results.
    tools_server.stop()
    asked = model_server.count
    again = _run(mms_project, workers=2, replay=True)
    assert _results(again) == results
    assert again.summary["pass_rate"] == 100.0
    assert model_server.count == asked
    # `evaluate --replay` with a record missing fails that item, naming the call.
    ToolCallRecord.objects.filter(project=mms_project, name="get weather").delete()
    with pytest.raises(
        CommandError,
        match=r"replay: 1 item\(s\) failed; 9004: replay: no record of get weather\("
        r'\{"lat": "47.6038321", "lon": "-122.330062"\}\) for item 9004',
    ):
        call_command("evaluate", "--project", mms_project.name, "--replay", stdout=StringIO())


def test_without_the_provider_the_same_plans_are_not_executable_here(
    mms_project: Project, tools_server: RecordedTools
) -> None:
    mms_project.settings = {k: v for k, v in mms_project.settings.items() if k != "evaluation"}
    mms_project.save(update_fields=["settings"])
    run = _run(mms_project)
    results = _results(run)
    assert {key: (status, passed) for key, (status, passed, _) in results.items()} == {
        "9007": ("not_executable", None),
        "9004": ("not_executable", None),
        "9009": ("not_executable", None),
    }
    assert results["9007"][2]["unavailable"] == ["object detection"]
    assert run.summary["pass_rate"] is None and run.summary["n_not_executable"] == 3
    assert run.summary["plan_accuracy"] == 100.0  # scored on the plan all the same
    assert tools_server.requests == []
    # A provider for the public APIs only: those plans run, detection's does not.
    mms_project.settings["evaluation"] = {
        "mms_tools": {
            "base_url": tools_server.base_url,
            "api_key_env": "MMS_TOOLS_KEY",
            "tools": ["get location", "get weather", "love calculator", "get math fact"],
        }
    }
    mms_project.save(update_fields=["settings"])
    run = _run(mms_project)
    assert {key: status for key, (status, _, _) in _results(run).items()} == {
        "9007": "not_executable",
        "9004": "ok",
        "9009": "ok",
    }
    assert run.summary["pass_rate"] == 100.0 and run.summary["n_not_executable"] == 1


def _project(setting: Any) -> Project:
    return ProjectFactory(settings={"evaluation": {"mms_tools": setting}})


def test_the_provider_setting_is_checked_and_names_itself(settings: Any, monkeypatch: Any) -> None:
    assert providers.mms_tool_provider(ProjectFactory()) is None
    settings.MODEL_API_KEY_ENV_ALLOWLIST = ["MMS_TOOLS_KEY=https://tools.example.org/v1"]
    monkeypatch.setenv("MMS_TOOLS_KEY", "sk-tools")
    made = providers.mms_tool_provider(
        _project(
            {
                "base_url": "https://tools.example.org/v1",
                "api_key_env": "MMS_TOOLS_KEY",
                "rpm": 30,
                "tools": ["get weather"],
            }
        )
    )
    assert isinstance(made, MmsToolProvider)
    assert (made.api_key, made.rpm, made.offered) == ("sk-tools", 30, ("get weather",))
    assert len(MmsToolProvider("https://tools.example.org/v1").offered) == 12
    wrong = [
        ({"base_url": "ftp://x"}, '"evaluation.mms_tools" needs an http'),
        (
            {"base_url": "https://evil.example.com", "api_key_env": "MMS_TOOLS_KEY"},
            "the key of another endpoint",
        ),
        (
            {"base_url": "https://tools.example.org/v1", "tools": ["image captioning"]},
            "'image captioning' is not one of its tools",
        ),
        ({"base_url": "https://tools.example.org/v1", "tools": "get weather"}, "must be a list"),
        ({"base_url": "https://tools.example.org/v1", "concurrency": 0}, "concurrency must be"),
    ]
    for setting, message in wrong:
        with pytest.raises(ValidationFailed, match=message):
            providers.mms_tool_provider(_project(setting))


PROVIDERS_PROBE = """
import django
django.setup()
import json, sys
from benchmark.models import Project
from review.evaluation.services import tool_providers
tool_providers(Project(name="p", settings={setting!r}))
print(json.dumps("benchmark.evaluation.mms_tools" in sys.modules))
"""


def _loads_mms_tools(setting: dict[str, Any]) -> bool:
    import os
    import subprocess
    import sys
    from pathlib import Path

    result = subprocess.run(
        [sys.executable, "-c", PROVIDERS_PROBE.format(setting=setting)],
        cwd=Path(__file__).resolve().parents[3],
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "benchmark.settings",
            "EVALUATION_TOOL_PROVIDERS": ",".join(DEFAULT_PROVIDERS),
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return bool(json.loads(result.stdout.strip().splitlines()[-1]))


def test_a_project_without_the_setting_does_not_load_the_mms_tools() -> None:
    """Every run asks each listed factory for its provider: a project with no m&m's tool
    provider (an ATP-Bench run) does not load the m&m's tools (and Pillow) to be told none;
    one with the setting does."""
    assert _loads_mms_tools({}) is False
    assert _loads_mms_tools({"evaluation": {"mms_tools": {"base_url": "http://t/v1"}}}) is True
