"""Issue 12, projects and people: a staff user creates a project in the browser, adds a
member and makes an invitation link; a new visitor opens it in a fresh browser, creates an
account and lands in the project, with its guidelines at hand."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from benchmark.models import AuditAction, AuditEvent, Membership, Project, Role
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_staff_creates_a_project_adds_a_member_and_invites_a_newcomer(  # type: ignore[no-untyped-def]
    login_page, browser, live_server
) -> None:
    staff = UserFactory(username="staffer", is_staff=True)
    UserFactory(username="annie")
    page = login_page(staff)

    # A new project from the project list.
    page.goto("/")
    page.get_by_role("link", name="New project").click()
    expect(page.locator("h1")).to_have_text("New project")
    page.get_by_label("Name").fill("Plans from scratch")
    page.get_by_label("Benchmark").select_option("mms")
    page.get_by_label("Toolset").select_option("copy")
    page.get_by_label("Description").fill("m&m's plans written by hand")
    page.get_by_label("Guidelines").fill("Every step needs **one** tool.")
    page.get_by_role("button", name="Create the project").click()
    expect(page.locator("h1")).to_have_text("Plans from scratch")
    project = Project.objects.get(name="Plans from scratch")
    assert (project.kind, project.data_format) == ("plan", "mms")
    guidelines = page.locator("#project-guidelines details")
    expect(guidelines).to_contain_text("Guidelines")
    guidelines.locator("summary").click()
    expect(guidelines.locator("strong", has_text="one")).to_be_visible()

    # Members: add annie as a reviewer, then make an invitation link for an annotator.
    page.get_by_role("link", name="Members").click()
    expect(page.locator("h1")).to_have_text("Members")
    expect(page.locator(".topbar")).to_have_count(1)  # loaded into #main, not nested
    expect(page.locator("#project-guidelines details")).to_have_count(1)
    expect(page.locator("#members tr[data-username=staffer]")).to_contain_text("staffer")
    add = page.locator("#member-add")
    add.get_by_label("Username").fill("annie")
    add.get_by_label("Role").select_option("reviewer")
    add.get_by_role("button", name="Add member").click()
    expect(page.locator(".flash")).to_contain_text("annie joined as reviewer")
    expect(page.locator("#members tr[data-username=annie] select")).to_have_value("reviewer")
    invite = page.locator("#invitation-form")
    invite.get_by_label("Role").select_option("annotator")
    invite.get_by_role("button", name="Make an invitation link").click()
    link = page.locator("#invitation-link")
    expect(link).to_have_value(re.compile(r"/people/invitations/[\w-]+/$"))
    url = link.input_value()
    expect(page.locator('#invitations tr[data-state="open"]')).to_have_count(1)

    # A newcomer, in a browser of their own, creates an account through the link.
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(15_000)
    try:
        visitor = context.new_page()
        visitor.goto(url)
        expect(visitor.locator("h1")).to_have_text("Join Plans from scratch")
        visitor.get_by_label("Username").fill("newcomer")
        visitor.get_by_label("Password", exact=True).fill("a-long-pass-42")
        visitor.get_by_label("Password again").fill("a-long-pass-42")
        visitor.get_by_role("button", name="Create account and join").click()
        expect(visitor).to_have_url(re.compile(rf"/projects/{project.pk}/$"))
        expect(visitor.locator("h1")).to_have_text("Plans from scratch")
        expect(visitor.locator(".flash")).to_contain_text("Welcome to Plans from scratch")
        expect(visitor.locator(".topbar-user")).to_contain_text("newcomer")
        expect(visitor.locator("#project-guidelines summary")).to_contain_text("Guidelines")
        # The link is used up.
        visitor.goto(url)
        expect(visitor.locator("#invitation-refusal")).to_contain_text("used already")
    finally:
        context.close()

    newcomer = get_user_model().objects.get(username="newcomer")
    assert Membership.objects.get(project=project, user=newcomer).role == Role.ANNOTATOR
    page.reload()
    expect(page.locator('#invitations tr[data-state="used"]')).to_have_count(1)
    expect(page.locator("#events")).to_contain_text("Invitation used")
    assert set(AuditEvent.objects.filter(project=project).values_list("action", flat=True)) == {
        AuditAction.PROJECT_CREATED,
        AuditAction.MEMBER_ADDED,
        AuditAction.INVITATION_CREATED,
        AuditAction.INVITATION_USED,
    }
