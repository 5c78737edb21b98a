"""Issue 5's drafting "done when": against a local server that speaks the OpenAI protocol, an
annotator asks for a description of the raw image and sees progress then the model's answer,
draws a crop and asks the same model about it, marks both answers (one with the keyboard),
drafts the question, and the item shows the drafted query.

Celery runs eagerly, inside the live server's request thread: the fake server holds the first
request so the browser shows the progress indicator while the model "thinks"."""

from __future__ import annotations

import io
import re

import pytest
from playwright.sync_api import expect

from annotation.backward_drafting.models import DraftingCrop, DraftingMark
from benchmark.images import services
from benchmark.models import Item, ModelCall, ProjectKind, Role, Trajectory
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory, UserFactory
from tests.llm_server import MODEL, FakeModelServer, point_at
from tests.shared_data import SHARED_DATA

pytestmark = pytest.mark.django_db(transaction=True)

STREET = SHARED_DATA / "agentic-mme" / "images" / "image_0001.png"


def street_png() -> bytes:
    """The Agentic-MME sample street scene (a tiny "WILLOW ST" sign), or a drawn stand-in."""
    if STREET.is_file():
        return STREET.read_bytes()
    from PIL import Image as PILImage
    from PIL import ImageDraw

    img = PILImage.new("RGB", (800, 600), (90, 110, 130))
    ImageDraw.Draw(img).rectangle((615, 242, 680, 271), fill=(30, 60, 200))
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def settle(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def test_drafting_session_against_the_local_protocol_server(  # type: ignore[no-untyped-def]
    login_page, ready, model_server: FakeModelServer
) -> None:
    project = ProjectFactory(
        name="Agentic sample", kind=ProjectKind.TRAJECTORY, data_format="agentic-mme"
    )
    point_at(project, model_server)
    image = services.image_store(data=street_png(), name="image_0001.png", project=project)
    item = ItemFactory(
        project=project,
        external_id="0001",
        query="",
        expected_answer="",
        modality="image",
        image_refs=[
            {
                "sha256": image.sha256,
                "role": "input",
                "path": "images/image_0001.png",
                "position": 0,
            }
        ],
    )
    user = UserFactory(username="annotator1")
    MembershipFactory(project=project, user=user, role=Role.ANNOTATOR)
    page = login_page(user)

    # Step 1: from the item page to a new session; the model is slow, so progress shows first.
    page.goto(f"/projects/{project.pk}/items/{item.pk}/")
    page.get_by_role("link", name="Backward drafting").click()
    expect(page.locator("h1")).to_have_text("Backward drafting")
    expect(page.get_by_text(MODEL).first).to_be_visible()
    model_server.answer = (
        "A city street at dusk with parked cars and a lamp post; no sign is legible."
    )
    model_server.hold()
    page.get_by_role("button", name="Ask the model to describe it").click()
    expect(page.locator("#drafting-start-pending")).to_be_visible()
    expect(page.locator("#drafting-start-pending [role=progressbar]")).to_be_visible()
    assert model_server.wait_for_arrivals(1)
    model_server.release()
    expect(page.locator("h1")).to_have_text(re.compile(r"^Drafting session \d+$"))
    describe = page.locator("#drafting-describe [data-kind=model_call]")
    expect(describe).to_have_attribute("data-status", "succeeded")
    expect(describe.locator(".answer-text")).to_have_text(model_server.answer)
    expect(describe).to_contain_text("17 prompt + 7 completion tokens")
    assert model_server.requests[0].image_urls[0].startswith("data:image/png;base64,")

    # Step 2: the detail the model missed, a crop around the sign, the same model asked.
    page.get_by_label("The detail the model missed (your ground truth)").fill(
        "The small blue sign on the lamp post reads WILLOW ST"
    )
    page.wait_for_function("() => document.querySelector('[data-ie=img]').complete")
    canvas = page.locator("#drafting-crop [data-ie=canvas]")
    box = canvas.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] * 0.75, box["y"] + box["height"] * 0.38)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.87, box["y"] + box["height"] * 0.47, steps=6)
    page.mouse.up()
    expect(page.locator("#drafting-crop [data-ie=box]")).to_be_visible()
    model_server.answer = "The blue sign reads WILLOW ST."
    page.get_by_role("button", name="Save the crop and ask the model").click()
    crop_job = page.locator("#drafting-crop [data-kind=model_call]")
    expect(crop_job.locator(".answer-text")).to_have_text("The blue sign reads WILLOW ST.")
    settle(page)
    crop = DraftingCrop.objects.get()
    assert crop.ground_truth.endswith("WILLOW ST") and crop.recipe["steps"][0]["op"] == "crop"
    bbox = crop.recipe["steps"][0]["params"]["bbox_2d"]
    assert 730 <= bbox[0] <= 770 and 850 <= bbox[2] <= 890
    asked = ModelCall.objects.get(purpose__endswith=":crop")
    assert asked.image_sha256s == [crop.image_sha256] and asked.model == MODEL

    # A reload shows the same crop box and ground truth.
    page.reload()
    expect(page.locator("#drafting-crop [data-ie=box]")).to_be_visible()
    expect(page.get_by_label("The detail the model missed (your ground truth)")).to_have_value(
        crop.ground_truth
    )
    expect(page.locator("#drafting-crop [data-ie-bbox='0']")).to_have_value(str(round(bbox[0])))

    # Step 3: both answers listed in order with the images sent; mark them.
    cards = page.locator("[data-drafting-call]")
    expect(cards).to_have_count(2)
    expect(cards.nth(0).locator(".drafting-sent img")).to_have_count(1)
    expect(cards.nth(1)).to_contain_text("The blue sign reads WILLOW ST.")
    ready(page)
    # The image editor takes its own keys: a mark key pressed there marks nothing.
    page.locator("#drafting-crop [data-ie=stage]").focus()
    page.keyboard.press("n")
    expect(page.locator("[data-drafting-call] input[name=perceives]:checked")).to_have_count(0)
    cards.nth(0).focus()
    for key in ("n", "u", "s"):  # does not perceive it, cannot tell, save
        page.keyboard.press(key)
    expect(cards.nth(0)).to_contain_text("Marked by annotator1")
    settle(page)
    second = page.locator("[data-drafting-call]").nth(1)
    second.get_by_label("Yes").check()
    second.get_by_label("Correct against the ground truth").check()
    second.get_by_role("button", name="Save mark").click()
    expect(page.locator("[data-drafting-call]").nth(1)).to_contain_text("Marked by annotator1")
    expect(page.locator("#drafting-status [data-validated=true]")).to_be_visible()
    marks = {m.call.purpose.rsplit(":", 1)[1]: m for m in DraftingMark.objects.all()}
    assert not marks["describe"].perceives and marks["describe"].verdict == "unsure"
    assert marks["crop"].perceives and marks["crop"].verdict == "correct"

    # Step 4: the question, its answer and the first V checkpoint from the crop.
    draft = page.locator("#drafting-draft")
    draft.get_by_label("Question", exact=True).fill(
        "A small blue street-name sign is attached to the lamp post on the right. "
        "What street name is written on it?"
    )
    draft.get_by_label("Answer", exact=True).fill("Willow St")
    draft.get_by_label("Match type").select_option("contains")
    draft.get_by_label("Start the reference trajectory with a V checkpoint from the crop").check()
    draft.get_by_label("Checkpoint question about the crop").fill("What does the blue sign say?")
    draft.get_by_label("Its expected answer").fill("WILLOW ST")
    draft.get_by_role("button", name="Save the question to the item").click()
    expect(page.locator("#drafting-draft .alert-success")).to_contain_text("Saved to the item")
    expect(page.locator("#drafting-status li.done")).to_have_count(5)

    page.locator("#drafting-draft .alert-success a").click()
    expect(page.locator(".query-text")).to_contain_text("What street name is written on it?")
    item = Item.objects.get(pk=item.pk)
    assert item.provenance == f"drafted by annotator1 with {MODEL}"
    reference = Trajectory.objects.get(item=item, key="reference")
    assert reference.checkpoints[0]["visual_check"]["expected_answer"] == "WILLOW ST"
