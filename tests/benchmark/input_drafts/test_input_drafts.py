"""Issue 25, finding 4, the server's side: a draft of unsaved input is kept per user and key
(``/input-drafts/<key>/``), read and written only by its user and only for an object they may
edit, refused with a clear message when too large or malformed, and deleted by the real save."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from benchmark.input_drafts import services
from benchmark.models import InputDraft, Role
from tests.factories import (
    InputDraftFactory,
    ItemFactory,
    JudgmentTaskFactory,
    MembershipFactory,
    ProjectFactory,
    ResponseFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def url(key: str) -> str:
    return reverse("benchmark:input_draft", kwargs={"key": key})


def client_for(user: Any) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.get(reverse("benchmark:project_list"))  # a page: sets the CSRF cookie
    return client


def post(client: Client, key: str, body: Any, **extra: Any) -> Any:
    return client.post(
        url(key),
        json.dumps(body),
        content_type="application/json",
        HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value,
        **extra,
    )


@pytest.fixture
def world() -> Any:
    project = ProjectFactory(name="Drafts")
    item = ItemFactory(project=project)
    response = ResponseFactory(item=item)
    users = {name: UserFactory(username=name) for name in ("ann", "bea", "rev", "out")}
    for name in ("ann", "bea"):
        MembershipFactory(project=project, user=users[name], role=Role.ANNOTATOR)
    MembershipFactory(project=project, user=users["rev"], role=Role.REVIEWER)
    key = f"tag-review:project:{project.pk}:item:{item.pk}:response:{response.pk}"
    return type("World", (), {"project": project, "item": item, "key": key, **users})


def test_a_draft_is_kept_read_back_and_replaced(world: Any) -> None:
    client = client_for(world.ann)
    answer = post(client, world.key, {"version": "3", "payload": [["note", "first"]]})
    assert answer.status_code == 200, answer.content
    post(client, world.key, {"version": "4", "payload": [["note", "second"], ["text", "t"]]})
    read = client.get(url(world.key))
    assert read.status_code == 200
    data = read.json()
    assert (data["version"], data["payload"]) == ("4", [["note", "second"], ["text", "t"]])
    assert data["csrf_token"] and isinstance(data["updated_ms"], int)
    assert InputDraft.objects.filter(user=world.ann).count() == 1


def test_another_users_draft_is_not_yours_to_read_or_delete(world: Any) -> None:
    InputDraftFactory(user=world.ann, key=world.key, payload=[["note", "ann's"]])
    other = client_for(world.bea)
    read = other.get(url(world.key))
    assert read.status_code == 404
    assert read.json()["error"] == "You have no unsaved input here."
    assert b"ann's" not in read.content
    deleted = other.delete(url(world.key), HTTP_X_CSRFTOKEN=other.cookies["csrftoken"].value)
    assert deleted.status_code == 204
    assert InputDraft.objects.filter(user=world.ann, key=world.key).exists()


def test_an_object_the_user_may_not_edit_or_see_is_refused(world: Any) -> None:
    # Not a member: the project does not exist for them.
    outsider = client_for(world.out)
    assert post(outsider, world.key, {"version": "", "payload": []}).status_code == 404
    assert outsider.get(url(world.key)).status_code == 404
    assert not InputDraft.objects.filter(user=world.out).exists()
    # A member who may not adjudicate: refused, saying why.
    task = JudgmentTaskFactory(project=world.project)
    key = f"adjudication:task:{task.pk}:item:{world.item.pk}"
    refused = post(client_for(world.ann), key, {"version": "", "payload": [["reason", "x"]]})
    assert refused.status_code == 403
    assert "reviewers and admins" in refused.json()["error"]
    assert post(client_for(world.rev), key, {"payload": [["reason", "x"]]}).status_code == 200
    # A key naming no object, or no form that keeps drafts.
    client = client_for(world.ann)
    gone = f"tag-review:project:{world.project.pk}:item:{world.item.pk}:response:999999"
    assert post(client, gone, {"payload": []}).status_code == 404
    unknown = post(client, "secret-form:project:1", {"payload": []})
    assert unknown.status_code == 404
    assert "No form keeps drafts under 'secret-form'" in unknown.json()["error"]


def test_oversize_and_malformed_drafts_get_a_clear_message(world: Any, monkeypatch: Any) -> None:
    client = client_for(world.ann)
    monkeypatch.setattr(services, "PAYLOAD_MAX_BYTES", 1024)
    big = post(client, world.key, {"version": "1", "payload": [["text", "x" * 5000]]})
    assert big.status_code == 413
    assert "too large to keep on the server" in big.json()["error"]
    assert "kept in this browser" in big.json()["error"]
    bad = post(client, world.key, {"version": "1", "payload": {"text": "x"}})
    assert bad.status_code == 400
    assert bad.json()["error"] == "A draft's payload is a list of [field name, value] pairs."
    not_json = client.post(
        url(world.key),
        "{",
        content_type="application/json",
        HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value,
    )
    assert (not_json.status_code, not_json.json()["error"]) == (400, "The draft is not JSON.")
    assert not InputDraft.objects.exists()


def test_writes_need_the_csrf_token_and_a_session(world: Any) -> None:
    client = client_for(world.ann)
    forged = client.post(url(world.key), "{}", content_type="application/json")
    assert forged.status_code == 403
    anonymous = Client().get(url(world.key))
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]


def test_the_real_save_deletes_the_draft(world: Any) -> None:
    """The tag editor's save: the draft of that answer goes, another one stays."""
    InputDraftFactory(user=world.ann, key=world.key)
    InputDraftFactory(user=world.ann, key="item-new:project:1")
    client = client_for(world.ann)
    review = reverse(
        "annotation:tag_review",
        args=[world.project.pk, world.item.pk, world.key.rsplit(":", 1)[1]],
    )
    page = client.get(review)
    assert f'data-draft="{world.key}"' in page.content.decode()
    saved = client.post(
        review,
        {
            "text": "Edited answer.",
            "base": "1",
            "decisions": "[]",
            "marks": "[]",
            "op": "save",
            "csrfmiddlewaretoken": client.cookies["csrftoken"].value,
        },
    )
    assert saved.status_code == 302, saved.content[:500]
    assert list(InputDraft.objects.values_list("key", flat=True)) == ["item-new:project:1"]


def test_an_autosave_and_a_read_cost_a_few_queries(
    world: Any, django_assert_max_num_queries: Any
) -> None:
    """The browser sends a draft a second after each pause in typing: the permission check
    and the write stay a handful of queries (session, user, project and role, answer, draft)."""
    client = client_for(world.ann)
    body = {"version": "1", "payload": [["text", "x" * 1000]] * 50}
    post(client, world.key, body)
    with django_assert_max_num_queries(11):
        assert post(client, world.key, body).status_code == 200
    with django_assert_max_num_queries(8):
        assert client.get(url(world.key)).status_code == 200
