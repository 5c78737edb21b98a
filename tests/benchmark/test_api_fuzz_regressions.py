"""What schemathesis found (issue 14), one test each: ids beyond 64 bits in query filters
(an OverflowError on SQLite, so a 500), error pages with DEBUG off before ``collectstatic``
(the missing static manifest turned every 404 and 405 into a 500), and a schema that listed
200 only and typed filters loosely."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from django.test import Client, override_settings

from benchmark.api.schema import ID_MAX
from benchmark.models import Project, Role
from tests.factories import ItemFactory, MembershipFactory, PlanFactory, UserFactory

pytestmark = pytest.mark.django_db

HUGE = "-127630174549387755520"  # the value schemathesis sent
FILTERS = [
    ("items", "project"),
    ("plans", "project"),
    ("plans", "item"),
    ("responses", "project"),
    ("responses", "item"),
    ("trajectories", "project"),
    ("trajectories", "item"),
    ("jobs", "project"),
    ("images", "project"),
]


@pytest.fixture
def admin_client(project: Project) -> Client:
    admin = UserFactory(username="api-admin")
    MembershipFactory(project=project, user=admin, role=Role.ADMIN)
    client = Client()
    client.force_login(admin)
    return client


@pytest.mark.parametrize(("endpoint", "param"), FILTERS)
@pytest.mark.parametrize("value", [HUGE, str(2**63), "0", "-1", "", "1.5"])
def test_an_id_filter_out_of_range_is_a_400_naming_it(
    admin_client: Client, endpoint: str, param: str, value: str
) -> None:
    answer = admin_client.get(f"/api/{endpoint}/", {param: value})
    assert answer.status_code == 400, answer.content
    assert param in answer.json()


@pytest.mark.parametrize(("endpoint", "param"), FILTERS)
def test_the_largest_id_is_a_filter_that_matches_nothing(
    admin_client: Client, project: Project, endpoint: str, param: str
) -> None:
    PlanFactory(item=ItemFactory(project=project))
    answer = admin_client.get(f"/api/{endpoint}/", {param: str(ID_MAX)})
    if endpoint == "images":  # names a project: one you are not a member of is a 404
        assert answer.status_code == 404
    else:
        assert answer.status_code == 200
        assert answer.json()["count"] == 0


def test_a_huge_id_in_the_path_or_page_is_a_404(admin_client: Client, project: Project) -> None:
    ItemFactory(project=project)
    assert admin_client.get(f"/api/items/{2**70}/").status_code == 404
    assert admin_client.get("/api/items/", {"page": str(2**70)}).status_code == 404


def test_the_schema_types_and_bounds_filters_and_documents_errors(admin_client: Client) -> None:
    schema = admin_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    items = schema["paths"]["/api/items/"]["get"]
    params = {p["name"]: p["schema"] for p in items["parameters"]}
    assert params["project"] == {
        "type": "integer",
        "format": "int64",
        "minimum": 1,
        "maximum": ID_MAX,
    }
    assert params["level"]["minimum"] == 1 and params["level"]["maximum"] == 3
    assert params["page"]["minimum"] == 1
    assert "" in params["status"]["enum"]  # ?status= filters nothing
    for path, path_item in schema["paths"].items():
        for method, operation in path_item.items():
            for code in ("400", "403", "404"):
                assert code in operation["responses"], (method, path, code)
            if method == "post":
                assert "409" in operation["responses"], (method, path)
    assert schema["components"]["schemas"]["Error"]["required"] == ["detail"]


# --------------------------------------------------------------------------- error pages

MANIFEST_STORAGE = "benchmark.static_storage.ForgivingManifestStaticFilesStorage"


@pytest.fixture
def production_static(tmp_path: Path) -> Any:
    """DEBUG off with the hashed-name storage and no ``collectstatic`` run (an empty
    STATIC_ROOT): as bin/serve was when schemathesis ran."""
    with override_settings(
        DEBUG=False,
        STATIC_ROOT=tmp_path / "static",
        STORAGES={
            "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
            "staticfiles": {"BACKEND": MANIFEST_STORAGE},
        },
    ):
        yield


def test_without_the_forgiving_storage_the_page_would_fail(
    production_static: None, admin_client: Client
) -> None:
    """The test can fail: WhiteNoise's own storage raises on the missing manifest entry."""
    from whitenoise.storage import CompressedManifestStaticFilesStorage

    with pytest.raises(ValueError, match="manifest"):
        CompressedManifestStaticFilesStorage().url("css/app.css")


@pytest.mark.usefixtures("production_static")
def test_a_404_page_renders_with_debug_off_before_collectstatic(admin_client: Client) -> None:
    answer = admin_client.get("/no-such-page/")
    assert answer.status_code == 404
    assert b"Not found" in answer.content
    assert b"/static/css/app.css" in answer.content  # the plain URL, unhashed


