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

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from playwright.sync_api import expect

from annotation.judgment_tasks.doubt.services import task_doubt_recompute
from annotation.judgment_tasks.models import JudgmentTask, Outcome
from annotation.judgment_tasks.services import (
    assignment_next_for_user,
    judgment_submit,
    judgment_task_save,
)
from benchmark.evaluation.atp import score_answer
from benchmark.judge_prompts.mam import SUB_CHECKS
from benchmark.models import ItemStatus, JobStatus, Project
from benchmark.projects.services import item_status_set
from review.agreement.judge_examples.models import ExampleSet
from review.agreement.judge_examples.selectors import correction_cases
from review.agreement.judge_examples.services import judge_examples_add
from review.demo import demo_load
from review.evaluation.models import EvaluationResult, EvaluationRun
from review.evaluation.services import run_summarize
from review.gold.services import gold_mark
from review.judges.services import judge_run_create, judge_run_execute
from review.releases.services import release_create
from tests.judge_server import ScriptedServer

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
    #: a CSS selector: only that part of the page (a section the guide talks about)
    part: str = ""
    #: a CSS selector: that element (a wide table's card) scrolled to its right end first
    scroll_right: str = ""


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
    Shot(
        "reviewer-label-aggregation.png",
        "reviewer",
        lambda: f"/agreement/{_plan_task().pk}/?method=dawid-skene",
        "",
        part="#label-aggregation",
    ),
    Shot(
        "reviewer-items-by-doubt.png",
        "reviewer",
        lambda: f"/agreement/{_plan_task().pk}/",
        "",
        part="#items-by-doubt",
    ),
    Shot("reviewer-team.png", "reviewer", lambda: f"/projects/{_project(MMS).pk}/team/", ""),
    Shot(
        "reviewer-team-gold.png",
        "reviewer",
        lambda: f"/projects/{_project(MMS).pk}/team/",
        "",
        part=".gold-accuracy",
    ),
    Shot("reviewer-gold.png", "reviewer", lambda: f"/gold/{_plan_task().pk}/", ""),
    Shot(
        "reviewer-leaderboard.png",
        "reviewer",
        lambda: f"/projects/{_project(ATP).pk}/evaluation/leaderboard/",
        "",
        scroll_right="#leaderboard",  # the judge's columns and its trust are on the right
    ),
    Shot(
        "reviewer-worked-examples.png",
        "reviewer",
        lambda: f"/agreement/judge-examples/{ExampleSet.objects.earliest('id').pk}/",
        "",
    ),
    Shot(
        "reviewer-compare-models.png",
        "reviewer",
        lambda: f"/projects/{_project(ATP).pk}/model-compare/",
        "",
    ),
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


def _plan_judge_script(system: str, user: str, model: str) -> str:
    """The plan validity judge: every plan invalid (so it disagrees with the annotators)."""
    return "INVALID\nthe second step needs an image that no earlier step gives it"


def _worked_examples() -> None:
    """What a worked-examples set page shows: the plan validity judge, run against the scripted
    model server on the m&m's demo's plans, added as a rater of the plan task, and two of its
    correction cases added as worked examples by the admin."""
    project, admin = _project(MMS), get_user_model().objects.get(username="admin")
    task = _plan_task()
    server = ScriptedServer()
    server.script = staticmethod(_plan_judge_script)  # type: ignore[assignment]
    server.start()
    try:
        run, job = judge_run_create(
            project=project, user=None, judge="mms-plan", base_url=server.url, model="judge-m",
            workers=1,
        )  # fmt: skip
        assert judge_run_execute(job=job).status == JobStatus.SUCCEEDED
    finally:
        server.stop()
    key = f"judge-run:{run.pk}"
    cases = correction_cases(user=admin, task=task, key=key)
    assert len(cases) >= 2, cases
    judge_examples_add(user=admin, task=task, key=key, units=[c.unit for c in cases[:2]])


