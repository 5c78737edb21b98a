"""The REST API: scoped lists and details, filters, and a schema that validates."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from django.core.management import call_command
from django.test import Client

from benchmark.models import Origin, Project
from tests.factories import (
    ImageFactory,
    ItemFactory,
    JobFactory,
    PlanFactory,
    ResponseFactory,
    TrajectoryFactory,
    image_ref,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def data(project: Project, other_project: Project, users: dict[str, Any]) -> dict[str, Any]:
    image = ImageFactory(projects=[project])
    mine = ItemFactory(
        project=project,
        external_id="atp_0001",
        query="LumenCap framework",
        category="Academic",
        intent="Framework",
        level=1,
        image_refs=[image_ref(image, position=0)],
        raw='{"trace_id": "atp_0001", "query": "LumenCap framework"}',
    )
    second = ItemFactory(
        project=project,
        external_id="atp_0002",
        query="Round face haircut",
        category="Lifestyle",
        intent="Hairstyle",
        level=2,
        status="verified",
        modality="image",
    )
    theirs = ItemFactory(project=other_project, external_id="other_0001")
    return {
        "image": image,
        "mine": mine,
        "second": second,
        "theirs": theirs,
        "response": ResponseFactory(item=mine, key="gt"),
        "prediction": ResponseFactory(item=second, key="pred", origin=Origin.MODEL),
        "plan": PlanFactory(item=mine),
        "trajectory": TrajectoryFactory(item=mine),
        "their_response": ResponseFactory(item=theirs),
        "their_image": ImageFactory(projects=[other_project]),
        "job": JobFactory(project=project, created_by=users["admin"]),
        "their_job": JobFactory(project=other_project, created_by=users["outsider"]),
    }


def ids(response: Any, key: str = "id") -> list[Any]:
    assert response.status_code == 200, response.content[:300]
    return [row[key] for row in response.json()["results"]]


def test_projects_list_shows_only_mine_with_role_and_counts(
    project: Project, data: dict[str, Any], clients: dict[str, Client]
) -> None:
    body = clients["reviewer"].get("/api/projects/").json()
    assert body["count"] == 1
    row = body["results"][0]
    assert row["id"] == project.pk
    assert row["role"] == "reviewer"
    assert row["kind"] == "interleaved"
    assert row["counts"] == {
        "draft": 1,
        "in_review": 0,
        "verified": 1,
        "discarded": 0,
        "total": 2,
    }


def test_project_detail(project: Project, data: dict[str, Any], clients: dict[str, Client]) -> None:
    body = clients["annotator"].get(f"/api/projects/{project.pk}/").json()
    assert body["name"] == project.name
    assert body["role"] == "annotator"
    assert body["toolset"] == project.toolset.name


def test_items_list_is_scoped_to_my_projects(
    data: dict[str, Any], clients: dict[str, Client]
) -> None:
    assert ids(clients["admin"].get("/api/items/"), "external_id") == ["atp_0001", "atp_0002"]
    assert ids(clients["outsider"].get("/api/items/"), "external_id") == ["other_0001"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=verified", ["atp_0002"]),
        ("category=Academic", ["atp_0001"]),
        ("intent=Hairstyle", ["atp_0002"]),
        ("level=1", ["atp_0001"]),
        ("modality=image", ["atp_0002"]),
        ("q=lumencap", ["atp_0001"]),
        ("q=0002", ["atp_0002"]),
        ("project={project}", ["atp_0001", "atp_0002"]),
        ("project={other}", []),
    ],
)
def test_items_filters(
    project: Project,
    other_project: Project,
    data: dict[str, Any],
    clients: dict[str, Client],
    query: str,
    expected: list[str],
) -> None:
    url = "/api/items/?" + query.format(project=project.pk, other=other_project.pk)
    assert ids(clients["admin"].get(url), "external_id") == expected


@pytest.mark.parametrize("query", ["status=bogus", "level=7", "level=x", "modality=video"])
def test_bad_filter_is_400_naming_the_parameter(
    data: dict[str, Any], clients: dict[str, Client], query: str
) -> None:
    response = clients["admin"].get(f"/api/items/?{query}")
    assert response.status_code == 400
    assert query.split("=")[0] in response.json()


def test_item_detail_has_everything(data: dict[str, Any], clients: dict[str, Client]) -> None:
    item = data["mine"]
    body = clients["annotator"].get(f"/api/items/{item.pk}/").json()
    assert body["external_id"] == "atp_0001"
    assert body["documents"] == item.documents
    assert body["image_refs"][0]["sha256"] == data["image"].sha256
    assert body["raw"] == {"trace_id": "atp_0001", "query": "LumenCap framework"}
    assert body["n_images"] == 1


def test_item_list_rows_are_light(data: dict[str, Any], clients: dict[str, Client]) -> None:
    row = clients["admin"].get("/api/items/").json()["results"][0]
    assert "raw" not in row and "documents" not in row


def test_another_projects_objects_are_404(
    data: dict[str, Any], other_project: Project, clients: dict[str, Client]
) -> None:
    client = clients["admin"]
    assert client.get(f"/api/projects/{other_project.pk}/").status_code == 404
    assert client.get(f"/api/items/{data['theirs'].pk}/").status_code == 404
    assert client.get(f"/api/responses/{data['their_response'].pk}/").status_code == 404
    assert client.get(f"/api/images/{data['their_image'].sha256}/").status_code == 404
    assert client.get(f"/api/jobs/{data['their_job'].pk}/").status_code == 404
    assert client.get("/api/items/not-a-number/").status_code == 404


def test_responses_plans_trajectories(data: dict[str, Any], clients: dict[str, Client]) -> None:
    client = clients["annotator"]
    mine = data["mine"]
    assert ids(client.get("/api/responses/"), "key") == ["gt", "pred"]
    assert ids(client.get(f"/api/responses/?item={mine.pk}"), "key") == ["gt"]
    assert ids(client.get("/api/responses/?origin=model"), "key") == ["pred"]
    response = client.get(f"/api/responses/{data['response'].pk}/").json()
    assert "<tool>" in response["text"]
    plan = client.get(f"/api/plans/{data['plan'].pk}/").json()
    assert plan["steps"][1]["args"]["image"] == "<node-0>.image"
    traj = client.get(f"/api/trajectories/{data['trajectory'].pk}/").json()
    assert traj["checkpoints"][0]["axis"] == "V"
    assert ids(client.get("/api/plans/?origin=model")) == []
    assert len(ids(client.get(f"/api/trajectories/?item={mine.pk}"))) == 1


def test_images_have_metadata_and_permission_checked_links(
    data: dict[str, Any], clients: dict[str, Client]
) -> None:
    client = clients["annotator"]
    image = data["image"]
    assert ids(client.get("/api/images/"), "sha256") == [image.sha256]
    body = client.get(f"/api/images/{image.sha256}/").json()
    assert body["width"] == 24 and body["height"] == 16 and body["format"] == "PNG"
    assert body["file"] == f"http://testserver/images/{image.sha256}/"
    assert body["thumbnail"] == f"http://testserver/images/{image.sha256}/thumb/"
    assert client.get(body["file"]).status_code == 200


def test_jobs_are_scoped_and_hide_server_paths(
    data: dict[str, Any], clients: dict[str, Client]
) -> None:
    # data["job"] is an import the admin started (imports are for admins).
    assert ids(clients["admin"].get("/api/jobs/")) == [data["job"].pk]
    body = clients["admin"].get(f"/api/jobs/{data['job'].pk}/").json()
    assert body["status"] == "queued"
    assert body["done"] is False
    assert body["cancelled"] is False and body["cancelling"] is False
    assert "params" not in body


def test_api_lists_are_paginated(project: Project, clients: dict[str, Client]) -> None:
    ItemFactory.create_batch(55, project=project)
    first = clients["admin"].get("/api/items/").json()
    assert first["count"] == 55
    assert len(first["results"]) == 50
    assert first["next"].endswith("?page=2")


def test_api_is_read_only(data: dict[str, Any], clients: dict[str, Client]) -> None:
    client = clients["admin"]
    item = data["mine"]
    assert client.delete(f"/api/items/{item.pk}/").status_code == 405
    assert client.post("/api/items/", {}).status_code == 405
    assert client.patch(f"/api/projects/{item.project_id}/", {}).status_code == 405


def test_session_api_writes_need_csrf(project: Project, users: dict[str, Any]) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["admin"])
    response = client.post(f"/api/projects/{project.pk}/import/", {})
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]


def test_schema_endpoint_and_docs(clients: dict[str, Client]) -> None:
    response = clients["annotator"].get("/api/schema/")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    paths = set(schema["paths"])
    for path in [
        "/api/projects/",
        "/api/projects/{id}/",
        "/api/projects/{id}/import/",
        "/api/projects/{id}/items/",
        "/api/projects/{id}/images/",
        "/api/items/",
        "/api/items/{id}/",
        "/api/responses/",
        "/api/plans/",
        "/api/trajectories/",
        "/api/images/{sha256}/",
        "/api/jobs/{id}/",
    ]:
        assert path in paths, path
    item_params = {p["name"] for p in schema["paths"]["/api/items/"]["get"]["parameters"]}
    assert {"project", "status", "category", "intent", "level", "modality", "q"} <= item_params
    assert clients["annotator"].get("/api/docs/").status_code == 200


def test_schema_validates_without_warnings(tmp_path: Any) -> None:
    out = tmp_path / "schema.yml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    assert "openapi" in out.read_text()
