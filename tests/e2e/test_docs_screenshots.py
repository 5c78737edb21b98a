"""The screenshots of the role guides (docs/guides/*.md) are taken here, on the demo, so they
show the pages as they are today: each role logs in, opens the pages its guide talks about and
saves a PNG into docs/img/. The test fails when a page does not open or a PNG is not written;
``test_docs_reference_only_images_that_exist`` (no browser) fails when README.md or a page of
docs/ shows an image that is not in the tree.

In the normal suite the screenshots are taken and checked but written to a temporary folder,
so a test run leaves the checkout as it was. After changing a page a guide shows, retake them
into docs/img/ and commit the PNGs it rewrote:

    BENCHWRIGHT_UPDATE_SCREENSHOTS=1 .venv/bin/python -m pytest -q tests/e2e/test_docs_screenshots.py
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from playwright.sync_api import expect

from annotation.judgment_tasks.models import JudgmentTask, Outcome
from annotation.judgment_tasks.services import assignment_next_for_user, judgment_submit
from benchmark.models import ItemStatus, Project
from benchmark.projects.services import item_status_set
from review.demo import demo_load
from review.releases.services import release_create

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
IMAGES = DOCS / "img"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
VIEWPORT = {"width": 1280, "height": 860}

ATP = "ATP-Bench demo"
MMS = "m&m's demo"
AGENTIC = "Agentic-MME demo"


@dataclass(frozen=True)
class Shot:
    """One screenshot: the file under docs/img/, who takes it, the page (a function of the
    demo's ids, since they differ between runs), a heading the page must show first (or "")
    and whether to take the whole page."""

    name: str
    username: str
    path: Callable[[], str]
    heading: str
    full_page: bool = False  # the whole page, not only the window


def _project(name: str) -> Project:
    return Project.objects.get(name=name)


def _plan_task() -> JudgmentTask:
    return JudgmentTask.objects.filter(project__name=MMS, unit_kind="item").earliest("id")


def _item_with_images(name: str) -> str:
    project = _project(name)
    item = project.items.exclude(image_refs=[]).order_by("position").first()
    assert item is not None, f"{name} has no item with images"
    return f"/projects/{project.pk}/items/{item.pk}/"


def _first_item(name: str, route: str) -> str:
    """The page ``route`` (a route name taking the project and the item) of the project's first
    item."""
    project = _project(name)
    item = project.items.order_by("position").first()
    assert item is not None
    return reverse(route, args=[project.pk, item.pk])


def _disputed_item() -> str:
    """The adjudication page of the plan task's disagreement (``_a_days_work`` makes one)."""
    task = _plan_task()
    outcome = Outcome.objects.filter(task=task, verdict="disputed").earliest("id")
    return reverse("review:adjudicate", args=[task.pk, outcome.item_id])


SHOTS = [
    Shot("annotator-projects.png", "annotator1", lambda: "/", "Projects"),
    Shot(
        "annotator-judge.png", "annotator1", lambda: f"/judgment-tasks/{_plan_task().pk}/next/", ""
    ),
    Shot("annotator-item.png", "annotator1", lambda: _item_with_images(ATP), ""),
    # annotator1 verifies the demo's Agentic-MME items blind, so the editor is shown by the author
    Shot(
        "annotator-trajectory.png",
        "admin",
        lambda: _first_item(AGENTIC, "annotation:trajectory_edit"),
        "",
    ),
    Shot(
        "reviewer-tasks.png",
        "reviewer",
        lambda: f"/projects/{_project(MMS).pk}/judgment-tasks/",
        "",
    ),
    Shot("reviewer-agreement.png", "reviewer", lambda: f"/agreement/{_plan_task().pk}/", ""),
    Shot("reviewer-adjudicate.png", "reviewer", lambda: _disputed_item(), ""),
    Shot("reviewer-team.png", "reviewer", lambda: f"/projects/{_project(MMS).pk}/team/", ""),
    Shot(
        "reviewer-releases.png", "reviewer", lambda: f"/projects/{_project(ATP).pk}/releases/", ""
    ),
    Shot(
        "dataset-engineer-project.png",
        "admin",
        lambda: f"/projects/{_project(ATP).pk}/",
        ATP,
        full_page=True,  # the item list is below the project's buttons
    ),
    Shot(
        "dataset-engineer-import.png",
        "admin",
        lambda: f"/projects/{_project(ATP).pk}/datasets/import/",
        "",
    ),
    Shot(
        "dataset-engineer-new-item.png",
        "admin",
        lambda: f"/projects/{_project(ATP).pk}/items/new/",
        "",
    ),
    Shot(
        "dataset-engineer-plan.png", "admin", lambda: _first_item(MMS, "annotation:plan_edit"), ""
    ),
    Shot("admin-new-project.png", "admin", lambda: "/projects/new/", ""),
    Shot("admin-members.png", "admin", lambda: f"/projects/{_project(ATP).pk}/people/members/", ""),
    Shot("admin-settings.png", "admin", lambda: f"/projects/{_project(ATP).pk}/edit/", ""),
    Shot("admin-people.png", "admin", lambda: "/people/", ""),
]


def _a_days_work() -> None:
    """What the reviewer's pages show: the three annotators' votes on four plans (one of
    them disputed), and a release of three verified ATP-Bench items."""
    users = get_user_model().objects
    task = _plan_task()
    for n, username in enumerate(("annotator2", "annotator3", "annotator1")):
        user = users.get(username=username)
        for i in range(4 if n < 2 else 2):
            lease = assignment_next_for_user(task=task, user=user)
            assert lease is not None
            value = 0 if (i == 1 and username == "annotator3") else 1
            judgment_submit(task=task, item=lease.item, user=user, value=value)
    reviewer = users.get(username="reviewer")
    atp = _project(ATP)
    for item in atp.items.order_by("position")[:3]:
        item_status_set(item=item, user=reviewer, status=ItemStatus.VERIFIED, reason="checked")
    release_create(project=atp, user=reviewer, name="First verified items")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_each_role_guide_gets_its_screenshots(login_page, ready, tmp_path) -> None:  # type: ignore[no-untyped-def]
    demo_load()
    _a_days_work()
    images = IMAGES if os.environ.get("BENCHWRIGHT_UPDATE_SCREENSHOTS") == "1" else tmp_path
    images.mkdir(exist_ok=True)
    users = get_user_model().objects
    for shot in SHOTS:
        # a new session for each shot: logging another user in on the test client ends the
        # session of the one before
        page = login_page(users.get(username=shot.username))
        page.set_viewport_size(VIEWPORT)
        # a page's first figures may import NumPy, SciPy or scikit-learn: give it a minute
        answer = page.goto(shot.path(), timeout=60_000)
        assert answer is not None and answer.ok, f"{shot.name}: {shot.path()} answered {answer}"
        ready(page)
        page.wait_for_function("() => !document.querySelector('.htmx-request')")
        if shot.heading:
            expect(page.locator("h1").first).to_contain_text(shot.heading)
        png = page.screenshot(full_page=shot.full_page)
        assert png[:8] == PNG_SIGNATURE, f"{shot.name} is not a PNG"
        assert len(png) > 5_000, f"{shot.name} is almost empty"
        # the committed image is replaced only by a good one (a failed run leaves it as it was)
        target = images / shot.name
        target.with_suffix(".tmp").write_bytes(png)
        target.with_suffix(".tmp").replace(target)
        assert target.read_bytes() == png


def _markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)")


def test_docs_reference_only_images_that_exist() -> None:
    """Every image README.md and docs/**/*.md show is a file of the tree, every role guide
    shows at least one of the screenshots above, and every screenshot is shown somewhere."""
    shown: set[str] = set()
    missing = []
    for page in _markdown_files():
        for target in _IMAGE.findall(page.read_text(encoding="utf-8")):
            path = (page.parent / target).resolve()
            if not path.is_file():
                missing.append(f"{page.relative_to(ROOT)}: {target}")
            elif path.parent == IMAGES:
                shown.add(path.name)
    assert missing == []
    for guide in ("annotator", "reviewer", "dataset-engineer", "admin"):
        text = (DOCS / "guides" / f"{guide}.md").read_text(encoding="utf-8")
        assert f"img/{guide}-" in text, f"docs/guides/{guide}.md shows none of its screenshots"
    assert {shot.name for shot in SHOTS} <= shown
