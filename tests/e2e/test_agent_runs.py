"""A reviewer uploads a zip of agent runs, watches the scoring job finish, opens a failed run,
answers its visual check with the keyboard, labels its failure mode, and sees both in the
figures."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from benchmark.datasets import services as benchmark_services
from benchmark.models import ProjectKind, Role
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.shared_data import SHARED_DATA, needs_data

pytestmark = pytest.mark.django_db(transaction=True)

MME = SHARED_DATA / "agentic-mme"


def wrong_run_zip(tmp_path: Path) -> Path:
    events = [
        {
            "index": 0,
            "tool_name": "crop",
            "raw_tool_name": "crop",
            "arguments": {"image_index": 0, "bbox_2d": [0, 0, 200, 200]},
            "output": {"ok": "true", "op": "crop", "new_image_index": 1},
        }
    ]
    path = tmp_path / "wrong-model.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("0001/tool_use_list.json", json.dumps(events))
        zf.writestr("0001/model_answer.txt", "Maple Ave\n")
        for file in sorted((MME / "runs" / "0003").rglob("*")):
            if file.is_file():
                zf.write(file, f"0003/{file.relative_to(MME / 'runs' / '0003').as_posix()}")
    return path


@needs_data("agentic-mme")
def test_upload_answer_visual_check_and_label(login_page, ready, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(
        name="Runs in the browser", kind=ProjectKind.TRAJECTORY, data_format="agentic-mme"
    )
    benchmark_services.dataset_import(project=project, path=MME / "json")
    reviewer = UserFactory(username="runs-reviewer")
    MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)

    page = login_page(reviewer)
    page.goto(f"/projects/{project.pk}/")
    page.get_by_role("link", name="Score agent runs").click()
    expect(page.locator("h1")).to_have_text("Score agent runs")
    page.locator("input[data-zip-input]").set_input_files(str(wrong_run_zip(tmp_path)))
    page.get_by_role("button", name="Upload and score").click()
    job = page.locator("[id^=job-]")
    expect(job).to_have_attribute("data-status", "succeeded")
    expect(job).to_contain_text("2 runs scored")
    page.get_by_role("link", name="See the results").click()

    overall = page.locator('[data-row="Overall"]')
    expect(overall.locator('[data-figure="acc"]')).to_have_text("50.0%")
    expect(overall.locator('[data-figure="V_true"]')).to_have_text("0.500")  # proxy: 0 and 1

    page.get_by_role("link", name="0001").click()
    checks = page.locator("#run-checks")
    expect(checks).to_contain_text("Not answered by a person yet.")
    # The proxy's scores suggest an unfaithful crop.
    expect(page.locator('input[value="unfaithful_visual_tool_use"]')).to_be_checked()
    page.locator("#label-note").fill("typed before answering")
    page.locator("#label-note").blur()
    ready(page)
    page.keyboard.press("y")  # the first unanswered visual check: yes, an image shows it
    expect(checks).to_contain_text("Answered yes by runs-reviewer")
    expect(checks.locator('[data-figure="V_true"]')).to_have_text("1.00")
    # The answer refreshes the suggestion: the crop showed the sign, so it was misread.
    suggested = page.locator('#run-label label.suggested input[name="mode"]')
    expect(suggested).to_have_value("postvisual_perception_deficit")
    expect(suggested).to_be_checked()
    expect(page.locator("#label-note")).to_have_value("typed before answering")
    ready(page)

    # The reviewer confirms mode 7 with the keyboard.
    page.keyboard.press("7")
    expect(page.locator('input[value="postvisual_perception_deficit"]')).to_be_checked()
    page.get_by_role("button", name="Save label").click()
    expect(page.locator("#run-label")).to_contain_text("Label saved.")
    expect(page.locator("[data-my-label]")).to_contain_text("Post-visual perception deficit")

    page.get_by_role("link", name="wrong-model.zip").click()
    expect(overall.locator('[data-figure="V_true"]')).to_have_text("1.000")
    labels = page.locator("#failure-labels")
    expect(labels).to_contain_text("1 of 1 failed run labelled")
    expect(labels.locator('[data-mode="postvisual_perception_deficit"] .bar-n')).to_have_text("1")
