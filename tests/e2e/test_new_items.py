"""Items from scratch in the browser: an ATP-Bench item with two documents (the second moved
above the first with Alt+Up, one with an uploaded image), and an LLM-I item whose vague
criterion is flagged as it is typed and after saving."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from benchmark.models import Item, ProjectKind, Response, Role
from tests.factories import MembershipFactory, ProjectFactory, UserFactory, png_bytes

pytestmark = pytest.mark.django_db(transaction=True)


def test_new_atp_item_with_reordered_documents(login_page, ready, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="ATP from scratch")
    user = UserFactory(username="writer")
    MembershipFactory(project=project, user=user, role=Role.ANNOTATOR)
    picture = tmp_path / "figure.png"
    picture.write_bytes(png_bytes(42))

    page = login_page(user)
    page.goto(f"/projects/{project.pk}/")
    page.get_by_role("link", name="New item").click()
    expect(page).to_have_url(re.compile(rf"/projects/{project.pk}/items/new/$"))
    ready(page)
    page.get_by_label("Query", exact=True).fill("How do I descale the AquaPress 300?")
    page.get_by_label("Category").fill("Manual")
    page.get_by_label("Intent").fill("OperationGuide")
    documents = page.locator("[data-document]")
    expect(documents).to_have_count(1)
    documents.nth(0).locator("textarea").fill("Section 7: Descaling.")
    page.get_by_role("button", name="Add document").click()
    expect(documents).to_have_count(2)
    second = documents.nth(1)
    second.locator("textarea").fill("Figure 3: the indicator lights.")
    second.locator('input[type="file"]').set_input_files(str(picture))
    second.locator("textarea").press("Alt+ArrowUp")
    expect(documents.nth(0).locator("textarea")).to_have_value("Figure 3: the indicator lights.")
    expect(documents.nth(0).locator("[data-document-number]")).to_have_text("1")
    page.get_by_label("Ground-truth answer").fill("Run the descaling cycle.")
    page.get_by_role("button", name="Create item").click()

    expect(page.locator("[data-created]")).to_be_visible()
    item = Item.objects.get(project=project)
    assert [d["text"] for d in item.documents] == [
        "Figure 3: the indicator lights.",
        "Section 7: Descaling.",
    ]
    assert len(item.documents[0]["images"]) == 1 and item.documents[1]["images"] == []
    assert item.provenance == "written by writer" and item.status == "draft"
    gt = Response.objects.get(item=item, key="gt")
    page.locator("[data-created] [data-tag-editor]").click()
    expect(page).to_have_url(re.compile(rf"/responses/{gt.pk}/review/$"))


def test_new_llmi_item_warns_on_a_vague_criterion(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(
        name="LLM-I from scratch", data_format="llmi", kind=ProjectKind.INTERLEAVED
    )
    user = UserFactory(username="rubric-writer")
    MembershipFactory(project=project, user=user, role=Role.ANNOTATOR)

    page = login_page(user)
    page.goto(f"/projects/{project.pk}/items/new/")
    ready(page)
    page.get_by_label("Prompt").fill("Write a three-step pancake recipe with a picture per step.")
    for n in range(1, 11):
        page.locator(f"#id_r{n}").fill(f"The answer includes a picture for step {n} of the recipe.")
    criterion = page.locator("#id_r3")
    criterion.fill("Nice pictures.")
    warning = criterion.locator("xpath=..").locator("[data-criterion-warning]")
    expect(warning).to_contain_text("fewer than six words")
    criterion.fill("Each picture shows the pancake at that step.")
    expect(warning).to_have_text("")
    criterion.fill("Lovely pictures and good colours everywhere here")
    expect(warning).to_contain_text("no verb")
    page.get_by_role("button", name="Create item").click()

    expect(page.locator("[data-warnings]")).to_contain_text("rubric.r3: vague: no verb")
    item = Item.objects.get(project=project)
    assert item.rubric[2]["text"] == "Lovely pictures and good colours everywhere here"
    assert len(item.rubric) == 10
