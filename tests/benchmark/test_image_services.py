"""Image uploads and derived images: what gets stored, what gets refused and why."""

from __future__ import annotations

import hashlib
import io
import json
import struct
import zlib
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image as PILImage

from benchmark.exceptions import Forbidden, NotFound, ValidationFailed
from benchmark.images import services as image_services
from benchmark.imaging import ops
from benchmark.models import Image, Project
from tests.factories import ImageFactory, ProjectFactory, png_bytes
from tests.shared_data import SHARED_DATA

pytestmark = pytest.mark.django_db

AMME_IMAGES = SHARED_DATA / "agentic-mme" / "images"


def encode(img: PILImage.Image, fmt: str = "PNG", **kwargs: Any) -> bytes:
    out = io.BytesIO()
    img.save(out, format=fmt, **kwargs)
    return out.getvalue()


def upload(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def png_with_header_size(width: int, height: int) -> bytes:
    """A tiny PNG file whose header claims ``width`` x ``height`` (a decompression bomb: a
    few hundred bytes that would decode to gigabytes)."""
    data = encode(PILImage.new("L", (8, 8)))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    patched = struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk) & 0xFFFFFFFF)
    return data[:8] + patched + data[8 + 25 :]


def photo(size: tuple[int, int] = (120, 80)) -> PILImage.Image:
    """An image whose pixels say where they are (so crops can be checked pixel by pixel)."""
    width, height = size
    img = PILImage.new("RGB", size)
    img.putdata([(x % 256, y % 256, (x * y) % 256) for y in range(height) for x in range(width)])
    return img


@pytest.fixture
def member(users: dict[str, Any]) -> Any:
    return users["annotator"]


# --------------------------------------------------------------------------- uploads


def test_upload_stores_by_hash_with_thumbnail_in_the_project(project: Project, member: Any) -> None:
    data = encode(photo())
    [image] = image_services.image_upload(
        project=project, user=member, files=[upload("a.png", data)]
    )
    assert image.sha256 == hashlib.sha256(data).hexdigest()
    assert (image.width, image.height, image.format) == (120, 80, "PNG")
    assert image.thumbnail and image.file.read() == data
    assert list(image.projects.all()) == [project]
    assert image.source is None and image.recipe == {}


def test_upload_is_all_or_nothing_and_names_every_bad_file(project: Project, member: Any) -> None:
    files = [
        upload("good.png", encode(photo())),
        upload("notes.png", b"these are my notes, not a picture"),
        upload("empty.jpg", b""),
    ]
    with pytest.raises(ValidationFailed) as exc:
        image_services.image_upload(project=project, user=member, files=files)
    assert "notes.png: not a readable image" in exc.value.message
    assert "empty.jpg: the file is empty" in exc.value.message
    assert "good.png" not in exc.value.message
    assert not Image.objects.exists()


def test_upload_each_keeps_the_good_files_and_reports_the_bad(
    project: Project, member: Any
) -> None:
    good = encode(photo())
    outcomes = image_services.image_upload_each(
        project=project,
        user=member,
        files=[upload("one.png", good), upload("script.png", b"#!/bin/sh\necho hi\n")],
    )
    assert [o.ok for o in outcomes] == [True, False]
    assert outcomes[0].image is not None and outcomes[0].image.projects.filter(pk=project.pk)
    assert outcomes[1].error.startswith("script.png: not a readable image")
    assert Image.objects.count() == 1


