"""Shared fixtures: an isolated media folder, a project with a user in every role, a
logged-in client per role, and the fake model server (tests/llm_server.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from benchmark.models import Project, Role
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.llm_server import FakeModelServer, point_at

ROLES = ["admin", "reviewer", "annotator", "outsider", "anonymous"]


@pytest.fixture(autouse=True)
def _isolated_media(settings: Any, tmp_path: Path) -> None:
    """Files written by a test (images, uploads) go to its own temporary folder."""
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    """Each test starts with an empty cache (ids are reused after a rolled-back test, so a
    cached figure could otherwise outlive its rows)."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    """Hashing test passwords with the production hasher would make every user take ~0.5s."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _no_login_throttling(settings: Any) -> None:
    """Login throttling (django-axes) is off unless a test turns it on: its tests are in
    tests/benchmark/test_security_login.py."""
    settings.AXES_ENABLED = False


@pytest.fixture(autouse=True)
def _no_model_from_environment(settings: Any) -> None:
    """Tests decide the model themselves, whatever the developer's environment says."""
    settings.BENCHWRIGHT_MODEL_BASE_URL = ""
    settings.BENCHWRIGHT_MODEL_NAME = ""
    settings.BENCHWRIGHT_MODEL_API_KEY = ""
    # Rendering providers (review.answer_rendering): none unless a test configures one.
    settings.BENCHWRIGHT_IMAGE_GEN_BASE_URL = ""
    settings.BENCHWRIGHT_IMAGE_EDIT_BASE_URL = ""
    settings.BENCHWRIGHT_IMAGE_SEARCH_URL = ""


@pytest.fixture
def project(db: None) -> Project:
    return ProjectFactory(name="ATP sample")


@pytest.fixture
def other_project(db: None) -> Project:
    return ProjectFactory(name="Someone else's project")


@pytest.fixture
def users(project: Project, other_project: Project) -> dict[str, Any]:
    """One user per role in ``project``; ``outsider`` is an admin of ``other_project`` only;
    ``anonymous`` is None."""
    out: dict[str, Any] = {}
    for role in (Role.ADMIN, Role.REVIEWER, Role.ANNOTATOR):
        user = UserFactory(username=f"{role}-user")
        MembershipFactory(project=project, user=user, role=role)
        out[str(role)] = user
    outsider = UserFactory(username="outsider-user")
    MembershipFactory(project=other_project, user=outsider, role=Role.ADMIN)
    out["outsider"] = outsider
    out["anonymous"] = None
    return out


@pytest.fixture
def client_for() -> Callable[[Any], Client]:
    """A new client logged in as the user (or anonymous for None)."""

    def make(user: Any) -> Client:
        client = Client()
        if user is not None:
            client.force_login(user)
        return client

    return make


@pytest.fixture
def clients(users: dict[str, Any], client_for: Callable[[Any], Client]) -> dict[str, Client]:
    """A logged-in client per role name in ROLES."""
    return {role: client_for(users[role]) for role in ROLES}


# --------------------------------------------------------------------------- the fake model


@pytest.fixture
def model_server() -> Iterator[FakeModelServer]:
    """A local server speaking the OpenAI protocol (tests/llm_server.py), stopped afterwards."""
    server = FakeModelServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def model_project(project: Project, model_server: FakeModelServer) -> Project:
    """``project`` with the fake server as its model."""
    return point_at(project, model_server)
