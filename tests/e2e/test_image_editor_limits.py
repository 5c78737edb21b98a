"""The image editor shows the recipe limits: a resize to 10000×10000 is refused by the server
before any pixel work, and the editor says why on the stage, on Preview and on Save."""

from __future__ import annotations

import io

import pytest
from playwright.sync_api import expect

from benchmark.images import services as image_services
from benchmark.models import Image, Role
from tests.factories import MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

HUGE = "step 1 (resize): the output would be 10000×10000 = 100 MP, over the 40 MP limit"


def photo_png() -> bytes:
    from PIL import Image as PILImage

    out = io.BytesIO()
    PILImage.new("RGB", (320, 240), (40, 120, 200)).save(out, format="PNG")
    return out.getvalue()


def test_the_editor_says_why_a_recipe_over_the_limits_is_refused(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Agentic sample", kind="trajectory")
    user = UserFactory(username="ann")
    MembershipFactory(project=project, user=user, role=Role.ANNOTATOR)
    [source] = image_services.image_upload(
        project=project, user=user, files=[("photo.png", photo_png())]
    )
    page = login_page(user)
    page.goto(f"/projects/{project.pk}/images/{source.sha256}/edit/")
    page.wait_for_function("document.querySelector('[data-ie=img]').complete")
    ready(page)

    page.locator("[data-ie=op-select]").select_option("resize")
    params = page.locator("[data-ie=op-params]")
    for name, value in (("scale", ""), ("width", "10000"), ("height", "10000")):
        field = params.locator(f"[data-param={name}]")
        field.fill(value)
        field.dispatch_event("change")
    page.locator("[data-ie-action=add-op]").click()

    message = page.locator("[data-ie=message]")
    # The stage shows the steps before the crop: the server refuses them at once.
    expect(message).to_have_text(f"The steps before the crop cannot be shown: {HUGE}")
    page.get_by_role("button", name="Preview").click()
    expect(message).to_have_text(HUGE)
    expect(message).to_have_class("ie-message small ie-error")

    with page.expect_navigation():
        page.get_by_role("button", name="Save derived image").click()
    expect(page.locator("#save-error")).to_have_text(f"Not saved: {HUGE}")
    assert Image.objects.count() == 1
