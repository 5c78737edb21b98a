"""A reviewer opens "Render answers" from the project page, renders the model answers (a fake
sandbox draws the chart; no image provider is configured), opens a rendered answer, sees the
document image, the chart and the labelled placeholder and failure cards, renders it again
and downloads it as one HTML file. No Content-Security-Policy violation on the way."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect

from benchmark.models import Origin, Role
from benchmark.rendering import SandboxCodeRunner
from review.answer_rendering import services
from tests.factories import (
    ImageFactory,
    ItemFactory,
    MembershipFactory,
    ProjectFactory,
    ResponseFactory,
    UserFactory,
    image_ref,
)
from tests.image_server import fake_run_code

pytestmark = pytest.mark.django_db(transaction=True)


def atp(tool: str, **params: Any) -> str:
    return (
        "<tool>"
        + json.dumps({"tool_name": tool, "description": f"{tool} figure", "params": params})
        + "</tool>"
    )


def test_render_answers_and_read_one(login_page, ready, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(services, "code_runner", lambda: SandboxCodeRunner(fake_run_code))
    project = ProjectFactory(name="Rendered in the browser")
    doc = ImageFactory(projects=[project])
    item = ItemFactory(project=project, external_id="q1", image_refs=[image_ref(doc, position=0)])
    text = "\n\n".join(
        [
            "## A table and a chart\n\n| a | b |\n|--:|:--|\n| 1 | 2 |",
            atp("Reference", img_index=0),
            atp("Code", code="import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()"),
            atp("Diffusion", prompt="a watercolour lighthouse"),
            atp("Edit", img_index=7, prompt="circle it"),
        ]
    )
    answer = ResponseFactory(
        item=item, origin=Origin.MODEL, model_name="alpha", key="model:alpha", text=text
    )
    reviewer = UserFactory(username="render-reviewer")
    MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)

    page = login_page(reviewer)
    page.goto(f"/projects/{project.pk}/")
    page.get_by_role("link", name="Render answers").click()
    expect(page.locator("h1")).to_have_text("Render answers")
    ready(page)
    expect(page.locator('#render-providers tr[data-tool="diffusion"]')).to_contain_text(
        "not configured"
    )
    page.get_by_role("button", name="Render").click()
    job = page.locator("#render-started [id^=job-]")
    expect(job).to_have_attribute("data-status", "succeeded")
    expect(job).to_contain_text("1 answer, 1 rendered anew")

    page.goto(f"/answer-rendering/{answer.pk}/")
    ready(page)
    document = page.locator("#rendered-body .rd-document")
    expect(document.locator("table")).to_have_count(1)
    figures = document.locator('.rd-figure[data-status="rendered"] img')
    expect(figures).to_have_count(2)
    for i in range(2):
        page.wait_for_function(
            "img => img.complete && img.naturalWidth > 0", arg=figures.nth(i).element_handle()
        )
    expect(document.locator('[data-tool="diffusion"][data-status="placeholder"]')).to_contain_text(
        "Diffusion not executed"
    )
    expect(document.locator('[data-tool="edit"][data-reason="out_of_range"]')).to_contain_text(
        "Image index out of range"
    )
    expect(page.locator("#rendered-calls tbody tr")).to_have_count(4)

    page.get_by_role("button", name="Render again").click()
    again = page.locator("#render-again [id^=job-]")
    expect(again).to_have_attribute("data-status", "succeeded")
    expect(again).to_contain_text("0 rendered anew, 1 unchanged")
    expect(page.locator("#rendered-body .rd-figure img")).to_have_count(2)

    with page.expect_download() as download:
        page.locator("#rendered-download").click()
    assert download.value.suggested_filename == "q1-alpha.html"
    html = download.value.path().read_text(encoding="utf-8")
    assert html.count('src="data:image/png;base64,') == 2
