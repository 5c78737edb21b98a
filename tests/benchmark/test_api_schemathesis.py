"""The API under a fuzzer (issue 14): schemathesis generates requests from the OpenAPI schema
(/api/schema/) and runs every check it has (not a server error, status codes, content types,
response schemas, headers, negative data rejected, positive data accepted, unsupported
methods, ignored auth, ...) on each answer, in-process through the WSGI app, as a project
admin (basic auth) of a small populated project, with DEBUG off.

A short run (a few examples per operation) so the suite stays fast on SQLite; the longer run
is tests/perf/fuzz_api.py. No operation is skipped: the writes (new items, images, imports,
judgments) run in the test's transaction and are rolled back. One check is left out for the
few operations in CONTENT_CHECKED (see there why)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import positive_data_acceptance

from benchmark.models import Role
from tests.factories import (
    PASSWORD,
    ImageFactory,
    ItemFactory,
    JobFactory,
    JudgmentTaskFactory,
    MembershipFactory,
    PlanFactory,
    ProjectFactory,
    ResponseFactory,
    TrajectoryFactory,
    UserFactory,
)

BASIC = "Basic " + base64.b64encode(f"fuzz-admin:{PASSWORD}".encode()).decode()


def populate() -> None:
    """A project with a few of everything the API lists, its admin ``fuzz-admin``."""
    admin = UserFactory(username="fuzz-admin")
    project = ProjectFactory(name="fuzzed")
    MembershipFactory(project=project, user=admin, role=Role.ADMIN)
    ImageFactory(projects=[project])
    for _ in range(3):
        item = ItemFactory(project=project)
        ResponseFactory(item=item)
        PlanFactory(item=item)
        TrajectoryFactory(item=item)
    JobFactory(project=project, created_by=admin)
    JudgmentTaskFactory(project=project)


def load_schema() -> Any:
    """The schema /api/schema/ serves (drf-spectacular's generator, as the view runs it),
    sent to the WSGI app in-process."""
    from drf_spectacular.generators import SchemaGenerator

    loaded = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
    loaded.app = get_wsgi_application()
    return loaded


@pytest.fixture(autouse=True)
def _connection_kept() -> Iterator[None]:
    """The WSGI app is called directly, so each request's end would close the database
    connection, and with it the test's transaction (PostgreSQL; SQLite's in-memory database
    ignores the close). Django's own test client keeps it the same way."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture(autouse=True)
def _populated(db: None, settings: Any, tmp_path: Any) -> None:
    # As bin/serve runs: DEBUG off, hashed static names, and no collectstatic.
    settings.DEBUG = False
    settings.ALLOWED_HOSTS = ["*"]
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "benchmark.static_storage.ForgivingManifestStaticFilesStorage"},
    }
    populate()


schema = load_schema()

# Operations whose input can match the schema and still be bad, by what the schema cannot say:
# an upload's bytes (an image, a dataset file), a record in the project's own format, a
# judgment value that must fit the task's scheme, a judge key that must be one the task
# offers. A 400 naming the problem is the right answer there, so "schema-valid data is
# accepted" does not apply to them; every other check does.
CONTENT_CHECKED = {
    ("POST", "/api/projects/{id}/images/"),
    ("POST", "/api/projects/{id}/import/"),
    ("POST", "/api/projects/{id}/items/"),
    ("POST", "/api/judgment-tasks/{id}/judgments/"),
    ("GET", "/api/judgment-tasks/{id}/agreement/"),
}


@schema.auth()
class AdminBasicAuth:
    """Every request as the project's admin; schemathesis's auth checks take it away or spoil
    it and expect a 401/403."""

    def get(self, case: Any, ctx: Any) -> str:
        return BASIC

    def set(self, case: Any, data: str, ctx: Any) -> None:
        case.headers = {**(case.headers or {}), "Authorization": data}


@schema.parametrize()
@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_api_answers_as_its_schema_says(case: Any) -> None:
    excluded = []
    if (case.method, case.path) in CONTENT_CHECKED:
        excluded.append(positive_data_acceptance)
    case.call_and_validate(excluded_checks=excluded)
