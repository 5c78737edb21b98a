"""Recipe limits over HTTP: the editor's preview and derive endpoints, its save form and its
re-derive check answer a member 400 (or show the message) instead of spending minutes of CPU,
naming the step and the limit."""

from __future__ import annotations

import dataclasses
import io
import json
import time
from typing import Any

import pytest
from django.test import Client
from PIL import Image as PILImage

from benchmark.images import services as image_services
from benchmark.imaging import ops
from benchmark.models import Image, Project

pytestmark = pytest.mark.django_db

HUGE = "step 2 (resize): the output would be 10000×10000 = 100 MP, over the 40 MP limit"


def png(size: tuple[int, int] = (200, 100)) -> bytes:
    img = PILImage.new("RGB", size, (10, 120, 200))
    img.putpixel((0, 0), (255, 0, 0))
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


@pytest.fixture
def annotator(clients: dict[str, Client]) -> Client:
    return clients["annotator"]


@pytest.fixture
def source(project: Project, users: dict[str, Any]) -> Image:
    [image] = image_services.image_upload(
        project=project, user=users["annotator"], files=[("photo.png", png())]
    )
    return image


def recipe(source: Image, *steps: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "version": 1,
        "source_sha256": source.sha256,
        "steps": [{"op": op, "params": params} for op, params in steps],
    }


def huge(source: Image) -> dict[str, Any]:
    """A crop, then a resize to 10000×10000 and a strong denoise: minutes of CPU unchecked."""
    return recipe(
        source,
        ("crop", {"bbox_2d": [0, 0, 500, 500]}),
        ("resize", {"width": 10000, "height": 10000}),
        ("denoise", {"strength": 30}),
    )


@pytest.fixture
def no_pixel_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any operation running fails the test: refusals come before the work."""

    def spy(image: Any, op: str, params: Any = None) -> Any:
        raise AssertionError(f"{op} ran: the recipe should have been refused before any work")

    monkeypatch.setattr(ops, "apply", spy)


@pytest.fixture
def slow_sharpen(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    ran: list[str] = []

    def run(image: PILImage.Image) -> PILImage.Image:
        ran.append("sharpen")
        time.sleep(0.03)
        return image.copy()

    monkeypatch.setitem(ops.OPS, "sharpen", dataclasses.replace(ops.OPS["sharpen"], run=run))
    return ran


def post(client: Client, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


def test_preview_of_a_resize_to_10000_by_10000_answers_400_naming_the_step(
    project: Project, annotator: Client, source: Image, no_pixel_work: None
) -> None:
    response = post(annotator, f"/projects/{project.pk}/images/preview/", huge(source))
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/plain")
    assert response.content.decode() == HUGE


def test_derive_of_a_21_step_recipe_answers_400_naming_the_limit(
    project: Project, annotator: Client, source: Image
) -> None:
    legit = recipe(
        source,
        ("crop", {"bbox_2d": [0, 0, 500, 1000], "zoom_scale": 2}),
        ("rotate", {"angle": 30}),
        ("denoise", {"strength": 10}),
        *[("flip", {})] * 17,
    )
    preview = post(annotator, f"/projects/{project.pk}/images/preview/", legit)
    assert preview.status_code == 200, preview.content
    derived = post(annotator, f"/projects/{project.pk}/images/derive/", legit)
    assert derived.status_code == 200, derived.content
    assert len(derived.json()["recipe"]["steps"]) == 20
    stored = Image.objects.count()

    body = recipe(source, *[("flip", {})] * 21)
    response = post(annotator, f"/projects/{project.pk}/images/derive/", body)
    assert response.status_code == 400
    assert response.json() == {"error": "recipe: 21 steps, over the limit of 20 steps per recipe"}
    assert Image.objects.count() == stored


def test_derive_of_a_resize_to_10000_by_10000_answers_400_and_stores_nothing(
    project: Project, annotator: Client, source: Image, no_pixel_work: None
) -> None:
    over = post(annotator, f"/projects/{project.pk}/images/derive/", huge(source))
    assert over.status_code == 400
    assert over.json() == {"error": HUGE}
    assert Image.objects.count() == 1  # only the source


def test_the_editor_save_form_shows_the_limit_and_stores_nothing(
    project: Project, annotator: Client, source: Image, no_pixel_work: None
) -> None:
    response = annotator.post(
        f"/projects/{project.pk}/images/{source.sha256}/edit/",
        {"recipe": json.dumps(huge(source))},
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert f"Not saved: {HUGE}" in page
    assert Image.objects.count() == 1


def test_a_derivation_past_the_time_limit_answers_400(
    project: Project,
    annotator: Client,
    source: Image,
    slow_sharpen: list[str],
    settings: Any,
) -> None:
    settings.BENCHWRIGHT_DERIVE_SECONDS = 0.01
    body = recipe(source, ("sharpen", {}), ("sharpen", {}), ("sharpen", {}))
    response = post(annotator, f"/projects/{project.pk}/images/preview/", body)
    assert response.status_code == 400
    assert response.content.decode().startswith(
        "the recipe took longer than the 0.01 s limit: stopped after step 1 (sharpen) of 3"
    )
    assert slow_sharpen == ["sharpen"]
    derive = post(annotator, f"/projects/{project.pk}/images/derive/", body)
    assert derive.status_code == 400
    assert "took longer than the 0.01 s limit" in derive.json()["error"]
    assert Image.objects.count() == 1


def test_the_re_derive_check_of_a_stored_over_limit_recipe_says_why(
    project: Project,
    annotator: Client,
    source: Image,
    users: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    derived = image_services.image_derive(
        project=project, user=users["annotator"], recipe=recipe(source, ("flip", {}))
    )
    Image.objects.filter(pk=derived.pk).update(recipe=huge(source))  # e.g. stored before limits

    def spy(image: Any, op: str, params: Any = None) -> Any:
        raise AssertionError(f"{op} ran")

    monkeypatch.setattr(ops, "apply", spy)
    check = annotator.get(f"/projects/{project.pk}/images/{derived.sha256}/edit/?check=1")
    assert check.status_code == 200
    assert f"Check failed: cannot re-derive: {HUGE}" in check.content.decode()
