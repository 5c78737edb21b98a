"""Issue 25, findings 9–11 in a real browser: the project page's intent menu follows the
chosen category before the filter is sent; no Content-Security-Policy violation (checked by
``login_page``)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from benchmark.models import Role
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_intent_menu_follows_the_category(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Intents")
    annotator = UserFactory(username="ann")
    MembershipFactory(project=project, user=annotator, role=Role.ANNOTATOR)
    ItemFactory(project=project, category="Travel", intent="Route planning", external_id="t1")
    ItemFactory(project=project, category="Cooking", intent="Recipe steps", external_id="c1")

    page = login_page(annotator)
    page.goto(f"/projects/{project.pk}/")
    ready(page)
    intent = page.locator("#id_intent")
    intent.select_option("Recipe steps")
    page.select_option("#id_category", "Travel")
    # the Cooking intent is no longer offered, and the choice that no longer fits is cleared
    expect(intent.locator('option[value="Recipe steps"]')).to_be_hidden()
    expect(intent).to_have_value("")
    expect(page.locator("#item-list")).to_contain_text("t1")
    expect(page.locator("#item-list")).not_to_contain_text("c1")


def test_an_admin_dismisses_the_first_run_checklist(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Fresh")
    admin = UserFactory(username="fresh-admin")
    MembershipFactory(project=project, user=admin, role=Role.ADMIN)

    page = login_page(admin)
    page.goto(f"/projects/{project.pk}/")
    ready(page)
    checklist = page.locator("[data-first-run]")
    expect(checklist).to_contain_text("Add the people who annotate and review")
    expect(page.locator("[data-empty-items]")).to_contain_text("Import a dataset")
    checklist.get_by_role("button", name="Dismiss").click()
    expect(checklist).to_have_count(0)
    page.reload()
    expect(page.locator("h1")).to_have_text("Fresh")
    expect(page.locator("[data-first-run]")).to_have_count(0)
