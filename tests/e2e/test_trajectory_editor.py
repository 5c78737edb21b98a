"""Issue 5's "done when": upload an image, open the trajectory editor, draw a crop, add a V
checkpoint with its question and answer and an S checkpoint with a URL, save, reload and see
the same crop (box numbers equal)."""

from __future__ import annotations

import io
import json

import pytest
from playwright.sync_api import expect

from benchmark.builtin import taxonomies_ensure, toolsets_ensure
from benchmark.models import Image, Project, Role, Trajectory
from tests.factories import ItemFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

WIDTH, HEIGHT = 800, 600


def street_png() -> bytes:
    from PIL import Image as PILImage
    from PIL import ImageDraw

    img = PILImage.new("RGB", (WIDTH, HEIGHT), (90, 110, 130))
    draw = ImageDraw.Draw(img)
    draw.rectangle((600, 240, 690, 280), fill=(30, 60, 200))
    draw.text((610, 252), "WILLOW ST", fill=(255, 255, 255))
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def settle(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def hidden_json(page, name):  # type: ignore[no-untyped-def]
    value = page.locator(f"input[name='{name}']").input_value()
    return json.loads(value) if value else None


def test_upload_crop_checkpoints_save_reload(login_page) -> None:  # type: ignore[no-untyped-def]
    project = Project.objects.create(
        name="Agentic-MME e2e",
        kind="trajectory",
        data_format="agentic-mme",
        toolset=toolsets_ensure()["agentic-mme"],
        taxonomy=taxonomies_ensure()["agentic-mme"],
    )
    item = ItemFactory(
        project=project,
        external_id="street-sign",
        query="What street name is on the blue sign? Answer with the name only.",
        expected_answer="Willow St",
        match_type="contains",
        level=2,
        domain="Life",
        raw="",
        documents=[],
        category="",
        intent="",
    )
    user = UserFactory(username="annotator-traj")
    MembershipFactory(project=project, user=user, role=Role.ANNOTATOR)
    page = login_page(user)

    # Upload the photo on the project's images page.
    page.goto(f"/projects/{project.pk}/images/")
    page.locator("input[type=file][name=files]").set_input_files(
        [{"name": "street.png", "mimeType": "image/png", "buffer": street_png()}]
    )
    expect(page.locator(".upload-row").first).to_contain_text("stored")
    source = Image.objects.get()

    # Open the editor from the item page.
    page.goto(f"/projects/{project.pk}/items/{item.pk}/")
    page.get_by_role("link", name="Edit reference trajectory").click()
    expect(page.locator("h1")).to_contain_text("Reference trajectory")
    expect(page.locator("[name='task-question']")).to_have_value(
        "What street name is on the blue sign?"
    )
    expect(page.locator("[name='task-format_instruction']")).to_have_value(
        "Answer with the name only."
    )

    # A visual step: intent, tool, question and answer, and a crop drawn with the mouse.
    page.get_by_role("button", name="Add visual step").click()
    step = page.locator("li.traj-step").nth(0)
    expect(step).to_be_visible()
    settle(page)
    step.locator("[name='steps-0-intent']").fill("Crop the blue sign on the right.")
    step.locator("[name='steps-0-tool']").select_option("crop")
    step.locator("[name='steps-0-question']").fill("What is written on the blue sign?")
    step.locator("[name='steps-0-expected']").fill("WILLOW ST")
    image = step.locator("[data-ie=img]")
    expect(image).to_be_visible()
    page.wait_for_function("() => document.querySelector('[data-ie=img]').complete")
    canvas = step.locator("[data-ie=canvas]")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    assert box is not None
    x0, y0 = box["x"] + box["width"] * 0.74, box["y"] + box["height"] * 0.38
    x1, y1 = box["x"] + box["width"] * 0.88, box["y"] + box["height"] * 0.48
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x1, y1, steps=8)
    page.mouse.up()
    expect(step.locator("[data-ie=box]")).to_be_visible()
    drawn = hidden_json(page, "steps-0-recipe")["steps"][0]["params"]["bbox_2d"]
    assert all(abs(a - b) <= 5 for a, b in zip(drawn, [740, 380, 880, 480], strict=True))

    # A search step with keywords, a reference URL and the expected finding (adding it
    # re-renders the form: the drawn box must survive).
    page.get_by_role("button", name="Add search step").click()
    expect(page.locator("li.traj-step")).to_have_count(2)
    settle(page)
    assert hidden_json(page, "steps-0-recipe")["steps"][0]["params"]["bbox_2d"] == drawn
    search = page.locator("li.traj-step").nth(1)
    search.locator("[name='steps-1-intent']").fill("Check which town has a Willow St.")
    search.locator("[name='steps-1-keywords']").fill("Willow St\nstreet sign")
    search.locator("[name='steps-1-urls']").fill("https://en.wikipedia.org/wiki/Street_name_sign")
    search.locator("[name='steps-1-search_expected']").fill("Willow St")
    page.locator("[name='task-reference_tool_calls']").fill("2")
    page.locator("[name='task-penalty_per_extra_call']").fill("0.1")

    # Save with the keyboard shortcut.
    page.locator("[name='steps-1-search_expected']").press("Control+s")
    expect(page.locator("#saved-message")).to_contain_text("Saved")

    stored = Trajectory.objects.get(item=item, key="reference").checkpoints
    assert [c["axis"] for c in stored] == ["V", "S"]
    assert stored[0]["code_check"]["bbox_2d"] == drawn
    assert stored[0]["visual_check"] == {
        "question": "What is written on the blue sign?",
        "expected_answer": "WILLOW ST",
    }
    assert stored[1]["search_check"]["urls"] == ["https://en.wikipedia.org/wiki/Street_name_sign"]
    derived = Image.objects.get(sha256=stored[0]["reference_image"]["sha256"])
    assert derived.source == source

    # Reload: the same crop is drawn, with the same numbers.
    page.reload()
    expect(page.locator("li.traj-step")).to_have_count(2)
    expect(page.locator("li.traj-step").nth(0).locator("[data-ie=box]")).to_be_visible()
    assert hidden_json(page, "steps-0-recipe")["steps"][0]["params"]["bbox_2d"] == drawn
    for i, value in enumerate(drawn):
        expect(page.locator(f"li.traj-step >> nth=0 >> [data-ie-bbox='{i}']")).to_have_value(
            str(value)
        )
    expect(page.locator("[name='steps-1-urls']")).to_have_value(
        "https://en.wikipedia.org/wiki/Street_name_sign"
    )

    # A second save, then the history: version 3 on top of 2, on top of the state before.
    page.locator("[name='task-penalty_per_extra_call']").fill("0.2")
    page.locator("[name='note']").fill("steeper penalty")
    page.locator("[name='note']").press("Control+s")
    expect(page.locator("#saved-message")).to_contain_text("Saved as version 3")
    page.locator("#history-link").click()
    expect(page.locator("tr#version-3")).to_contain_text("Penalty per extra call changed")
    expect(page.locator("tr#version-3")).to_contain_text("steeper penalty")
    expect(page.locator("tr#version-2")).to_contain_text("Step C1 added; step C2 added")
    expect(page.locator("tr#version-1")).to_contain_text("first version")

    # Version 2 against 1, then revert to it: version 4, the penalty back at 0.1.
    page.locator("tr#version-2 a", has_text="v2").click()
    expect(page.locator("#step-diff-C2")).to_contain_text("Street_name_sign")
    page.get_by_role("button", name="Revert to v2").click()
    expect(page.get_by_role("heading", name="Version 4")).to_be_visible()
    expect(page.locator(".traj-summary").first).to_contain_text("Penalty per extra call changed")
    reference = Trajectory.objects.get(item=item, key="reference")
    assert reference.efficiency["penalty_per_extra_call"] == 0.1