def test_a_truncated_image_is_refused(project: Project, member: Any) -> None:
    data = encode(photo((400, 300)), "JPEG", quality=90)
    with pytest.raises(ValidationFailed, match="cut.jpg: not a readable image"):
        image_services.image_upload(
            project=project, user=member, files=[upload("cut.jpg", data[: len(data) // 2])]
        )
    assert not Image.objects.exists()


def test_a_decompression_bomb_is_refused_before_decoding(project: Project, member: Any) -> None:
    bomb = png_with_header_size(100_000, 100_000)
    assert len(bomb) < 200
    with pytest.raises(ValidationFailed) as exc:
        image_services.image_upload(project=project, user=member, files=[upload("bomb.png", bomb)])
    assert exc.value.message == (
        "bomb.png: image is 10000.0 megapixels (a decompression bomb); the limit is 40.0 megapixels"
    )


def test_a_100_megapixel_image_is_refused_with_the_limit(project: Project, member: Any) -> None:
    outcomes = image_services.image_upload_each(
        project=project,
        user=member,
        files=[upload("huge.png", png_with_header_size(10_000, 10_000))],
    )
    assert not outcomes[0].ok
    assert outcomes[0].error == (
        "huge.png: image is 10000x10000 = 100.0 megapixels; the limit is 40.0 megapixels"
    )


def test_a_file_over_the_size_limit_is_refused(
    project: Project, member: Any, settings: Any
) -> None:
    settings.BENCHWRIGHT_MAX_UPLOAD_BYTES = 1000
    data = encode(photo((200, 200)))
    assert len(data) > 1000
    with pytest.raises(ValidationFailed, match=r"big.png: file is 0.\d MB; the limit is 0.0 MB"):
        image_services.image_upload(project=project, user=member, files=[upload("big.png", data)])


def test_the_format_comes_from_the_content_not_the_name(project: Project, member: Any) -> None:
    [image] = image_services.image_upload(
        project=project, user=member, files=[upload("photo.png", encode(photo(), "JPEG"))]
    )
    assert image.format == "JPEG" and image.file.name.endswith(".jpg")


def test_exif_orientation_is_applied(project: Project, member: Any) -> None:
    """A camera JPEG stored sideways with EXIF orientation 6 ("rotate 90° clockwise to view")
    is stored upright, so its pixel coordinates are the ones a viewer shows."""
    raw = PILImage.new("RGB", (60, 30), (0, 0, 255))
    raw.paste((255, 0, 0), (0, 0, 10, 10))  # a red mark at the stored top-left
    exif = PILImage.Exif()
    exif[0x0112] = 6
    data = encode(raw, "JPEG", quality=95, exif=exif.tobytes())
    [outcome] = image_services.image_upload_each(
        project=project, user=member, files=[upload("camera.jpg", data)]
    )
    image = outcome.image
    assert image is not None
    assert (image.width, image.height) == (30, 60)
    assert outcome.note == "EXIF orientation applied"
    stored = PILImage.open(image.file)
    assert stored.getexif().get(0x0112) in (None, 1)
    red, green, blue = stored.convert("RGB").getpixel((25, 4))  # now at the top-right
    assert red > 200 and blue < 60
    # Uploading the same camera file again finds the stored copy.
    [again] = image_services.image_upload_each(
        project=project, user=member, files=[upload("camera-copy.jpg", data)]
    )
    assert again.image == image and again.duplicate


def test_a_format_browsers_cannot_show_is_stored_as_png(project: Project, member: Any) -> None:
    [outcome] = image_services.image_upload_each(
        project=project, user=member, files=[upload("scan.tif", encode(photo(), "TIFF"))]
    )
    assert outcome.image is not None and outcome.image.format == "PNG"
    assert outcome.note == "converted from TIFF to PNG"


def test_duplicates_are_stored_once_and_shared_between_projects(
    project: Project, other_project: Project, member: Any, users: dict[str, Any]
) -> None:
    data = encode(photo())
    [first] = image_services.image_upload_each(
        project=project, user=member, files=[upload("a.png", data)]
    )
    [second] = image_services.image_upload_each(
        project=project, user=member, files=[upload("copy-of-a.png", data)]
    )
    [third] = image_services.image_upload_each(
        project=other_project, user=users["outsider"], files=[upload("b.png", data)]
    )
    # Stored once, but "duplicate" only within a project: another project's images must
    # not show (defect 14; see tests/benchmark/test_visibility_leaks.py).
    assert not first.duplicate and second.duplicate and not third.duplicate
    assert first.image == second.image == third.image
    assert Image.objects.count() == 1
    assert set(first.image.projects.all()) == {project, other_project}  # type: ignore[union-attr]


def test_only_members_may_upload(project: Project, users: dict[str, Any]) -> None:
    with pytest.raises(Forbidden):
        image_services.image_upload(
            project=project, user=users["outsider"], files=[upload("a.png", png_bytes(1))]
        )
    assert not Image.objects.exists()


# --------------------------------------------------------------------------- derive


@pytest.fixture
def source(project: Project, member: Any) -> Image:
    [image] = image_services.image_upload(
        project=project, user=member, files=[upload("photo.png", encode(photo()))]
    )
    return image


def crop_recipe(source: Image, bbox: list[float], **params: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "source_sha256": source.sha256,
        "steps": [{"op": "crop", "params": {"bbox_2d": bbox, **params}}],
    }


def test_derive_stores_the_crop_with_its_source_and_normalized_recipe(
    project: Project, member: Any, source: Image
) -> None:
    derived = image_services.image_derive(
        project=project, user=member, recipe=crop_recipe(source, [100, 250, 500, 750])
    )
    # 0-1000 of a 120x80 image: int(v / 1000 * side) -> [12, 20, 60, 60]
    assert (derived.width, derived.height) == (48, 40)
    assert derived.source == source
    assert derived.recipe == {
        "version": 1,
        "source_sha256": source.sha256,
        "steps": [
            {"op": "crop", "params": {"bbox_2d": [100.0, 250.0, 500.0, 750.0], "zoom_scale": 1.0}}
        ],
    }
    assert derived.format == "PNG" and derived.thumbnail
    assert derived.sha256 == hashlib.sha256(derived.file.read()).hexdigest()
    pixels = PILImage.open(derived.file).convert("RGB")
    assert pixels.getpixel((0, 0)) == (12, 20, 240)  # source pixel (12, 20)
    assert list(derived.projects.all()) == [project]


def test_deriving_the_same_recipe_twice_gives_the_same_row(
    project: Project, member: Any, source: Image
) -> None:
    first = image_services.image_derive(
        project=project, user=member, recipe=crop_recipe(source, [100, 250, 500, 750])
    )
    # The same recipe written differently (defaults spelt out, an int zoom, as JSON text).
    again = image_services.image_derive(
        project=project,
        user=member,
        recipe=json.dumps(
            {
                "source_sha256": source.sha256,
                "steps": [
                    {"op": "CROP", "params": {"bbox_2d": [100, 250, 500, 750], "zoom_scale": 1}}
                ],
            }
        ),
    )
    assert again.pk == first.pk
    assert Image.objects.count() == 2


def test_a_box_drawn_in_pixels_crops_exactly_those_pixels(project: Project, member: Any) -> None:
    """The editor's rule: a pixel edge p becomes the smallest whole 0-1000 value v with
    int(v / 1000 * side) >= p; the server crops int(v / 1000 * side). On Agentic-MME's
    1200x800 street scene, the sign's box in pixels comes back exactly."""
    data = (AMME_IMAGES / "image_0001.png").read_bytes()
    [src] = image_services.image_upload(
        project=project, user=member, files=[upload("image_0001.png", data)]
    )

    def px_to_unit(p: int, side: int) -> int:  # the editor's pxToUnit, line for line
        if p <= 0:
            return 0
        if p >= side:
            return 1000
        u = -(-p * 1000 // side)
        while u > 0 and int((u - 1) / 1000 * side) >= p:
            u -= 1
        while u < 1000 and int(u / 1000 * side) < p:
            u += 1
        return u

    # The README's box for the "WILLOW ST" sign, [769, 403, 850, 452], in pixels:
    assert ops.bbox_to_pixels([769, 403, 850, 452], (1200, 800)) == (922, 322, 1020, 361)
    drawn_px = [922, 322, 1020, 361]
    bbox = [
        px_to_unit(drawn_px[0], 1200),
        px_to_unit(drawn_px[1], 800),
        px_to_unit(drawn_px[2], 1200),
        px_to_unit(drawn_px[3], 800),
    ]
    assert bbox == [769, 403, 850, 452]
    derived = image_services.image_derive(
        project=project, user=member, recipe=crop_recipe(src, bbox)
    )
    expected = PILImage.open(io.BytesIO(data)).convert("RGB").crop(tuple(drawn_px))
    assert (derived.width, derived.height) == expected.size == (98, 39)
    assert PILImage.open(derived.file).convert("RGB").tobytes() == expected.tobytes()
    # On a side of at most 1000 pixels every pixel edge is reachable exactly.
    for side in (1, 7, 333, 640, 999, 1000):
        for p in range(side + 1):
            assert int(px_to_unit(p, side) / 1000 * side) == p


@pytest.mark.parametrize(
    ("bbox", "message"),
    [
        (
            [0, 0, 1001, 10],
            "step 1 (crop): crop: bbox_2d [0, 0, 1001, 10] is outside the image: "
            "coordinates are on a 0-1000 scale",
        ),
        ([-5, 0, 100, 100], "is outside the image"),
        ([300, 100, 300, 200], "is empty or reversed: x1 (300) must be less than x2 (300)"),
        ([300, 500, 400, 200], "is empty or reversed: y1 (500) must be less than y2 (200)"),
        ([500, 500, 504, 504], "covers no whole pixel of a 120x80 image"),
    ],
)
def test_a_bad_crop_box_gets_a_clear_message_and_stores_nothing(
    project: Project, member: Any, source: Image, bbox: list[float], message: str
) -> None:
    with pytest.raises(ValidationFailed) as exc:
        image_services.image_derive(project=project, user=member, recipe=crop_recipe(source, bbox))
    assert message in exc.value.message
    assert Image.objects.count() == 1


def test_a_pixel_box_outside_the_image_is_refused(
    project: Project, member: Any, source: Image
) -> None:
    recipe = {
        "source_sha256": source.sha256,
        "steps": [{"op": "crop", "params": {"box": [10, 10, 130, 50]}}],
    }
    with pytest.raises(ValidationFailed, match=r"box \[10, 10, 130, 50\] is outside the 120x80"):
        image_services.image_derive(project=project, user=member, recipe=recipe)


@pytest.mark.parametrize(
    ("recipe", "message"),
    [
        ("not json", "recipe: not valid JSON"),
        ("", "recipe: missing"),
        ({"steps": []}, "recipe: source_sha256 is required"),
        ({"source_sha256": "SRC", "steps": []}, "add at least one operation"),
        ({"source_sha256": "SRC", "steps": [{"op": "warp"}]}, "unknown operation 'warp'"),
        (
            {"source_sha256": "SRC", "steps": [{"op": "rotate", "params": {"angle": "left"}}]},
            "step 1 (rotate): rotate: angle must be a number, not str 'left'",
        ),
    ],
)
def test_a_bad_recipe_says_what_is_wrong(
    project: Project, member: Any, source: Image, recipe: Any, message: str
) -> None:
    if isinstance(recipe, dict) and recipe.get("source_sha256") == "SRC":
        recipe = {**recipe, "source_sha256": source.sha256}
    with pytest.raises(ValidationFailed) as exc:
        image_services.image_derive(project=project, user=member, recipe=recipe)
    assert message in exc.value.message


def test_the_source_must_be_an_image_of_the_project(
    project: Project, other_project: Project, member: Any
) -> None:
    elsewhere = ImageFactory(projects=[other_project])
    with pytest.raises(NotFound, match="is not an image of project"):
        image_services.image_derive(
            project=project, user=member, recipe=crop_recipe(elsewhere, [0, 0, 500, 500])
        )
    assert not elsewhere.derived.exists()


def test_derive_by_an_outsider_is_refused(
    project: Project, users: dict[str, Any], source: Image
) -> None:
    with pytest.raises(Forbidden):
        image_services.image_derive(
            project=project, user=users["outsider"], recipe=crop_recipe(source, [0, 0, 500, 500])
        )


def test_several_operations_after_a_geometric_one(
    project: Project, member: Any, source: Image
) -> None:
    recipe = {
        "version": 1,
        "source_sha256": source.sha256,
        "steps": [
            {"op": "flip", "params": {"direction": "horizontal"}},
            {"op": "crop", "params": {"bbox_2d": [0, 0, 500, 500], "zoom_scale": 2}},
            {"op": "rotate", "params": {"angle": 90}},
            {"op": "enhance", "params": {"brightness": 1.5}},
            {"op": "grayscale"},
        ],
    }
    derived = image_services.image_derive(project=project, user=member, recipe=recipe)
    # flip keeps 120x80; crop [0,0,60,40] x2 = 120x80; rotate 90 = 80x120
    assert (derived.width, derived.height) == (80, 120)
    assert PILImage.open(derived.file).mode == "L"


def test_preview_does_not_store_and_scales_large_results(
    project: Project, member: Any, source: Image, settings: Any
) -> None:
    preview = image_services.image_preview(
        project=project,
        user=member,
        recipe={
            "source_sha256": source.sha256,
            "steps": [{"op": "resize", "params": {"scale": 10}}],
        },
    )
    assert (preview.width, preview.height) == (1200, 800)
    assert not preview.scaled
    assert PILImage.open(io.BytesIO(preview.data)).size == (1200, 800)
    big = image_services.image_preview(
        project=project,
        user=member,
        recipe={
            "source_sha256": source.sha256,
            "steps": [{"op": "resize", "params": {"width": 4096}}],
        },
    )
    assert (big.width, big.height, big.scaled) == (4096, 2731, True)
    assert PILImage.open(io.BytesIO(big.data)).size == (2048, 1366)
    # No steps previews the source itself (the editor shows what a crop receives).
    plain = image_services.image_preview(
        project=project, user=member, recipe={"source_sha256": source.sha256, "steps": []}
    )
    assert (plain.width, plain.height) == (120, 80)
    assert Image.objects.count() == 1


# --------------------------------------------------------------------------- check


def test_recipe_check_rederives_and_compares(project: Project, member: Any, source: Image) -> None:
    derived = image_services.image_derive(
        project=project, user=member, recipe=crop_recipe(source, [100, 250, 500, 750], zoom_scale=2)
    )
    result = image_services.image_recipe_check(image=derived)
    assert result.ok and result.actual_sha256 == derived.sha256

    # Someone edits the recipe in the database: the check says the hashes differ.
    derived.recipe["steps"][0]["params"]["zoom_scale"] = 3.0
    result = image_services.image_recipe_check(image=derived)
    assert not result.ok
    assert f"expected {derived.sha256}" in result.reason

    assert not image_services.image_recipe_check(image=source).ok
    assert "uploaded, not derived" in image_services.image_recipe_check(image=source).reason


def test_an_upload_equal_to_a_derived_image_gains_its_recipe(
    project: Project, member: Any, source: Image
) -> None:
    """When the exact bytes were uploaded before, deriving them records how they are made."""
    from benchmark.imaging.recipe import render_bytes

    expected = render_bytes(photo().crop((12, 20, 60, 60)))
    [uploaded] = image_services.image_upload(
        project=project, user=member, files=[upload("crop.png", expected)]
    )
    derived = image_services.image_derive(
        project=project, user=member, recipe=crop_recipe(source, [100, 250, 500, 750])
    )
    assert derived.pk == uploaded.pk
    assert derived.source == source and derived.recipe["steps"][0]["op"] == "crop"
    assert image_services.image_recipe_check(image=derived).ok


def test_each_project_sees_its_own_derived_images(
    project: Project, member: Any, source: Image
) -> None:
    another = ProjectFactory(name="A third project")
    derived = image_services.image_derive(
        project=project, user=member, recipe=crop_recipe(source, [0, 0, 500, 500])
    )
    assert not derived.projects.filter(pk=another.pk).exists()
