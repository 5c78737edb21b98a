"""Bulk actions in the browser: select three rows of the item list with a click and a
Shift+click, set their status, and read the summary; x toggles the focused row."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from benchmark.models import Item, ItemStatus, ItemStatusChange, Role
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_shift_click_three_rows_and_set_their_status(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Bulk e2e")
    for i in range(5):
        ItemFactory(project=project, external_id=f"bulk_{i}", position=i)
    reviewer = MembershipFactory(project=project, role=Role.REVIEWER).user
    page = login_page(reviewer)
    page.goto(f"/projects/{project.pk}/")
    ready(page)

    boxes = page.locator("input.bulk-check")
    expect(boxes).to_have_count(5)
    boxes.nth(1).click()
    boxes.nth(3).click(modifiers=["Shift"])
    expect(page.locator("[data-bulk-count]")).to_have_text("3 selected")
    for n, checked in enumerate([False, True, True, True, False]):
        (
            expect(boxes.nth(n)).to_be_checked
            if checked
            else expect(boxes.nth(n)).not_to_be_checked
        )()

    # x toggles the focused row: off and on again.
    page.locator("tr[data-bulk-row]").nth(3).focus()
    page.keyboard.press("x")
    expect(page.locator("[data-bulk-count]")).to_have_text("2 selected")
    page.keyboard.press("x")
    expect(page.locator("[data-bulk-count]")).to_have_text("3 selected")

    page.select_option("#bulk-form select[name=action]", "status")
    expect(page.locator("#bulk-form select[name=status]")).to_be_visible()
    expect(page.locator("#bulk-form select[name=users]")).to_be_hidden()
    page.select_option("#bulk-form select[name=status]", "verified")
    page.locator("[data-bulk-apply]").click()

    expect(page.locator("[data-messages]")).to_contain_text("3 items set to verified")
    verified = Item.objects.filter(project=project, status=ItemStatus.VERIFIED)
    assert sorted(verified.values_list("external_id", flat=True)) == ["bulk_1", "bulk_2", "bulk_3"]
    assert ItemStatusChange.objects.filter(changed_by=reviewer).count() == 3
