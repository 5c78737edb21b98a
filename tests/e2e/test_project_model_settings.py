"""The project's model set in the browser: an admin points an ATP-Bench project at the local
server that speaks the OpenAI protocol from its settings page, the project page names the
model, and drafting queries then works with it.

Celery runs eagerly, inside the live server's request thread."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from benchmark.builtin import taxonomies_ensure
from benchmark.models import AuditAction, AuditEvent, ModelCall, Role
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.llm_server import MODEL, FakeModelServer

pytestmark = pytest.mark.django_db(transaction=True)

QUERIES = ["Which herbs go into a proper pesto?", "What does a seasoned cast-iron pan look like?"]


def test_admin_sets_the_model_and_drafts_with_it(  # type: ignore[no-untyped-def]
    login_page, ready, model_server: FakeModelServer
) -> None:
    project = ProjectFactory(name="ATP model", taxonomy=taxonomies_ensure()["atp"])
    admin = UserFactory(username="admin1")
    MembershipFactory(project=project, user=admin, role=Role.ADMIN)
    model_server.answer = "```json\n" + json.dumps(QUERIES) + "\n```"
    page = login_page(admin)

    page.goto(f"/projects/{project.pk}/")
    expect(page.locator("#drafting-model")).to_contain_text("No model configured")
    page.locator("#drafting-model").get_by_role("link", name="model settings").click()
    expect(page.get_by_role("heading", name="Model")).to_be_visible()
    ready(page)
    form = page.locator("#project-model")
    form.get_by_label("Base URL").fill("ftp://nowhere")
    form.get_by_label("Model name").fill(MODEL)
    form.get_by_role("button", name="Save model settings").click()
    expect(page.locator("#project-model [role=alert]")).to_contain_text("Base URL:")
    form.get_by_label("Base URL").fill(model_server.url)
    form.get_by_label("Concurrency").fill("2")
    form.get_by_role("button", name="Save model settings").click()

    host = model_server.url.split("://", 1)[1].split("/", 1)[0]
    expect(page.locator("#drafting-model")).to_contain_text(f"Model: {MODEL} at {host}")
    assert AuditEvent.objects.get(action=AuditAction.MODEL_SETTINGS_CHANGED).details == {
        "changed": ["base_url", "concurrency", "model"]
    }

    page.get_by_role("link", name="Draft queries").click()
    expect(page.locator("h1")).to_have_text("Draft queries")
    page.get_by_label("Category").select_option("Recipe")
    page.get_by_label("Intent").select_option("Ingredient")
    page.get_by_label("How many candidates").fill("2")
    page.get_by_role("button", name="Draft queries").click()
    expect(page.locator(".job[data-status=succeeded]")).to_be_visible()
    cards = page.locator("[data-candidate]")
    expect(cards).to_have_count(2)
    expect(cards.nth(0).locator(".draft-query")).to_have_text(QUERIES[0])
    assert ModelCall.objects.get().model == MODEL
