"""The images page (upload), the editor's preview and derive endpoints, and the editor page."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from PIL import Image as PILImage

from benchmark.images import services as image_services
from benchmark.models import Image, Project
from tests.factories import ImageFactory

pytestmark = pytest.mark.django_db


def png(size: tuple[int, int] = (200, 100), color: tuple[int, int, int] = (10, 120, 200)) -> bytes:
    img = PILImage.new("RGB", size, color)
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


def crop(source: Image, bbox: list[int], **extra: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "source_sha256": source.sha256,
        "steps": [{"op": "crop", "params": {"bbox_2d": bbox, **extra}}],
    }


# --------------------------------------------------------------------------- upload


def test_upload_several_files_with_one_bad_keeps_the_good_ones(
    project: Project, annotator: Client
) -> None:
    files = [
        SimpleUploadedFile("a.png", png(color=(1, 2, 3))),
        SimpleUploadedFile("readme.png", b"I am text"),
        SimpleUploadedFile("b.png", png(color=(4, 5, 6))),
    ]
    response = annotator.post(
        f"/projects/{project.pk}/images/", {"files": files}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 200
    results = response.json()["results"]
    assert [(r["name"], r["ok"]) for r in results] == [
        ("a.png", True),
        ("readme.png", False),
        ("b.png", True),
    ]
    assert results[1]["error"].startswith("readme.png: not a readable image")
    assert results[0]["image"]["edit_url"] == (
        f"/projects/{project.pk}/images/{results[0]['image']['sha256']}/edit/"
    )
    assert project.images.count() == 2


def test_upload_without_javascript_shows_each_result_on_the_page(
    project: Project, annotator: Client
) -> None:
    files = [SimpleUploadedFile("a.png", png()), SimpleUploadedFile("bad.jpg", b"\xff\xd8nope")]
    response = annotator.post(f"/projects/{project.pk}/images/", {"files": files})
    assert response.status_code == 200
    page = response.content.decode()
    assert "a.png" in page and "stored" in page
    assert "bad.jpg: not a readable image" in page
    assert "1 image" in page


def test_upload_with_only_bad_files_answers_400_with_the_reasons(
    project: Project, annotator: Client
) -> None:
    response = annotator.post(
        f"/projects/{project.pk}/images/",
        {"files": [SimpleUploadedFile("x.gif", b"GIF89a broken")]},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 400
    assert response.json()["results"][0]["error"].startswith("x.gif: not a readable image")
    empty = annotator.post(f"/projects/{project.pk}/images/", HTTP_ACCEPT="application/json")
    assert empty.status_code == 400
    assert "no files" in empty.json()["error"]


def test_images_page_lists_the_project_images_only(
    project: Project, other_project: Project, annotator: Client, django_assert_max_num_queries: Any
) -> None:
    mine = [ImageFactory(projects=[project]) for _ in range(5)]
    theirs = ImageFactory(projects=[other_project])
    with django_assert_max_num_queries(8):
        response = annotator.get(f"/projects/{project.pk}/images/")
    page = response.content.decode()
    assert all(img.sha256 in page for img in mine)
    assert theirs.sha256 not in page
    assert "5 images" in page
    fragment = annotator.get(
        f"/projects/{project.pk}/images/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="image-grid"
    )
    assert fragment.content.decode().lstrip().startswith('<section id="image-grid"')


# --------------------------------------------------------------------------- preview


def test_preview_answers_the_derived_png_without_storing(
    project: Project, annotator: Client, source: Image
) -> None:
    response = annotator.post(
        f"/projects/{project.pk}/images/preview/",
        json.dumps(crop(source, [0, 0, 500, 500], zoom_scale=2)),
        content_type="application/json",
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert (response["X-Image-Width"], response["X-Image-Height"]) == ("200", "100")
    assert PILImage.open(io.BytesIO(response.content)).size == (200, 100)
    assert Image.objects.count() == 1


def test_preview_accepts_the_recipe_as_a_form_field(
    project: Project, annotator: Client, source: Image
) -> None:
    response = annotator.post(
        f"/projects/{project.pk}/images/preview/",
        {"recipe": json.dumps(crop(source, [0, 0, 250, 500]))},
    )
    assert response.status_code == 200
    assert PILImage.open(io.BytesIO(response.content)).size == (50, 50)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{oops", "request body: not valid JSON"),
        ('{"source_sha256": "SRC", "steps": [{"op": "crop", "params": {"bbox_2d": [0, 0, 2000, 5]}}]}',
         "bbox_2d [0, 0, 2000, 5] is outside the image"),
        ('{"source_sha256": "SRC", "steps": [{"op": "crop", "params": {"bbox_2d": [10, 10, 11, 11]}}]}',
         "covers no whole pixel of a 200x100 image"),
    ],
)  # fmt: skip
def test_preview_says_what_is_wrong_with_400(
    project: Project, annotator: Client, source: Image, body: str, message: str
) -> None:
    response = annotator.post(
        f"/projects/{project.pk}/images/preview/",
        body.replace("SRC", source.sha256),
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/plain")
    assert message in response.content.decode()


def test_preview_of_another_projects_image_is_404(
    project: Project, other_project: Project, annotator: Client
) -> None:
    elsewhere = ImageFactory(projects=[other_project])
    response = annotator.post(
        f"/projects/{project.pk}/images/preview/",
        json.dumps(crop(elsewhere, [0, 0, 500, 500])),
        content_type="application/json",
    )
    assert response.status_code == 404
    assert "is not an image of project" in response.content.decode()


# --------------------------------------------------------------------------- derive


def test_derive_stores_and_describes_the_image(
    project: Project, annotator: Client, source: Image
) -> None:
    recipe = crop(source, [100, 200, 600, 800])
    response = annotator.post(
        f"/projects/{project.pk}/images/derive/",
        json.dumps(recipe),
        content_type="application/json",
    )
    assert response.status_code == 200
    body = response.json()
    derived = Image.objects.get(sha256=body["sha256"])
    assert derived.source == source
    assert body == {
        "sha256": derived.sha256,
        "width": 100,
        "height": 60,
        "format": "PNG",
        "url": f"/images/{derived.sha256}/",
        "thumb_url": f"/images/{derived.sha256}/thumb/",
        "edit_url": f"/projects/{project.pk}/images/{derived.sha256}/edit/",
        "recipe": derived.recipe,
        "source_sha256": source.sha256,
    }
    again = annotator.post(
        f"/projects/{project.pk}/images/derive/",
        {"recipe": json.dumps(recipe)},
    )
    assert again.json()["sha256"] == derived.sha256
    assert Image.objects.count() == 2


def test_derive_refuses_a_box_outside_with_a_json_message(
    project: Project, annotator: Client, source: Image
) -> None:
    response = annotator.post(
        f"/projects/{project.pk}/images/derive/",
        json.dumps(crop(source, [900, 0, 1200, 10])),
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "is outside the image" in response.json()["error"]
    assert Image.objects.count() == 1


# --------------------------------------------------------------------------- editor page


def test_editor_page_of_an_upload(project: Project, annotator: Client, source: Image) -> None:
    response = annotator.get(f"/projects/{project.pk}/images/{source.sha256}/edit/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "data-image-editor" in page
    assert 'name="recipe" value=""' in page
    assert f'/images/{source.sha256}/"' in page


def test_saving_from_the_editor_opens_the_derived_image_with_the_same_box(
    project: Project, annotator: Client, source: Image, django_assert_max_num_queries: Any
) -> None:
    recipe = crop(source, [100, 200, 600, 800])
    response = annotator.post(
        f"/projects/{project.pk}/images/{source.sha256}/edit/",
        {"recipe": json.dumps(recipe), "box_px": "[20, 20, 120, 80]"},
    )
    derived = Image.objects.exclude(pk=source.pk).get()
    assert response.status_code == 302
    assert response["Location"] == f"/projects/{project.pk}/images/{derived.sha256}/edit/"
    with django_assert_max_num_queries(12):
        page = annotator.get(response["Location"]).content.decode()
    # The editor opens on the source with the saved recipe, so the same box shows again.
    assert (
        f'derived from <a class="mono" href="/projects/{project.pk}/images/{source.sha256}/edit/"'
        in page
    )
    assert 'name="box_px" value="[20, 20, 120, 80]"' in page
    assert "&quot;bbox_2d&quot;:[100.0,200.0,600.0,800.0]" in page
    assert 'hx-get="?check=1"' in page
    check = annotator.get(f"/projects/{project.pk}/images/{derived.sha256}/edit/?check=1")
    assert "the hash matches" in check.content.decode()
    # The source's page lists what was made from it.
    assert (
        derived.sha256[:12]
        in annotator.get(f"/projects/{project.pk}/images/{source.sha256}/edit/").content.decode()
    )


def test_a_refused_save_keeps_the_users_box(
    project: Project, annotator: Client, source: Image
) -> None:
    recipe = crop(source, [100, 200, 100, 800])
    response = annotator.post(
        f"/projects/{project.pk}/images/{source.sha256}/edit/", {"recipe": json.dumps(recipe)}
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "Not saved: step 1 (crop): crop: bbox_2d is empty or reversed" in page
    assert "&quot;bbox_2d&quot;:[100,200,100,800]" in page  # restored into the editor
    assert Image.objects.count() == 1


def test_the_check_flags_a_tampered_recipe(
    project: Project, annotator: Client, source: Image, users: dict[str, Any]
) -> None:
    derived = image_services.image_derive(
        project=project, user=users["annotator"], recipe=crop(source, [0, 0, 500, 500])
    )
    Image.objects.filter(pk=derived.pk).update(recipe=crop(source, [0, 0, 600, 500]))
    check = annotator.get(f"/projects/{project.pk}/images/{derived.sha256}/edit/?check=1")
    assert "Check failed: re-derived artifact hashes to" in check.content.decode()


def test_an_image_of_another_project_is_404_in_mine(
    project: Project, other_project: Project, annotator: Client
) -> None:
    elsewhere = ImageFactory(projects=[other_project])
    response = annotator.get(f"/projects/{project.pk}/images/{elsewhere.sha256}/edit/")
    assert response.status_code == 404


def test_project_and_item_pages_link_to_the_images(
    project: Project, annotator: Client, source: Image
) -> None:
    from tests.factories import ItemFactory, image_ref

    item = ItemFactory(project=project, image_refs=[image_ref(source, position=0)])
    assert (
        f'href="/projects/{project.pk}/images/"'
        in annotator.get(f"/projects/{project.pk}/").content.decode()
    )
    page = annotator.get(f"/projects/{project.pk}/items/{item.pk}/").content.decode()
    assert f'href="/projects/{project.pk}/images/{source.sha256}/edit/" data-image-edit' in page
