"""Prefetching the next item's images while the current one is judged (issue 25, finding 3):
the judge page asks ``task_next_images`` for the thumbnails of the item "next" would most
likely lease, and the browser fetches them before the submit. The answer leases and locks
nothing, names only what the judge page would show that user of that item (never an answer
image), and nothing for a task judged blind on a screen of its own.
The browser side is tests/e2e/test_next_images_browser.py."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.judgment_tasks.models import Assignment
from annotation.judgment_tasks.services import judgment_task_ensure_defaults
from benchmark.models import Toolset
from tests.factories import (
    ImageFactory,
    ItemFactory,
    ItemPushFactory,
    JudgmentTaskFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    image_ref,
)

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "next-images"}


def _world() -> dict[str, Any]:
    project = ProjectFactory(data_format="atp", toolset=Toolset.objects.create(name="atp-n"))
    images = [ImageFactory(projects=[project]) for _ in range(5)]
    first = ItemFactory(
        project=project,
        external_id="n0",
        position=0,
        image_refs=[image_ref(images[0], position=0, role="input")],
    )
    shown_in_document = image_ref(images[2], position=0)
    second = ItemFactory(
        project=project,
        external_id="n1",
        position=1,
        image_refs=[
            image_ref(images[1], position=0, role="input"),
            shown_in_document,
            image_ref(images[3], position=0, role="answer"),  # not on the judge page
        ],
        documents=[{"text": "A shop front.", "images": [shown_in_document["path"]]}],
    )
    third = ItemFactory(
        project=project,
        external_id="n2",
        position=2,
        image_refs=[image_ref(images[4], position=0, role="input")],
    )
    (task,) = judgment_task_ensure_defaults(project=project)
    user = UserFactory(username="prefetcher")
    MembershipFactory(project=project, user=user, role="annotator")
    client = Client()
    client.force_login(user)
    return {
        "project": project,
        "task": task,
        "images": images,
        "items": [first, second, third],
        "user": user,
        "client": client,
    }


def _thumb(image: Any) -> str:
    return reverse("benchmark:image_thumb", args=[image.sha256])


def _ask(client: Client, task: Any, after: Any) -> Any:
    url = reverse("annotation:task_next_images", args=[task.pk])
    return client.get(f"{url}?after={after}", **HX)


def test_the_next_items_thumbnails_are_named_and_nothing_is_leased(
    django_assert_max_num_queries: Any,
) -> None:
    w = _world()
    client, task, images = w["client"], w["task"], w["images"]
    lease = client.post(reverse("annotation:task_next", args=[task.pk]))
    first = w["items"][0]
    assert lease["Location"] == reverse("annotation:judge", args=[task.pk, first.pk])
    page = client.get(lease["Location"]).content.decode()
    # Under a live lease the judge page leases the next item ahead (test_next_ahead.py) and
    # names its thumbnails itself; the guess below is what it asked for before.
    ahead = reverse("annotation:task_next_ahead", args=[task.pk]) + f"?after={first.pk}"
    assert f'data-ahead-url="{ahead}"' in page
    leases = list(Assignment.objects.values_list("pk", "item_id", "status", "expires_at"))
    with django_assert_max_num_queries(9):
        answer = _ask(client, task, first.pk)
    assert answer.status_code == 200
    body = answer.content.decode()
    # The second item's input and document images, as the judge page draws them.
    assert f'<link rel="prefetch" as="image" href="{_thumb(images[1])}">' in body
    assert _thumb(images[2]) in body
    for not_shown in (images[0], images[3], images[4]):  # current item, answer, third item
        assert not_shown.sha256 not in body
    # Nothing leased, nothing changed: "next" after the submit leases the guessed item.
    assert list(Assignment.objects.values_list("pk", "item_id", "status", "expires_at")) == leases
    client.post(lease["Location"], {"value": '"keep"'})
    nxt = client.post(reverse("annotation:task_next", args=[task.pk]))
    assert nxt["Location"] == reverse("annotation:judge", args=[task.pk, w["items"][1].pk])


def test_an_item_pushed_to_the_user_is_the_guess_as_it_is_leased_first() -> None:
    w = _world()
    client, task, images = w["client"], w["task"], w["images"]
    client.post(reverse("annotation:task_next", args=[task.pk]))
    ItemPushFactory(task=task, item=w["items"][2], user=w["user"])
    body = _ask(client, task, w["items"][0].pk).content.decode()
    assert _thumb(images[4]) in body and images[1].sha256 not in body


def test_a_task_judged_blind_on_its_own_screen_names_nothing() -> None:
    """Blind solving (scheme text, author plus two) has its own screen: no guess at all,
    so nothing of the next blind item (not even which images it has) reaches the browser."""
    w = _world()
    blind = JudgmentTaskFactory(
        project=w["project"], name="Solve blind", scheme="text", consensus="author_plus_two"
    )
    answer = _ask(w["client"], blind, w["items"][0].pk)
    assert answer.status_code == 200
    body = answer.content.decode()
    assert "<link" not in body
    assert not any(image.sha256 in body for image in w["images"])


def test_bad_input_and_other_projects() -> None:
    w = _world()
    assert _ask(w["client"], w["task"], "x").status_code == 400
    assert b"after" in _ask(w["client"], w["task"], "").content
    outsider = Client()
    outsider.force_login(UserFactory(username="elsewhere"))
    assert _ask(outsider, w["task"], w["items"][0].pk).status_code == 404
