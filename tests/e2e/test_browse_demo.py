"""A person logs in, opens each demo project and an item, and sees its images."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from benchmark.models import Project
from review.demo import demo_load

pytestmark = pytest.mark.django_db(transaction=True)


def wait_for_htmx(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def test_annotator_browses_every_demo_project(login_page) -> None:  # type: ignore[no-untyped-def]
    demo_load()
    user = get_user_model().objects.get(username="annotator1")
    page = login_page(user)
    page.goto("/")
    projects = list(Project.objects.order_by("name"))
    assert len(projects) == 4
    for project in projects:
        expect(page.get_by_role("link", name=project.name)).to_be_visible()

    for project in projects:
        page.goto("/")
        page.get_by_role("link", name=project.name).click()
        wait_for_htmx(page)
        expect(page.locator("h1")).to_contain_text(project.name)
        item = project.items.exclude(image_refs=[]).order_by("position").first()
        if item is None:  # m&m's items carry no images
            item = project.items.order_by("position").first()
        page.get_by_role("link", name=item.external_id, exact=True).first.click()
        wait_for_htmx(page)
        expect(page.locator("h1")).to_contain_text(item.external_id)
        if item.image_refs:
            thumbs = page.locator(".thumb img")
            expect(thumbs.first).to_be_visible()
            # every thumbnail actually loaded (naturalWidth > 0), not a broken image
            page.wait_for_function(
                "() => [...document.querySelectorAll('.thumb img')]"
                ".every(i => i.complete && i.naturalWidth > 0)"
            )
