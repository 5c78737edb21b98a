"""The item pages: a new item of each kind by POST (with an image upload), the edit form with
its 409, the history with revert, and their query counts."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from benchmark.items.services import item_update
from benchmark.models import Item, ItemVersion, ProjectKind, Response, Role
from tests.factories import (
    ItemFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    png_bytes,
)

pytestmark = pytest.mark.django_db


def _client(project: Any, role: str = Role.ANNOTATOR) -> tuple[Client, Any]:
    user = UserFactory()
    MembershipFactory(project=project, user=user, role=role)
    client = Client()
    client.force_login(user)
    return client, user


def _png(name: str, seed: int) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, png_bytes(seed), content_type="image/png")


def test_project_page_links_to_new_item() -> None:
    project = ProjectFactory()
    client, _ = _client(project)
    body = client.get(reverse("benchmark:project_detail", args=[project.pk])).content.decode()
    assert reverse("benchmark:item_new", args=[project.pk]) in body


def test_new_atp_item_with_documents_in_posted_order_and_an_upload() -> None:
    project = ProjectFactory()
    client, user = _client(project)
    page = client.get(reverse("benchmark:item_new", args=[project.pk]))
    assert page.status_code == 200 and b"data-document-template" in page.content
    response = client.post(
        reverse("benchmark:item_new", args=[project.pk]),
        {
            "query": "How do I descale it?",
            "modality": "text",
            "category": "Manual",
            "intent": "Repair",
            "doc_key": ["b", "a"],
            "doc_text": ["Second written, first shown.", "First written."],
            "doc_images_a": [_png("a.png", 3)],
            "gt": "Run the cycle.",
            "op": "save",
        },
    )
    item = Item.objects.get(project=project)
    assert response.status_code == 302
    assert response["Location"].endswith(
        reverse("benchmark:item_edit", args=[project.pk, item.pk]) + "?created=1"
    )
    assert [d["text"] for d in item.documents] == ["Second written, first shown.", "First written."]
    assert item.documents[0]["images"] == [] and len(item.documents[1]["images"]) == 1
    assert item.provenance == f"written by {user.username}"
    gt = Response.objects.get(item=item, key="gt")
    page = client.get(response["Location"])
    assert (
        reverse("annotation:tag_review", args=[project.pk, item.pk, gt.pk]) in page.content.decode()
    )
    assert b"data-created" in page.content


def test_invalid_post_rerenders_with_200_and_the_field_named() -> None:
    project = ProjectFactory()
    client, _ = _client(project)
    response = client.post(
        reverse("benchmark:item_new", args=[project.pk]),
        {"query": "", "doc_key": ["0"], "doc_text": ["kept text"], "op": "save"},
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert "write the query" in body and "kept text" in body
    assert not Item.objects.filter(project=project).exists()


def test_document_buttons_work_without_javascript() -> None:
    project = ProjectFactory()
    client, _ = _client(project)
    response = client.post(
        reverse("benchmark:item_new", args=[project.pk]),
        {"query": "Q", "doc_key": ["0", "1"], "doc_text": ["one", "two"], "op": "up:1"},
    )
    body = response.content.decode()
    assert response.status_code == 200 and body.index("two") < body.index("one")
    assert not Item.objects.exists()


def test_new_llmi_item_shows_vague_warnings_after_create() -> None:
    project = ProjectFactory(data_format="llmi")
    client, _ = _client(project)
    data: dict[str, Any] = {
        "query": "Write a recipe with pictures.",
        "images": [_png("in.png", 4)],
        "image_num_kind": "n",
        "image_num_n": "2",
        "op": "save",
    }
    data |= {f"r{i}": f"The answer includes picture number {i} of the dish." for i in range(1, 11)}
    data["r4"] = "Nice pictures."
    response = client.post(reverse("benchmark:item_new", args=[project.pk]), data)
    item = Item.objects.get(project=project)
    assert item.constraints["image_count"] == {"kind": "exact", "n": 2}
    assert item.modality == "image" and item.external_id == "train_sample#1"
    page = client.get(response["Location"]).content.decode()
    assert "rubric.r4: vague" in page


def test_new_agentic_item_goes_to_the_trajectory_editor() -> None:
    project = ProjectFactory(kind=ProjectKind.TRAJECTORY, data_format="agentic-mme")
    client, _ = _client(project)
    response = client.post(
        reverse("benchmark:item_new", args=[project.pk]),
        {
            "query": "Which street?",
            "format_instruction": "Answer with the name.",
            "images": [_png("p.png", 6)],
            "expected_answer": "Willow St",
            "match_type": "contains",
            "level": "1",
            "accepted_variants": "Willow Street",
            "op": "save",
        },
    )
    item = Item.objects.get(project=project)
    assert response["Location"] == reverse("annotation:trajectory_edit", args=[project.pk, item.pk])
    edit = client.get(reverse("benchmark:item_edit", args=[project.pk, item.pk])).content.decode()
    assert 'value="Answer with the name."' in edit


def test_new_mms_item_goes_to_the_plan_editor_or_the_item() -> None:
    project = ProjectFactory(kind=ProjectKind.PLAN, data_format="mms")
    client, _ = _client(project)
    response = client.post(
        reverse("benchmark:item_new", args=[project.pk]),
        {
            "query": "Caption image.jpg",
            "images": [_png("image.jpg", 8)],
            "input_files": "a.wav",
            "op": "save",
        },
    )
    item = Item.objects.get(project=project)
    assert response.status_code == 302
    assert f"/items/{item.pk}/" in response["Location"]
    assert item.constraints == {"input_files": ["a.wav"]}


def test_edit_saves_a_version_and_a_stale_save_answers_409_keeping_input() -> None:
    project = ProjectFactory()
    item = ItemFactory(project=project, category="", intent="")
    client, _ = _client(project)
    url = reverse("benchmark:item_edit", args=[project.pk, item.pk])
    page = client.get(url)
    assert b'name="base_version" value="1"' in page.content
    other = UserFactory(username="carol")
    MembershipFactory(project=project, user=other, role=Role.REVIEWER)
    item_update(item=item, user=other, changes={"query": "Carol's query"}, base_version=1)
    posted = {
        "query": "My query",
        "doc_key": ["0"],
        "doc_text": ["Background text."],
        "base_version": "1",
        "op": "save",
    }
    response = client.post(url, posted)
    assert response.status_code == 409
    body = response.content.decode()
    assert "carol" in body and "Carol&#x27;s query" in body and "My query" in body
    assert 'name="base_version" value="2"' in body
    posted["base_version"] = "2"
    assert client.post(url, posted).status_code == 302
    assert Item.objects.get(pk=item.pk).query == "My query"
    assert ItemVersion.objects.filter(item=item).count() == 3


def test_history_lists_versions_with_diffs_and_reverts(django_assert_max_num_queries: Any) -> None:
    project = ProjectFactory()
    item = ItemFactory(project=project)
    client, user = _client(project)
    for n in range(6):
        item_update(item=item, user=user, changes={"query": f"Query {n}"}, base_version=None)
    url = reverse("benchmark:item_history", args=[project.pk, item.pk])
    with django_assert_max_num_queries(12):
        page = client.get(url)
    body = page.content.decode()
    assert page.status_code == 200 and "Version 7" in body and "Query 4" in body
    revert = reverse("benchmark:item_revert", args=[project.pk, item.pk, 1])
    assert revert in body
    assert client.post(revert, {"base_version": "7"}).status_code == 302
    assert (
        Item.objects.get(pk=item.pk).query
        == ItemVersion.objects.get(item=item, number=1).fields["query"]
    )
    assert client.post(revert, {"base_version": "7"}).status_code == 409


def test_history_without_edits_and_outsiders() -> None:
    project = ProjectFactory()
    item = ItemFactory(project=project)
    client, _ = _client(project, Role.REVIEWER)
    page = client.get(reverse("benchmark:item_history", args=[project.pk, item.pk]))
    assert page.status_code == 200 and b"no edits yet" in page.content
    outsider, _ = _client(ProjectFactory(), Role.ADMIN)
    assert (
        outsider.get(reverse("benchmark:item_history", args=[project.pk, item.pk])).status_code
        == 404
    )
    assert outsider.get(reverse("benchmark:item_new", args=[project.pk])).status_code == 404


def test_edit_an_imported_training_row_without_criteria(django_assert_max_num_queries: Any) -> None:
    project = ProjectFactory(data_format="llmi")
    item = ItemFactory(
        project=project,
        external_id="train_sample#1",
        documents=[],
        category="",
        intent="",
        constraints={"image_num": "Inf", "image_count": {"kind": "at_least_one", "n": None}},
    )
    client, _ = _client(project)
    url = reverse("benchmark:item_edit", args=[project.pk, item.pk])
    with django_assert_max_num_queries(15):
        page = client.get(url)
    assert b'<option value="at_least_one" selected>' in page.content
    posted = {
        "query": item.query,
        "image_num_kind": "at_least_one",
        "base_version": "1",
        "op": "save",
    }
    unchanged = client.post(url, posted)
    assert unchanged.status_code == 200 and b"nothing to save" in unchanged.content
    posted["query"] = "A clearer prompt."
    assert client.post(url, posted).status_code == 302
    item.refresh_from_db()
    assert item.query == "A clearer prompt." and item.constraints["image_num"] == "Inf"
    assert item.rubric == []
