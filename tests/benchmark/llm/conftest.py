"""Fixtures for model-call tests: a real OpenAI-compatible HTTP server on 127.0.0.1 and a
project whose settings point at it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from benchmark.models import Project
from tests.benchmark.llm.fake_server import FakeModelServer

MODEL = "fake-vl-7b"


@pytest.fixture
def model_server() -> Iterator[FakeModelServer]:
    server = FakeModelServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def _no_model_from_environment(settings: Any) -> None:
    """Tests decide the model themselves, whatever the developer's environment says."""
    settings.BENCHWRIGHT_MODEL_BASE_URL = ""
    settings.BENCHWRIGHT_MODEL_NAME = ""
    settings.BENCHWRIGHT_MODEL_API_KEY = ""


def point_at(project: Project, server: FakeModelServer, **extra: Any) -> Project:
    """Give the project its own model: the fake server, fast backoff."""
    project.settings = {
        **(project.settings or {}),
        "model": {"base_url": server.url, "model": MODEL, "backoff_base": 0.01, **extra},
    }
    project.save(update_fields=["settings"])
    return project


@pytest.fixture
def model_project(project: Project, model_server: FakeModelServer) -> Project:
    return point_at(project, model_server)
