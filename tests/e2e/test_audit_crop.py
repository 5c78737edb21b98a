"""The audit of a visual step shows the crop it asks about (issue 25, finding 6): beside the
step, its source image cut to the step's bbox_2d and the box drawn on the whole image, each
opening full size in the lightbox."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.judgment_tasks.services import judgment_task_ensure_defaults
from benchmark.models import Image, Item, Role
from tests.annotation.test_verification import SAMPLES, agentic_project, answer_directly
from tests.factories import MembershipFactory, UserFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not SAMPLES.is_dir(), reason="shared Agentic-MME samples not found"),
]


def test_audit_shows_the_crop_of_a_visual_step(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = agentic_project()
    (task,) = judgment_task_ensure_defaults(project=project)
    item = Item.objects.get(project=project, external_id="0001")
    verifier = UserFactory(username="v1")
    MembershipFactory(project=project, user=verifier, role=Role.ANNOTATOR)
    answer_directly(task, verifier, item, "Willow St")
    source = Image.objects.get(sha256=item.image_refs[0]["sha256"])

    page = login_page(verifier)
    page.goto(f"/verification/{task.pk}/items/{item.pk}/audit/")
    ready(page)
    step = page.locator(".audit-step").first
    expect(step).to_contain_text("bbox_2d")
    crop = step.locator("[data-audit-crop] svg")
    expect(crop).to_be_visible()
    # The crop keeps the box's shape in the source image's pixels (769,403 to 850,452 of 1000).
    box = crop.bounding_box()
    assert box is not None and box["width"] > 100
    expected = (850 - 769) * source.width / ((452 - 403) * source.height)
    assert abs(box["width"] / box["height"] - expected) < 0.1
    expect(step.locator(".crop-where .crop-rect")).to_have_count(1)
    # Full size in the lightbox.
    step.locator("[data-audit-crop] a").click()
    dialog = page.locator("#lightbox")
    expect(dialog).to_be_visible()
    expect(dialog.locator("img")).to_have_attribute("src", re.compile(f"/images/{source.sha256}/$"))
    page.wait_for_function("() => document.querySelector('#lightbox img').naturalWidth > 0")
    # The step without a crop (C2 reads the answer) shows no picture.
    expect(page.locator(".audit-step").nth(1).locator(".audit-visual")).to_have_count(0)
