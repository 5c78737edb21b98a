"""Upload an image through the file picker, draw a crop box with the mouse, nudge it with an
arrow key, preview, save; reload the derived image's page and see the same box and recipe."""

from __future__ import annotations

import io
import json

import pytest
from playwright.sync_api import expect

from benchmark.imaging import ops
from benchmark.models import Image, Role
from tests.factories import MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

WIDTH, HEIGHT = 640, 480


def photo_png() -> bytes:
    from PIL import Image as PILImage

    img = PILImage.new("RGB", (WIDTH, HEIGHT))
    img.putdata(
        [(x * 255 // WIDTH, y * 255 // HEIGHT, 128) for y in range(HEIGHT) for x in range(WIDTH)]
    )
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def hidden(page, name):  # type: ignore[no-untyped-def]
    value = page.locator(f"input[name={name}]").input_value()
    return json.loads(value) if value else None


def test_upload_crop_nudge_save_and_reload(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Agentic sample", kind="trajectory")
    user = UserFactory(username="ann")
    MembershipFactory(project=project, user=user, role=Role.ANNOTATOR)
    page = login_page(user)

    # Upload: one good file and one that only pretends to be an image.
    page.goto(f"/projects/{project.pk}/images/")
    page.locator("input[type=file][name=files]").set_input_files(
        [
            {"name": "street.png", "mimeType": "image/png", "buffer": photo_png()},
            {"name": "fake.png", "mimeType": "image/png", "buffer": b"not an image at all"},
        ]
    )
    rows = page.locator(".upload-row")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("stored")
    expect(rows.nth(1)).to_contain_text("fake.png: not a readable image")
    expect(page.locator("[data-upload-label]")).to_have_text("2 files done")
    expect(page.locator("#image-grid .image-tile")).to_have_count(1)
    source = Image.objects.get()

    # Open the editor from the upload result.
    rows.nth(0).get_by_role("link", name="open in the editor").click()
    expect(page).to_have_url(
        f"{page.url.split('/projects')[0]}/projects/{project.pk}/images/{source.sha256}/edit/"
    )
    stage_img = page.locator("[data-ie=img]")
    expect(stage_img).to_be_visible()
    page.wait_for_function("() => document.querySelector('[data-ie=img]').complete")

    # The JS and the server turn 0-1000 into pixels the same way.
    samples = [
        [v, side]
        for side in (1, 7, 480, 640, 1200, 6000)
        for v in [*range(1, 1001, 7), 1000, 333.3, 769.5]
        if v / 1000 * side >= 1
    ]
    js = page.evaluate("(s) => s.map(([v, side]) => window.ImageEditor.unitToPx(v, side))", samples)
    py = [ops.bbox_to_pixels([0, 0, v, 1000], (side, side))[2] for v, side in samples]
    assert js == py

    # Draw a box with the mouse, from about 20% to 60% across and 25% to 75% down.
    canvas = page.locator("[data-ie=canvas]")
    box = canvas.bounding_box()
    assert box is not None
    x0, y0 = box["x"] + box["width"] * 0.2, box["y"] + box["height"] * 0.25
    x1, y1 = box["x"] + box["width"] * 0.6, box["y"] + box["height"] * 0.75
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x1, y1, steps=6)
    page.mouse.up()
    expect(page.locator("[data-ie=box]")).to_be_visible()
    drawn = hidden(page, "recipe")["steps"][0]["params"]["bbox_2d"]
    assert all(abs(a - b) <= 3 for a, b in zip(drawn, [200, 250, 600, 750], strict=True))
    assert hidden(page, "box_px") == list(ops.bbox_to_pixels(drawn, (WIDTH, HEIGHT)))

    # Nudge right by one pixel with the keyboard (on 640 px, 2 units of 0-1000 = 1.28 px).
    ready(page)
    page.locator("[data-ie=stage]").focus()
    page.keyboard.press("ArrowRight")
    nudged = hidden(page, "recipe")["steps"][0]["params"]["bbox_2d"]
    assert nudged == [drawn[0] + 2, drawn[1], drawn[2] + 2, drawn[3]]
    box_px = hidden(page, "box_px")
    assert box_px == list(ops.bbox_to_pixels(nudged, (WIDTH, HEIGHT)))
    # The numeric inputs follow the box, in both scales.
    expect(page.locator("[data-ie-bbox='0']")).to_have_value(str(nudged[0]))
    expect(page.locator("[data-ie-px='2']")).to_have_value(str(box_px[2]))

    # Type an exact pixel edge: the box follows.
    page.locator("[data-ie-px='3']").fill("300")
    page.locator("[data-ie-px='3']").press("Enter")
    expect(page.locator("[data-ie-bbox='3']")).to_have_value("625")
    box_px = hidden(page, "box_px")
    assert box_px[3] == 300

    # Preview (server-rendered) shows the crop's size.
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("[data-ie=preview-info]")).to_have_text(
        f"Result: {box_px[2] - box_px[0]} × {box_px[3] - box_px[1]} px."
    )

    saved_recipe = hidden(page, "recipe")
    with page.expect_navigation():
        page.get_by_role("button", name="Save derived image").click()
    derived = Image.objects.exclude(pk=source.pk).get()
    assert derived.source == source
    assert (derived.width, derived.height) == (box_px[2] - box_px[0], box_px[3] - box_px[1])
    assert (
        derived.recipe["steps"][0]["params"]["bbox_2d"]
        == saved_recipe["steps"][0]["params"]["bbox_2d"]
    )
    assert page.url.endswith(f"/projects/{project.pk}/images/{derived.sha256}/edit/")

    # Reload: the same box, in both scales, and the recipe check passes.
    page.reload()
    expect(page.locator("[data-ie=box]")).to_be_visible()
    expect(page.locator("#recipe-check")).to_contain_text("the hash matches")
    assert hidden(page, "box_px") == box_px
    restored = hidden(page, "recipe")["steps"][0]["params"]["bbox_2d"]
    assert restored == saved_recipe["steps"][0]["params"]["bbox_2d"]
    for i, value in enumerate(restored):
        expect(page.locator(f"[data-ie-bbox='{i}']")).to_have_value(str(int(value)))
    expect(page.locator("#recipe-json")).to_contain_text('"bbox_2d"')
