"""``POST /api/projects/<id>/images/``: a script stores an image for the project, then names
it by the answered path in ``POST /api/projects/<id>/items/`` (an ATP-Bench image query, an
Agentic-MME task); the upload page's limits apply, with 400s naming ``file``."""

from __future__ import annotations

import hashlib
import io
import json
from typing import Any

import orjson
import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from PIL import Image as PILImage

from benchmark.models import Image, Item, ProjectKind, Role
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.shared_data import SHARED_DATA, needs_data

pytestmark = pytest.mark.django_db


def picture(size: tuple[int, int] = (40, 30), kind: str = "PNG", color: str = "teal") -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", size, color).save(out, format=kind)
    return out.getvalue()


def client_for(project: Any, role: str = Role.ANNOTATOR) -> Client:
    user = UserFactory()
    MembershipFactory(project=project, user=user, role=role)
    client = Client()
    client.force_login(user)
    return client


def upload(client: Client, project: Any, data: bytes, name: str = "photo.png") -> Any:
    return client.post(
        f"/api/projects/{project.pk}/images/", {"file": SimpleUploadedFile(name, data)}
    )


def create_item(client: Client, project: Any, body: dict[str, Any]) -> Any:
    return client.post(
        f"/api/projects/{project.pk}/items/", json.dumps(body), content_type="application/json"
    )


def test_an_uploaded_image_makes_an_atp_image_query_item() -> None:
    project = ProjectFactory(kind=ProjectKind.INTERLEAVED, data_format="atp")
    client = client_for(project)
    data = picture()
    response = upload(client, project, data)
    assert response.status_code == 201, response.content
    out = response.json()
    sha = hashlib.sha256(data).hexdigest()
    assert out["sha256"] == sha
    assert out["path"] == f"images/{sha}.png"
    assert (out["width"], out["height"], out["format"]) == (40, 30, "PNG")
    assert response["Location"].endswith(f"/api/images/{sha}/")
    assert Image.objects.get(sha256=sha).projects.filter(pk=project.pk).exists()

    body = {
        "query": "Which haircut suits the face in this photo?",
        "images": [{"path": out["path"], "role": "query"}],
        "category": "Lifestyle",
        "intent": "Hairstyle",
    }
    created = create_item(client, project, body)
    assert created.status_code == 201, created.content
    item = created.json()
    assert item["modality"] == "image"
    (ref,) = item["image_refs"]
    assert (ref["sha256"], ref["role"]) == (sha, "query")


def test_an_uploaded_image_makes_an_agentic_mme_task() -> None:
    project = ProjectFactory(kind=ProjectKind.TRAJECTORY, data_format="agentic-mme")
    client = client_for(project)
    out = upload(client, project, picture(kind="JPEG"), name="sign.jpg").json()
    assert out["path"] == f"images/{out['sha256']}.jpg"
    body = {
        "external_id": "0100",
        "query": "What street name is on the blue sign? Answer exactly as written.",
        "images": [{"path": out["path"]}],
        "expected_answer": "Willow St",
        "match_type": "contains",
        "level": 1,
    }
    created = create_item(client, project, body)
    assert created.status_code == 201, created.content
    item = Item.objects.get(pk=created.json()["id"])
    assert [r["sha256"] for r in item.image_refs] == [out["sha256"]]
    assert item.provenance.startswith("written by")


@needs_data("agentic-mme")
def test_an_uploaded_image_names_the_input_of_a_native_agentic_mme_record() -> None:
    project = ProjectFactory(kind=ProjectKind.TRAJECTORY, data_format="agentic-mme")
    client = client_for(project)
    out = upload(client, project, picture(color="orange")).json()
    record = orjson.loads((SHARED_DATA / "agentic-mme" / "json" / "0001.json").read_bytes())
    record["input"] = {**record["input"], "image": out["path"]}
    created = create_item(client, project, {"record": record})
    assert created.status_code == 201, created.content
    item = Item.objects.get(pk=created.json()["id"])
    assert [(r["sha256"], r["path"]) for r in item.image_refs] == [(out["sha256"], out["path"])]


def test_the_same_bytes_twice_are_one_image() -> None:
    project = ProjectFactory()
    client = client_for(project)
    first = upload(client, project, picture()).json()
    again = upload(client, project, picture(), name="copy.png")
    assert again.status_code == 201
    assert again.json()["sha256"] == first["sha256"]
    assert Image.objects.filter(sha256=first["sha256"]).count() == 1


def test_bad_files_answer_400_naming_the_file(settings: Any) -> None:
    project = ProjectFactory()
    client = client_for(project)
    not_image = upload(client, project, b"this is text, not a picture", name="notes.png")
    assert not_image.status_code == 400
    assert not_image.json()["detail"].startswith("file: notes.png:")
    missing = client.post(f"/api/projects/{project.pk}/images/", {})
    assert missing.status_code == 400 and "file" in missing.json()
    settings.BENCHWRIGHT_MAX_IMAGE_PIXELS = 100
    too_many = upload(client, project, picture(size=(20, 20)), name="big.png")
    assert too_many.status_code == 400
    assert too_many.json()["detail"].startswith("file: big.png:")
    settings.BENCHWRIGHT_MAX_UPLOAD_BYTES = 50
    too_big = upload(client, project, picture(size=(8, 8), color="navy"), name="heavy.png")
    assert too_big.status_code == 400 and "limit" in too_big.json()["detail"]
    assert not Image.objects.exists()


def test_only_members_store_images() -> None:
    project = ProjectFactory()
    outsider = client_for(ProjectFactory(), role=Role.ADMIN)
    assert upload(outsider, project, picture()).status_code == 404
    assert upload(Client(), project, picture()).status_code in (401, 403)
    assert not Image.objects.exists()


def test_the_upload_is_in_the_schema() -> None:
    project = ProjectFactory()
    schema = yaml.safe_load(client_for(project).get("/api/schema/").content)
    post = schema["paths"]["/api/projects/{id}/images/"]["post"]
    assert "multipart/form-data" in post["requestBody"]["content"]
    answer = post["responses"]["201"]["content"]["application/json"]["schema"]["$ref"]
    stored = schema["components"]["schemas"][answer.rsplit("/", 1)[1]]
    assert {"sha256", "path", "width", "height"} <= set(stored["properties"])
