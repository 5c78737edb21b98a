"""Issue 12's plan editor: open it on an m&m's item, add two steps choosing their tools, pick
a ``<node-1>.key`` reference, see the verifier's finding on a wrong argument, fix it and see
the finding go, save, and find version 2 in the history."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from benchmark.builtin import toolsets_ensure
from benchmark.models import Plan, Project, Role
from tests.factories import ItemFactory, MembershipFactory, PlanFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def settle(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def test_build_a_plan_fix_a_finding_and_save(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = Project.objects.create(
        name="m&m's e2e", kind="plan", data_format="mms", toolset=toolsets_ensure()["mms"]
    )
    annotator = UserFactory(username="ines")
    MembershipFactory(project=project, user=annotator, role=Role.ANNOTATOR)
    item = ItemFactory(
        project=project,
        external_id="36",
        query="Write a short story about a lighthouse, illustrate it and describe the picture.",
    )
    PlanFactory(
        item=item,
        key="gold",
        steps=[
            {"id": 0, "name": "text generation", "args": {"text": "a story about a lighthouse"}}
        ],
        code="",
    )

    page = login_page(annotator)
    page.goto(f"/projects/{project.pk}/items/{item.pk}/")
    page.get_by_role("link", name="Edit plan").click()
    expect(page.locator(".plan-query")).to_contain_text("lighthouse")
    ready(page)
    steps = page.locator("#plan-steps > li.plan-step")
    expect(steps).to_have_count(1)

    # Step 2: image generation from step 1's text (offered as <node-0>.text).
    page.get_by_role("button", name="Add a step").click()
    expect(steps).to_have_count(2)
    page.get_by_label("Step 2 tool").select_option("image generation")
    expect(page.locator("#plan-refs-1 option[value='<node-0>.text']")).to_have_count(1)
    page.get_by_label("Step 2 · text").fill("<node-0>.text")

    # Step 3 (Alt+N adds it): image captioning, given step 2's output by a wrong key first.
    page.keyboard.press("Alt+n")
    expect(steps).to_have_count(3)
    page.get_by_label("Step 3 tool").select_option("image captioning")
    references = page.locator("#plan-refs-2 option")
    expect(page.locator("#plan-refs-2 option[value='<node-1>.image']")).to_have_count(1)
    assert "<node-1>.text" not in [
        references.nth(i).get_attribute("value") for i in range(references.count())
    ]
    argument = page.get_by_label("Step 3 · image")
    argument.fill("<node-1>.text")
    finding = steps.nth(2).locator(".plan-arg[data-arg='image'] .plan-finding")
    expect(finding).to_contain_text("image generation has no output 'text'")
    expect(argument).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#plan-code")).to_contain_text(
        "output2 = image_captioning(image=output1['text'])"
    )

    # Fix it by picking the offered reference: the finding goes, the code follows.
    argument.fill("<node-1>.image")
    expect(finding).to_have_count(0)
    expect(page.locator("#plan-ok")).to_be_visible()
    expect(page.locator("#plan-code")).to_contain_text(
        "output2 = image_captioning(image=output1['image'])"
    )

    # Alt+Down moves the focused step; Alt+Up puts it back.
    page.get_by_label("Step 2 tool").focus()
    page.keyboard.press("Alt+ArrowDown")
    expect(page.get_by_label("Step 3 tool")).to_have_value("image generation")
    page.keyboard.press("Alt+ArrowUp")
    expect(page.get_by_label("Step 2 tool")).to_have_value("image generation")
    settle(page)
    expect(page.locator("#plan-ok")).to_be_visible()

    page.get_by_label("Note").fill("illustrate and describe")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#saved-message")).to_contain_text("version 2")
    plan = Plan.objects.get(item=item, key="gold")
    assert [s["name"] for s in plan.steps] == [
        "text generation",
        "image generation",
        "image captioning",
    ]
    assert plan.steps[2]["args"] == {"image": "<node-1>.image"}
    assert "output1 = image_generation(text=output0['text'])" in plan.code

    page.get_by_role("link", name="History").click()
    rows = page.locator("#plan-versions tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("v2")
    expect(rows.first).to_contain_text("ines")
    expect(rows.first).to_contain_text("step 1 (image generation) added")
    expect(rows.nth(1)).to_contain_text("imported")
