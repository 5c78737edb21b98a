"""The trajectory editor on a laptop screen (issue 25, finding 7): at 1366×768 the demo's
longest reference trajectory fits in about two screens with its steps folded; a step unfolds
by its button or Alt+O; images are picked by thumbnail; and a new crop box becomes the bbox_2d
of the step's Arguments JSON."""

from __future__ import annotations

import json
import os
import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from benchmark.models import Item, Project
from review.demo import demo_load

pytestmark = pytest.mark.django_db(transaction=True)

SCREEN = {"width": 1366, "height": 768}


def settle(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def test_editor_folds_picks_by_thumbnail_and_args_follow_the_crop(  # type: ignore[no-untyped-def]
    login_page, ready
) -> None:
    demo_load()
    project = Project.objects.get(data_format="agentic-mme")
    item = Item.objects.get(project=project, external_id="demo04")  # five steps, the longest
    user = get_user_model().objects.get(username="reviewer")
    page = login_page(user)
    page.set_viewport_size(SCREEN)
    page.goto(f"/projects/{project.pk}/trajectories/items/{item.pk}/")
    ready(page)
    steps = page.locator("li.traj-step")
    expect(steps).to_have_count(5)
    # Folded: one line each, its intent in the line; the page within about two screens.
    for n in range(5):
        expect(steps.nth(n)).to_have_class(re.compile(r"\bis-folded\b"))
        expect(steps.nth(n).locator("[data-step-summary]")).to_be_visible()
        expect(steps.nth(n).locator(".traj-step-body")).to_be_hidden()
    height = page.evaluate("() => document.documentElement.scrollHeight")
    if os.environ.get("BENCHWRIGHT_SHOTS"):
        page.screenshot(path="/tmp/traj-folded.png", full_page=True)
    assert height <= 2 * SCREEN["height"], f"the editor is {height} px tall with steps folded"
    # No field is cut: every pixel field shows a four-digit value in full.
    first = steps.nth(0)
    first.locator("[data-fold]").click()
    expect(first.locator(".traj-step-body")).to_be_visible()
    expect(first.locator("[data-fold]")).to_have_attribute("aria-expanded", "true")
    pixels = first.locator("[data-ie-px]")
    for i in range(4):
        field = pixels.nth(i)
        assert field.evaluate(
            "el => { const v = el.value; el.value = '1200'; "
            "const fits = el.scrollWidth <= el.clientWidth && el.clientWidth >= 40; "
            "el.value = v; return fits; }"
        ), "a pixel field is too narrow for four digits"

    # Alt+O folds the step holding the focus, and unfolds it again.
    first.locator("[name='steps-0-intent']").focus()
    page.keyboard.press("Alt+o")
    expect(first.locator(".traj-step-body")).to_be_hidden()
    expect(first.locator("[data-fold]")).to_be_focused()
    page.keyboard.press("Alt+o")
    expect(first.locator(".traj-step-body")).to_be_visible()

    # Images are picked by thumbnail, with the hash as secondary text.
    thumbs = first.locator("[data-source-thumb]")
    expect(thumbs.first.locator("img")).to_be_visible()
    expect(thumbs.first).to_contain_text("item image")
    assert thumbs.first.locator("input[type=radio]").is_checked()
    expect(first.locator("select[name='steps-0-source']")).to_have_count(0)

    # A new crop box becomes the step's bbox_2d in its Arguments JSON.
    if os.environ.get("BENCHWRIGHT_SHOTS"):
        page.screenshot(path="/tmp/traj-open.png", full_page=True)
    first.locator("[name='steps-0-tool']").select_option("crop")
    args = first.locator("[data-step-args]")
    before = json.loads(args.input_value() or "{}")
    page.wait_for_function(
        "() => { const i = document.querySelector('#step-0-body [data-ie=img]'); "
        "return i && i.complete && i.naturalWidth > 0; }"
    )
    canvas = first.locator("[data-ie=canvas]")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] * 0.10, box["y"] + box["height"] * 0.20)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.40, box["y"] + box["height"] * 0.60, steps=6)
    page.mouse.up()
    expect(first.locator("[data-ie=box]")).to_be_visible()
    drawn = json.loads(first.locator("input[name='steps-0-recipe']").input_value())
    crop = next(s for s in drawn["steps"] if s["op"] == "crop")["params"]["bbox_2d"]
    after = json.loads(args.input_value())
    assert after["bbox_2d"] == crop
    assert after["bbox_2d"] != before.get("bbox_2d")
    assert {k: v for k, v in after.items() if k != "bbox_2d"} == {
        k: v for k, v in before.items() if k != "bbox_2d"
    }
    assert abs(crop[0] - 100) <= 15 and abs(crop[2] - 400) <= 15

    # Re-checking the draft (a swap) keeps the step being edited open, the others folded.
    with page.expect_response(lambda r: r.request.method == "POST"):
        page.locator("[name='task-expected']").press("Enter")
    settle(page)
    expect(steps.nth(0).locator(".traj-step-body")).to_be_visible()
    expect(steps.nth(1).locator(".traj-step-body")).to_be_hidden()
