"""The API under a fuzzer (issue 14): schemathesis generates requests from the OpenAPI schema
(/api/schema/) and runs every check it has (not a server error, status codes, content types,
response schemas, headers, negative data rejected, positive data accepted, unsupported
methods, ignored auth, ...) on each answer, in-process through the WSGI app, as a project
admin (basic auth) of a small populated project, with DEBUG off.

Twice: as the project's admin and as one of its annotators. A short run (three examples per
operation, the same ones every run) so the suite stays fast on SQLite; the longer run is
tests/perf/fuzz_api.py. No operation and no check is skipped: the writes (new items, images,
imports, judgments) run in the test's transaction and are rolled back. Where a schema-valid
request can still be refused for what OpenAPI cannot say (CONTENT_CHECKED), the
positive-data check takes a 400 naming the problem as the answer, as schemathesis's own
tuning advice for ST202 says; everything the schema can say, it says (required bodies, no
null judgment, no empty record, formats as an enum, no NUL characters)."""

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


def _basic(username: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{PASSWORD}".encode()).decode()


BASIC = {"admin": _basic("fuzz-admin"), "annotator": _basic("fuzz-annotator")}


def populate() -> None:
    """A project with a few of everything the API lists, its admin ``fuzz-admin``."""
    admin = UserFactory(username="fuzz-admin")
    project = ProjectFactory(name="fuzzed")
    MembershipFactory(project=project, user=admin, role=Role.ADMIN)
    annotator = UserFactory(username="fuzz-annotator")
    MembershipFactory(project=project, user=annotator, role=Role.ANNOTATOR)
    ImageFactory(projects=[project])
    for _ in range(3):
        item = ItemFactory(project=project)
        ResponseFactory(item=item)
        PlanFactory(item=item)
        TrajectoryFactory(item=item)
    JobFactory(project=project, created_by=admin)
    JudgmentTaskFactory(project=project)


# Operations whose input can match the schema and still be bad, by what the schema cannot say:
# an upload's bytes (an image, a dataset file: OpenAPI 3.0 cannot make a multipart part a
# file), a record in the project's own format, a judgment value that must fit the task's
# scheme (and an item of the task), a judge key that must be one the task offers, the steps
# an audit names. There a 400 naming the problem is a right answer to schema-valid data.
CONTENT_CHECKED = [
    ("POST", "/api/projects/{id}/images/"),
    ("POST", "/api/projects/{id}/import/"),
    ("POST", "/api/projects/{id}/items/"),
    ("POST", "/api/judgment-tasks/{id}/judgments/"),
    ("POST", "/api/judgment-tasks/{id}/items/{item_id}/audit/"),
    ("GET", "/api/judgment-tasks/{id}/agreement/"),
]
# schemathesis's default for the positive-data check, plus 400 (5xx is not_a_server_error's).
ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]


def fuzz_config() -> Any:
    from schemathesis.config import SchemathesisConfig

    return SchemathesisConfig.from_dict(
        {
            "operations": [
                {
                    "include-method": method,
                    "include-path": path,
                    "checks": {
                        "positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "400"]}
                    },
                }
                for method, path in CONTENT_CHECKED
            ]
        }
    )


def load_schema() -> Any:
    """The schema /api/schema/ serves (drf-spectacular's generator, as the view runs it),
    sent to the WSGI app in-process."""
    from drf_spectacular.generators import SchemaGenerator

    loaded = schemathesis.openapi.from_dict(
        SchemaGenerator().get_schema(request=None, public=True), config=fuzz_config()
    )
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
annotator_schema = load_schema()


class _BasicAuth:
    """Every request as one member; schemathesis's auth checks take it away or spoil it and
    expect a 401/403."""

    role = "admin"

    def get(self, case: Any, ctx: Any) -> str:
        return BASIC[self.role]

    def set(self, case: Any, data: str, ctx: Any) -> None:
        case.headers = {**(case.headers or {}), "Authorization": data}


@schema.auth()
class AdminBasicAuth(_BasicAuth):
    role = "admin"


@annotator_schema.auth()
class AnnotatorBasicAuth(_BasicAuth):
    role = "annotator"


FUZZ = settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,  # the same examples every run
)


@schema.parametrize()
@FUZZ
def test_api_answers_as_its_schema_says_to_an_admin(case: Any) -> None:
    case.call_and_validate()


@annotator_schema.parametrize()
@FUZZ
def test_api_answers_as_its_schema_says_to_an_annotator(case: Any) -> None:
    case.call_and_validate()