def _gold_items() -> None:
    """What the gold pages show: two plans nobody has judged yet, verified by the reviewer and
    marked gold for the plan task (the answer 1, valid), served at a gold rate of 50 % among
    annotator1's and annotator2's next items (annotator2 calls a gold plan invalid), and the
    task's doubt computed."""
    users = get_user_model().objects
    admin, reviewer = users.get(username="admin"), users.get(username="reviewer")
    task = _plan_task()
    judged = task.judgments.values("item_id")
    for item in task.project.items.exclude(pk__in=judged).order_by("-position")[:2]:
        item_status_set(item=item, user=reviewer, status=ItemStatus.VERIFIED, reason="checked")
        gold_mark(task=task, item=item, user=reviewer, value=1)
    task = judgment_task_save(
        project=task.project, user=admin, task=task, gold_rate=50, serve_by_doubt=True
    )
    gold = set(task.gold_items.filter(removed_at__isnull=True).values_list("item_id", flat=True))
    for username in ("annotator1", "annotator2"):
        annotator = users.get(username=username)
        for _ in range(3):
            lease = assignment_next_for_user(task=task, user=annotator)
            assert lease is not None
            wrong = username == "annotator2" and lease.item_id in gold
            judgment_submit(task=task, item=lease.item, user=annotator, value=0 if wrong else 1)
    task_doubt_recompute(task=task)


def _two_models_evaluated() -> None:
    """What the Leaderboard and "Compare two models" show: two models' finished evaluations
    of the ATP-Bench demo's verified items, their answers scored by the protocol's own scorer
    (one answers with the verified answer, the other with its first tool call left out)."""
    atp = _project(ATP)
    items = list(atp.items.filter(status=ItemStatus.VERIFIED).order_by("position"))
    for model, drop_first_call in (("demo-model-large", False), ("demo-model-small", True)):
        run = EvaluationRun.objects.create(
            project=atp, model=model, base_url="http://127.0.0.1:9/v1",
            settings={"workers": 1}, item_count=len(items),
        )  # fmt: skip
        for item in items:
            gold = item.raw_record.get("gt")
            answer = gold or ""
            if drop_first_call:
                answer = re.sub(r"<[a-z_]+>.*?</[a-z_]+>", "", answer, count=1, flags=re.S)
            EvaluationResult.objects.create(
                run=run, item=item, status="ok", output=answer,
                scores=score_answer(answer, gold), model_calls=1,
            )  # fmt: skip
        run_summarize(run=run)
    _mam_judges_the_answers(atp)


def _mam_script(system: str, user: str, model: str) -> str:
    """The MAM judge's agents: every call's sub-checks 2 but every other call's parameters,
    nothing missed, and a Chief score that grows with the answer's tool calls (so the two
    models differ)."""
    if system.startswith("You are the Recall"):
        return json.dumps({"missed": []})
    if system.startswith("You are the Precision"):
        calls = [
            {"index": n, **dict.fromkeys(SUB_CHECKS, 2), "parameters": 1 + n % 2, "comment": "ok"}
            for n in range(1, int(re.findall(r"The answer's (\d+) tool call", user)[0]) + 1)
        ]
        return json.dumps({"calls": calls})
    if "Chief Judge" in system:
        score = min(95, 55 + 10 * user.count("<tool>"))
        tier = "Excellent" if score >= 80 else "Good but Flawed"
        return json.dumps({"score": score, "tier": tier, "why": "the calls fit the answer"})
    return "I think it is fine."


def _mam_judges_the_answers(project: Project) -> None:
    """ATP-Bench's MAM judge on both models' answers, run here against the scripted model
    server, so the Leaderboard shows its columns and its trust ("no human ratings yet")."""
    server = ScriptedServer()
    server.script = staticmethod(_mam_script)  # type: ignore[assignment]
    server.start()
    try:
        _, job = judge_run_create(
            project=project, user=None, judge="atp-mam", base_url=server.url, model="judge-m",
            workers=1,
        )  # fmt: skip
        assert judge_run_execute(job=job).status == JobStatus.SUCCEEDED
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_each_role_guide_gets_its_screenshots(login_page, ready, tmp_path) -> None:  # type: ignore[no-untyped-def]
    demo_load()
    _a_days_work()
    _worked_examples()
    _gold_items()
    _two_models_evaluated()
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
        if shot.scroll_right:
            page.locator(shot.scroll_right).evaluate("e => { e.scrollLeft = e.scrollWidth; }")
        if shot.part:
            # cut from the whole page at the top, so the sticky header does not cover it
            part = page.locator(shot.part).first
            expect(part).to_be_visible()
            page.evaluate("() => window.scrollTo(0, 0)")
            box = part.bounding_box()
            assert box is not None, f"{shot.name}: {shot.part} is not shown"
            png = page.screenshot(full_page=True, clip=box)
        else:
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
