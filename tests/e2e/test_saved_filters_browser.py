"""A member filters a project's item list, saves the filter under a name, finds it above the
list on the next visit and applies it with one click (no Content-Security-Policy violation on
the way)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from benchmark.models import ItemStatus, Role
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def settle(page: Page) -> None:
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def test_save_a_filter_and_apply_it(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Filtered in the browser")
    for n, (ext, status, category) in enumerate(
        [
            ("chart-1", ItemStatus.VERIFIED, "Chart"),
            ("chart-2", ItemStatus.DRAFT, "Chart"),
            ("map-1", ItemStatus.VERIFIED, "Map"),
        ]
    ):
        ItemFactory(project=project, external_id=ext, position=n, status=status, category=category)
    annotator = UserFactory(username="filter-saver")
    MembershipFactory(project=project, user=annotator, role=Role.ANNOTATOR)

    page = login_page(annotator)
    page.goto(f"/projects/{project.pk}/")
    ready(page)
    expect(page.locator("[data-save-filter]")).to_have_count(0)  # no filter: nothing to save
    page.get_by_label("Status", exact=True).select_option("verified")
    settle(page)
    page.get_by_label("Category", exact=True).select_option("Chart")
    settle(page)
    expect(page.locator("#match-count")).to_have_text("1")
    page.get_by_label("Name of the saved filter").fill("Verified charts")
    page.get_by_role("button", name="Save this filter").click()
    expect(page.locator("[data-messages]")).to_contain_text("Saved the filter 'Verified charts'")
    expect(page.locator("#match-count")).to_have_text("1")

    page.goto(f"/projects/{project.pk}/")
    expect(page.locator("#match-count")).to_have_text("3")
    page.locator("[data-saved-filter]", has_text="Verified charts").click()
    expect(page.locator("#match-count")).to_have_text("1")
    expect(page.locator("#item-list")).to_contain_text("chart-1")
    expect(page.locator("#item-list")).not_to_contain_text("map-1")
    expect(page.get_by_label("Status", exact=True)).to_have_value("verified")
