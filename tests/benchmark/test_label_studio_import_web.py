"""The project's import page takes a Label Studio task export with a field mapping."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from benchmark.models import Project
from tests.benchmark.formats.test_label_studio_format import EXPORT

pytestmark = pytest.mark.django_db


def _post(client: Client, project: Project, capture: Any, **data: Any) -> Any:
    file = SimpleUploadedFile("ls.json", json.dumps(EXPORT).encode())
    with capture(execute=True):
        return client.post(
            f"/projects/{project.pk}/datasets/import/",
            {"file": file, **data},
            HTTP_HX_REQUEST="true",
            HTTP_HX_TARGET="import-panel",
        )


def test_label_studio_upload_with_mapping_imports_items(
    project: Project, clients: dict[str, Client], django_capture_on_commit_callbacks: Any
) -> None:
    response = _post(
        clients["admin"],
        project,
        django_capture_on_commit_callbacks,
        source="label-studio",
        mapping="question=query,cat=category",
    )
    assert response.status_code == 200
    items = {i.external_id: i for i in project.items.all()}
    assert set(items) == {"101", "102", "103"}
    assert items["102"].query == "2 + 2?" and items["102"].category == "math"


def test_a_bad_mapping_re_renders_the_form_naming_the_key(
    project: Project, clients: dict[str, Client], django_capture_on_commit_callbacks: Any
) -> None:
    response = _post(
        clients["admin"],
        project,
        django_capture_on_commit_callbacks,
        source="label-studio",
        mapping="question=query,cat=kategorie",
    )
    assert response.status_code == 200
    assert "&#x27;cat&#x27; maps to unknown item field" in response.content.decode()
    assert not project.items.exists()


def test_the_import_page_offers_label_studio(project: Project, clients: dict[str, Client]) -> None:
    page = clients["admin"].get(f"/projects/{project.pk}/datasets/import/").content.decode()
    assert "Label Studio JSON" in page and 'name="mapping"' in page
