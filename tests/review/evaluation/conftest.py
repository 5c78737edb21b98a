"""Fixtures of the evaluation tests: the test protocol installed on the ATP-Bench kind, a
project with verified items and a scripted model that looks each query up once."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmark.models import ItemStatus, Project
from tests import evaluation_protocol
from tests.factories import ItemFactory
from tests.llm_server import FakeModelServer, point_at

WORDS = [("apple", "a fruit"), ("pear", "unknown"), ("kiwi", "a bird")]


def lookup_then_answer(body: dict[str, Any]) -> Any:
    """The scripted model: look the query up, then answer with what the tool said."""
    query = body["messages"][0]["content"][0]["text"]
    last = body["messages"][-1]
    if last["role"] == "tool" and query != "loop":  # "loop" never answers
        return json.loads(last["content"])["meaning"]
    return {"content": None, "tool_calls": [{"name": "lookup", "arguments": {"q": query}}]}


@pytest.fixture
def protocol(monkeypatch: Any, settings: Any) -> Any:
    evaluation_protocol.install(monkeypatch, "atp")
    settings.EVALUATION_TOOL_PROVIDERS = ["tests.evaluation_protocol.lookup_provider"]
    provider = evaluation_protocol.LOOKUP_PROVIDER
    monkeypatch.setattr(provider, "answers", {"apple": "a fruit", "kiwi": "a fruit"})
    monkeypatch.setattr(provider, "calls", 0)
    return evaluation_protocol.PROTOCOL


@pytest.fixture
def eval_server(model_server: FakeModelServer) -> FakeModelServer:
    model_server.respond = lookup_then_answer
    return model_server


@pytest.fixture
def eval_project(project: Project, eval_server: FakeModelServer, protocol: Any) -> Project:
    """Three verified items whose expected answers the scripted model gets right, right and
    wrong (kiwi is a bird; the tool says a fruit)."""
    for word, answer in WORDS:
        ItemFactory(
            project=project,
            external_id=word,
            query=word,
            status=ItemStatus.VERIFIED,
            raw=json.dumps({"id": word, "query": word, "answer": answer}),
        )
    return point_at(project, eval_server)