@pytest.mark.usefixtures("production_static")
@pytest.mark.parametrize("path", ["/", "/api/docs/", "/api/items/", "/no-such-page/"])
def test_trace_is_a_4xx_with_debug_off(admin_client: Client, path: str) -> None:
    answer = admin_client.generic("TRACE", path)
    assert 400 <= answer.status_code < 500, answer.status_code


@pytest.mark.usefixtures("production_static")
def test_an_unknown_api_path_answers_json(admin_client: Client) -> None:
    answer = admin_client.get("/api/images/not-a-hash/")
    assert answer.status_code == 404
    assert answer.json() == {"detail": "Not found."}


def test_whitenoise_start_asks_the_storage_for_no_guessed_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A web process's start: WhiteNoise tells hashed files by their names and does not ask
    the storage about unhashed names it guesses (``a.css.map`` -> ``a.map``), which the
    forgiving storage logged as missing manifest entries; hashed files are cached forever,
    plain ones are not."""
    from django.test import RequestFactory
    from whitenoise.middleware import WhiteNoiseMiddleware

    root = tmp_path / "static"
    (root / "css").mkdir(parents=True)
    for name in ("a.css.map", "a.css.0123456789ab.map", "LICENSE", "LICENSE.0123456789ab"):
        (root / "css" / name).write_text("x")
    manifest = {
        "paths": {
            "css/a.css.map": "css/a.css.0123456789ab.map",
            "css/LICENSE": "css/LICENSE.0123456789ab",
        },
        "version": "1.1",
        "hash": "0",
    }
    (root / "staticfiles.json").write_text(json.dumps(manifest))
    with override_settings(
        DEBUG=False,
        STATIC_ROOT=root,
        STORAGES={
            "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
            "staticfiles": {"BACKEND": MANIFEST_STORAGE},
        },
    ):
        caplog.set_level(logging.DEBUG, logger="benchmark.static_storage")
        middleware = WhiteNoiseMiddleware(lambda request: None)
        served = {
            url: middleware.files[url].get_response("GET", RequestFactory().get(url).META)
            for url in ("/static/css/a.css.0123456789ab.map", "/static/css/a.css.map",
                        "/static/css/LICENSE.0123456789ab", "/static/css/LICENSE")
        }  # fmt: skip
    assert [r.getMessage() for r in caplog.records if r.name == "benchmark.static_storage"] == []
    forever = {
        url: "immutable" in dict(r.headers).get("Cache-Control", "") for url, r in served.items()
    }
    assert forever == {
        "/static/css/a.css.0123456789ab.map": True,
        "/static/css/a.css.map": False,
        "/static/css/LICENSE.0123456789ab": True,
        "/static/css/LICENSE": False,
    }


# --------------------------------------------------------------------------- issue 22, item 6
# The schema tells the truth: a body the API refuses for its shape is one the schema refuses.


def _request_schema(path: str, method: str = "post") -> tuple[dict[str, Any], dict[str, Any]]:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    body = schema["paths"][path][method]["requestBody"]
    return schema, body


def _valid(schema: dict[str, Any], body_schema: dict[str, Any], value: Any) -> bool:
    import jsonschema

    # The body's schema with the components beside it, so its "#/components/..." refs resolve.
    rooted = {**body_schema, "components": schema["components"]}
    try:
        jsonschema.Draft4Validator(rooted).validate(value)
    except jsonschema.ValidationError:
        return False
    return True


SHAPES_REFUSED = [
    ("/api/judgment-tasks/{id}/judgments/", {"item": 1, "value": None}),
    ("/api/judgment-tasks/{id}/judgments/", {"item": 0, "value": 1}),
    ("/api/judgment-tasks/{id}/judgments/", {"item": 1, "value": 1, "comment": "a\u0000"}),
    ("/api/projects/{id}/items/", {"record": {}}),
    ("/api/projects/{id}/items/", {"record": ""}),
    ("/api/projects/{id}/items/", {"record": {"trace_id": "a"}, "format": "nonsense"}),
    ("/api/projects/{id}/items/", {"query": ""}),
    ("/api/projects/{id}/items/", {"query": "a\u0000b"}),
]


@pytest.mark.parametrize(("path", "body"), SHAPES_REFUSED)
def test_the_schema_refuses_what_the_api_refuses_for_its_shape(
    admin_client: Client, project: Project, path: str, body: dict[str, Any]
) -> None:
    from tests.factories import JudgmentTaskFactory

    task = JudgmentTaskFactory(project=project)
    url = path.replace("{id}", str(task.pk if "judgment" in path else project.pk))
    answer = admin_client.post(url, body, content_type="application/json")
    assert answer.status_code == 400, answer.content
    schema, request_body = _request_schema(path)
    assert not _valid(schema, request_body["content"]["application/json"]["schema"], body)


@pytest.mark.parametrize(
    "path", ["/api/projects/{id}/items/", "/api/judgment-tasks/{id}/judgments/"]
)
def test_a_write_that_needs_a_body_says_so(
    admin_client: Client, project: Project, path: str
) -> None:
    _, request_body = _request_schema(path)
    assert request_body.get("required") is True
