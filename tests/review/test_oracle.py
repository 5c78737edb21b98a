"""Step-wise oracle testing (issue 10, Agentic-MME §2.4) against the scripted model server: the
conversation as sent, answers scored by the item's matcher, flagged items on the item page
and the project's page, the cache, resuming, per-item errors (no trajectory, a missing image
file, an undefined step image), the pages and who may use them, and ``manage.py
oracle_test``."""

from __future__ import annotations

import io
import json
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.imaging.recipe import Recipe
from benchmark.models import Image, Item, JobStatus, ModelCall, Project, ProjectKind, Role
from review.oracle import services as oracle
from review.oracle.models import OracleOutcome, OracleResult, OracleRun
from tests.factories import (
    ImageFactory,
    ItemFactory,
    MembershipFactory,
    ProjectFactory,
    TrajectoryFactory,
    UserFactory,
    image_ref,
)
from tests.llm_server import MODEL, FakeModelServer, point_at
from tests.review import test_runs as base

mme_project = base.mme_project

pytestmark = pytest.mark.django_db


class ScriptedServer(FakeModelServer):
    """Answers with ``script(text)``, ``text`` being every text part of the user turn."""

    script: Callable[[str], str] = staticmethod(lambda text: "<answer>nothing</answer>")

    def _reply(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict]:
        status, payload, headers = super()._reply(path, body)
        if status == 200:
            content = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
            text = "\n".join(p["text"] for p in content if p["type"] == "text")
            payload["choices"][0]["message"]["content"] = self.script(text)
        return status, payload, headers


def answers(text: str) -> str:
    if "house number" in text:
        return "The number reads 317.\n<answer>317</answer>"
    if "colour" in text:
        return "<answer>red</answer>"  # the expected answer is green
    if "district" in text:
        return "<answer>Old Town</answer>"
    return "<answer>no idea</answer>"


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    s = ScriptedServer().start()
    s.script = answers  # type: ignore[method-assign]
    try:
        yield s
    finally:
        s.stop()


def v_step(cid: str, sha: str | None = None, **extra: Any) -> dict[str, Any]:
    step: dict[str, Any] = {
        "id": cid,
        "axis": "V",
        "description": f"Crop the region for {cid}.",
        "tools": ["crop"],
        "code_check": {
            "verifier": "verify_crop_ast",
            "image_index": 0,
            "bbox_2d": [0, 0, 500, 500],
        },
        "visual_check": {"question": "What is shown?", "expected_answer": "VISUAL-SECRET"},
    }
    if sha:
        step["reference_image"] = {"sha256": sha, "recipe": None, "box_px": None}
    step.update(extra)
    return step


S_STEP = {
    "id": "S1",
    "axis": "S",
    "description": "Search which district the street is in.",
    "tools": ["google_search"],
    "search_check": {
        "keywords": ["Willow Street district"],
        "expected": "Old Town",
        "urls": ["https://example.org/willow"],
    },
}


class World:
    def __init__(self, server: ScriptedServer) -> None:
        self.project = ProjectFactory(
            name="Oracle MME", kind=ProjectKind.TRAJECTORY, data_format="agentic-mme"
        )
        point_at(self.project, server, max_retries=0)
        self.users = {}
        for role in (Role.ADMIN, Role.REVIEWER, Role.ANNOTATOR):
            user = UserFactory(username=f"oracle-{role}")
            MembershipFactory(project=self.project, user=user, role=role)
            self.users[str(role)] = user
        self.input = ImageFactory(projects=[self.project])
        self.crop = ImageFactory(projects=[self.project])
        self.house = self.item(
            "0001",
            "What house number is painted above the door? Answer with the digits only.",
            "317",
            [v_step("C1", self.crop.sha256)],
        )
        self.door = self.item(
            "0002",
            "What colour is the door? Answer with one word.",
            "green",
            [v_step("C1", self.crop.sha256)],
            match_type="contains",
        )
        self.district = self.item(
            "0003",
            "Which district is this street in? Answer with the name.",
            "Old Town",
            [v_step("C1", self.crop.sha256), S_STEP],
            match_type="contains",
        )

    def item(
        self,
        external_id: str,
        prompt: str,
        answer: str,
        steps: list[dict[str, Any]] | None,
        match_type: str = "exact",
        **extra: Any,
    ) -> Item:
        item = ItemFactory(
            project=self.project,
            external_id=external_id,
            query=prompt,
            expected_answer=answer,
            match_type=match_type,
            level=1,
            image_refs=[image_ref(self.input, position=0, role="input")],
            raw="",
            documents=[],
            category="",
            intent="",
            **extra,
        )
        if steps is not None:
            TrajectoryFactory(item=item, key="reference", checkpoints=steps)
        return item


@pytest.fixture
def world(server: ScriptedServer) -> World:
    return World(server)


def run(project: Project, **kw: Any) -> tuple[OracleRun, dict[str, OracleResult]]:
    made, job = oracle.oracle_run_create(project=project, user=None, **kw)
    job = oracle.oracle_run_execute(job=job)
    assert job.status == JobStatus.SUCCEEDED, job.error
    made.refresh_from_db()
    made.job = job
    results = {r.item.external_id: r for r in made.results.select_related("item")}
    return made, results


# --------------------------------------------------------------------------- the job


def test_answers_are_scored_by_the_items_matcher_and_failures_flagged(
    world: World, server: ScriptedServer
) -> None:
    made, results = run(world.project)
    assert {k: r.outcome for k, r in results.items()} == {
        "0001": OracleOutcome.SOLVED,
        "0002": OracleOutcome.FAILED,
        "0003": OracleOutcome.SOLVED,
    }
    assert results["0001"].answer == "317"
    assert results["0001"].output.startswith("The number reads 317.")
    assert results["0002"].answer == "red"
    assert results["0001"].latency_ms is not None and results["0001"].prompt_tokens == 17
    assert made.job is not None and made.job.result["summary"]["solved"] == 2
    assert made.job.result["summary"]["flagged"] == 1
    assert made.job.result["summary"]["solved_pct"] == pytest.approx(66.7)
    assert server.count == 3
    # Each new answer is recorded as a model call of the item (what answers repeats).
    calls = ModelCall.objects.filter(purpose=oracle.ORACLE_PURPOSE)
    assert calls.count() == 3
    call = calls.get(item=world.district)
    assert call.image_sha256s == [world.input.sha256, world.crop.sha256]
    assert "[Image 1]" in call.prompt and "Found: Old Town" in call.prompt


def test_the_request_walks_the_reference_with_images_and_findings_in_order(
    world: World, server: ScriptedServer
) -> None:
    run(world.project, items=["0003"])
    (request,) = server.requests
    content = request.user_content
    kinds = [p["type"] for p in content]
    assert kinds.count("image_url") == 2
    first, second = (i for i, k in enumerate(kinds) if k == "image_url")
    texts = [p.get("text", "") for p in content]
    step1 = next(i for i, t in enumerate(texts) if t.startswith("Step 1:"))
    found = next(i for i, t in enumerate(texts) if "Found: Old Town" in t)
    assert first < step1 < second < found == len(texts) - 2
    assert "Searched for: Willow Street district" in texts[found]
    assert "https://example.org/willow" in texts[found]
    assert texts[-1].startswith("Now answer the question: Which district")
    assert "VISUAL-SECRET" not in json.dumps(request.body)
    assert request.body["messages"][0]["role"] == "system"
    # Stored: the same messages with images as sha256 references only.
    stored = OracleResult.objects.get(item=world.district).messages
    assert "base64" not in json.dumps(stored)
    images = [p for p in stored[1]["content"] if p["type"] == "image"]
    assert [p["sha256"] for p in images] == [world.input.sha256, world.crop.sha256]


def test_identical_calls_come_from_the_cache(world: World, server: ScriptedServer) -> None:
    run(world.project)
    assert server.count == 3
    second, results = run(world.project)
    assert server.count == 3  # nothing asked again
    assert all(r.cached for r in results.values())
    assert results["0002"].outcome == OracleOutcome.FAILED
    assert second.job is not None and second.job.result["summary"]["calls"]["cached"] == 3
    # Another model is another request.
    run(world.project, model="other-model")
    assert server.count == 6


def test_cache_mode_off_asks_again(world: World, server: ScriptedServer) -> None:
    run(world.project)
    point_at(world.project, server, max_retries=0, cache="off")
    run(world.project)
    assert server.count == 6


def test_an_endpoint_failure_is_a_per_item_error_and_resume_asks_only_again(
    world: World, server: ScriptedServer
) -> None:
    point_at(world.project, server, max_retries=0, concurrency=1)
    server.fail_next(500)
    made, results = run(world.project)
    errors = [r for r in results.values() if r.outcome == OracleOutcome.ERROR]
    assert len(errors) == 1 and errors[0].transport_error
    assert "500" in errors[0].error
    assert server.count == 3
    job = oracle.oracle_run_resume(run=made, user=None)
    job = oracle.oracle_run_execute(job=job)
    assert job.status == JobStatus.SUCCEEDED
    assert server.count == 4  # only the failed item was asked again
    assert job.result["summary"]["calls"] == {
        "made": 1,
        "cached": 0,
        "reused": 2,
        "seconds": job.result["summary"]["calls"]["seconds"],
    }
    assert made.results.filter(outcome=OracleOutcome.ERROR).count() == 0
    assert made.results.count() == 3


def test_calls_run_concurrently_up_to_the_endpoints_limit(
    world: World, server: ScriptedServer
) -> None:
    point_at(world.project, server, max_retries=0, concurrency=2)
    server.hold()

    def release_when_two_wait() -> None:
        server.wait_for_arrivals(2)
        server.release()

    releaser = threading.Thread(target=release_when_two_wait)
    releaser.start()
    _, results = run(world.project)
    releaser.join()
    assert server.max_in_flight == 2
    assert len(results) == 3 and server.count == 3


def test_resume_is_refused_while_the_job_runs(world: World) -> None:
    made, job = oracle.oracle_run_create(project=world.project, user=None)
    with pytest.raises(Conflict, match="still queued"):
        oracle.oracle_run_resume(run=made, user=None)


def test_bad_items_get_a_clear_error_and_the_job_goes_on(
    world: World, server: ScriptedServer
) -> None:
    world.item("0004", "What colour is the door?", "green", None)  # no reference trajectory
    gone = ImageFactory(projects=[world.project])
    world.item("0005", "What colour is the door?", "green", [v_step("C1", gone.sha256)])
    gone.file.storage.delete(gone.file.name)
    world.item(
        "0006",
        "What colour is the door?",
        "green",
        [v_step("C1", None, tools=["enhance"], code_check={"verifier": "verify_enhance_ast"})],
    )
    made, results = run(world.project, items=["0001", "0004", "0005", "0006"])
    assert results["0001"].outcome == OracleOutcome.SOLVED
    assert results["0004"].outcome == OracleOutcome.ERROR
    assert "no reference trajectory" in results["0004"].error
    assert results["0005"].outcome == OracleOutcome.ERROR
    assert f"image {gone.sha256[:12]}… (Image 1, from step C1) is missing" in results["0005"].error
    assert "step 1 (C1)" in results["0006"].error and "enhance" in results["0006"].error
    assert "trajectory editor" in results["0006"].error
    assert server.count == 1
    assert not any(r.transport_error for r in results.values())
    # Without a chosen list, items without a reference are not part of the run.
    _, everything = run(world.project)
    assert "0004" not in everything


def test_an_image_the_task_file_defines_is_derived_and_stored(
    world: World, server: ScriptedServer
) -> None:
    world.item("0007", "What house number is on it?", "317", [v_step("C1", None)])
    _, results = run(world.project, items=["0007"])
    result = results["0007"]
    assert result.outcome == OracleOutcome.SOLVED
    derived = Image.objects.get(source=world.input)
    assert derived.recipe == (
        Recipe.build(world.input.sha256).then("crop", {"bbox_2d": [0, 0, 500, 500]}).to_dict()
    )
    shas = [p["sha256"] for p in result.messages[1]["content"] if p["type"] == "image"]
    assert shas == [world.input.sha256, derived.sha256]
    assert result.notes and "derived from the task file" in result.notes[0]
    assert derived.width == world.input.width // 2


def test_unknown_items_and_wrong_projects_are_refused(world: World, server: ScriptedServer) -> None:
    with pytest.raises(ValidationFailed, match="no item with the id nope"):
        oracle.oracle_run_create(project=world.project, user=None, items=["0001", "nope"])
    plan_project = ProjectFactory(kind=ProjectKind.PLAN, data_format="mms")
    with pytest.raises(ValidationFailed, match="only trajectory"):
        oracle.oracle_run_create(project=plan_project, user=None)
    empty = ProjectFactory(kind=ProjectKind.TRAJECTORY, data_format="agentic-mme")
    point_at(empty, server)
    with pytest.raises(ValidationFailed, match="no item of .* has a reference trajectory"):
        oracle.oracle_run_create(project=empty, user=None)
    unconfigured = ProjectFactory(kind=ProjectKind.TRAJECTORY, data_format="agentic-mme")
    with pytest.raises(ValidationFailed, match="No model to test with"):
        oracle.oracle_run_create(project=unconfigured, user=None)
    assert OracleRun.objects.count() == 0


def test_who_may_start_a_run_and_on_which_endpoint(world: World, server: ScriptedServer) -> None:
    with pytest.raises(Forbidden):
        oracle.oracle_run_create(project=world.project, user=world.users["annotator"])
    oracle.oracle_run_create(project=world.project, user=world.users["reviewer"], model="m2")
    with pytest.raises(Forbidden, match="manage"):
        oracle.oracle_run_create(
            project=world.project, user=world.users["reviewer"], base_url="http://127.0.0.1:9/v1"
        )
    made, _ = oracle.oracle_run_create(
        project=world.project, user=world.users["admin"], base_url="http://127.0.0.1:9/v1"
    )
    assert made.base_url == "http://127.0.0.1:9/v1" and made.model == MODEL


# --------------------------------------------------------------------------- pages


@pytest.fixture
def as_role(world: World, client_for: Any) -> Callable[[str], Client]:
    return lambda role: client_for(world.users[role])


def test_the_oracle_page_shows_figures_flags_and_runs(
    world: World, as_role: Callable[[str], Client], django_assert_max_num_queries: Any
) -> None:
    run(world.project)
    run(world.project, items=["0001"], model="other-model")
    url = reverse("review:oracle", args=[world.project.pk])
    client = as_role("reviewer")
    with django_assert_max_num_queries(20):
        response = client.get(url)
    html = response.content.decode()
    assert response.status_code == 200
    assert f'data-model="{MODEL}"' in html and 'data-model="other-model"' in html
    assert 'data-figure="solved-pct">66.7%' in html
    assert 'data-flagged="0002"' in html
    assert reverse("benchmark:item_detail", args=[world.project.pk, world.door.pk]) in html
    assert html.count("data-run=") == 2
    # A later run that solves the item clears its flag for that model.
    world.door.expected_answer = "red"
    world.door.save()
    run(world.project, items=["0002"])
    html = client.get(url).content.decode()
    assert 'data-flagged="0002"' not in html and "data-nothing-flagged" in html


def test_not_tested_names_the_items_on_the_oracle_and_run_pages(
    world: World,
    server: ScriptedServer,
    as_role: Callable[[str], Client],
    django_assert_max_num_queries: Any,
) -> None:
    """ "Not tested 1" once left the reader to guess which item: both pages now name it."""
    world.item("0004", "What colour is the door?", "green", None)  # no reference trajectory
    made, results = run(world.project, items=["0001", "0004"])
    client = as_role("reviewer")
    with django_assert_max_num_queries(20):
        html = client.get(reverse("review:oracle", args=[world.project.pk])).content.decode()
    cell = re.search(r'data-figure="errors">1<ul[^>]*data-not-tested>(.*?)</ul>', html, re.S)
    assert cell, "the Not tested figure lists its items"
    item = results["0004"].item
    assert reverse("benchmark:item_detail", args=[world.project.pk, item.pk]) in cell.group(1)
    assert ">0004</a>" in cell.group(1) and "0001" not in cell.group(1)
    page = client.get(reverse("review:oracle_run", args=[made.pk])).content.decode()
    named = re.search(r"1 not tested \(<span data-not-tested>(.*?)</span>\)", page, re.S)
    assert named and ">0004</a>" in named.group(1)
    assert f'href="#oracle-result-{results["0004"].pk}"' in named.group(1)


def test_the_oracle_page_is_for_reviewers(world: World, as_role: Callable[[str], Client]) -> None:
    url = reverse("review:oracle", args=[world.project.pk])
    assert as_role("annotator").get(url).status_code == 403
    outsider = UserFactory()
    MembershipFactory(project=ProjectFactory(), user=outsider, role=Role.ADMIN)
    other = Client()
    other.force_login(outsider)
    assert other.get(url).status_code == 404
    assert Client().get(url).status_code == 302


def test_starting_a_run_from_the_page(
    world: World,
    server: ScriptedServer,
    as_role: Callable[[str], Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    url = reverse("review:oracle", args=[world.project.pk])
    client = as_role("reviewer")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            url,
            {"items": "0001, 0002"},
            HTTP_HX_REQUEST="true",
            HTTP_HX_TARGET="oracle-start",
        )
    assert response.status_code == 200
    made = OracleRun.objects.get()
    assert (
        made.selection == {"items": ["0001", "0002"]} and made.created_by == world.users["reviewer"]
    )
    assert made.job is not None
    made.job.refresh_from_db()
    assert made.job.status == JobStatus.SUCCEEDED
    assert f'id="job-{made.job.pk}"' in response.content.decode()
    assert server.count == 2
    card = client.get(reverse("benchmark:job_detail", args=[made.job.pk])).content.decode()
    assert "data-oracle-done" in card
    assert "2 items tested with fake-vl-7b, 1 solved (50.0%), 1 flagged for review" in card
    assert (
        as_role("annotator").get(reverse("benchmark:job_detail", args=[made.job.pk])).status_code
        == 403
    )
    # Bad input is said on the form, nothing is started.
    response = client.post(
        url, {"items": "0001 zzz"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="oracle-start"
    )
    assert response.status_code == 200 and "no item with the id zzz" in response.content.decode()
    response = client.post(url, {"base_url": "http://127.0.0.1:9/v1"})
    assert response.status_code == 403
    assert OracleRun.objects.count() == 1
    # Without htmx: to the run's page.
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"items": "0003"})
    assert response.status_code == 302
    assert response["Location"] == reverse("review:oracle_run", args=[OracleRun.objects.first().pk])


def test_the_run_page_and_a_results_conversation(
    world: World, as_role: Callable[[str], Client], django_assert_max_num_queries: Any
) -> None:
    made, results = run(world.project)
    client = as_role("reviewer")
    with django_assert_max_num_queries(15):
        html = client.get(reverse("review:oracle_run", args=[made.pk])).content.decode()
    assert 'data-item="0002" data-outcome="failed"' in html
    assert "Failed · flagged" in html and "red" in html
    url = reverse("review:oracle_result", args=[results["0003"].pk])
    with django_assert_max_num_queries(15):
        response = client.get(url)
    html = response.content.decode()
    assert response.status_code == 200
    assert "Found: Old Town" in html
    assert reverse("benchmark:image_thumb", args=[world.crop.sha256]) in html
    assert "data-answer>Old Town" in html
    assert as_role("annotator").get(url).status_code == 403


def test_resume_from_the_run_page(
    world: World,
    server: ScriptedServer,
    as_role: Callable[[str], Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    point_at(world.project, server, max_retries=0, concurrency=1)
    server.fail_next(500)
    made, _ = run(world.project)
    url = reverse("review:oracle_run_resume", args=[made.pk])
    assert as_role("annotator").post(url).status_code == 403
    with django_capture_on_commit_callbacks(execute=True):
        response = as_role("reviewer").post(
            url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="oracle-resume"
        )
    assert response.status_code == 200
    assert made.results.filter(outcome=OracleOutcome.ERROR).count() == 0
    # While a job runs, resuming answers 409 and shows it.
    oracle.oracle_run_resume(run=made, user=None)
    response = as_role("reviewer").post(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="oracle-resume")
    assert response.status_code == 409 and "data-resume-error" in response.content.decode()


def test_a_failed_item_carries_a_notice_on_its_page(
    world: World, as_role: Callable[[str], Client]
) -> None:
    _, results = run(world.project)
    door = reverse("benchmark:item_detail", args=[world.project.pk, world.door.pk])
    house = reverse("benchmark:item_detail", args=[world.project.pk, world.house.pk])
    html = as_role("reviewer").get(door).content.decode()
    assert f"The oracle test with {MODEL} failed:" in html
    assert "the model answered “red”" in html
    assert reverse("review:oracle_result", args=[results["0002"].pk]) in html
    assert "item-notice-oracle-failed" not in as_role("reviewer").get(house).content.decode()
    # Annotators see the notice too (they fix items), without the reviewers' link.
    html = as_role("annotator").get(door).content.decode()
    assert "The oracle test with" in html
    assert reverse("review:oracle_result", args=[results["0002"].pk]) not in html
    # Once the item changes, the notice says the test is out of date.
    world.door.query = "What colour is the front door? Answer with one word."
    world.door.save()
    html = as_role("reviewer").get(door).content.decode()
    assert "The item has changed since this test" in html


# --------------------------------------------------------------------------- the command


def test_the_command_prints_one_line_per_item_and_a_summary(
    world: World, server: ScriptedServer
) -> None:
    out = io.StringIO()
    call_command("oracle_test", "--project", world.project.name, stdout=out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    *items, summary = lines
    assert [(i["item"], i["outcome"], i["correct"]) for i in items] == [
        ("0001", "solved", True),
        ("0002", "failed", False),
        ("0003", "solved", True),
    ]
    assert items[1]["answer"] == "red" and items[1]["expected"] == "green"
    assert summary["summary"]["tested"] == 3 and summary["summary"]["flagged"] == 1
    assert summary["summary"]["model"] == MODEL
    assert summary["summary"]["calls"]["made"] == 3
    out = io.StringIO()
    call_command(
        "oracle_test",
        "--project",
        world.project.name,
        "--base-url",
        server.url,
        "--model",
        "cli-model",
        "--items",
        "0002",
        stdout=out,
    )
    (line, summary) = [json.loads(x) for x in out.getvalue().splitlines()]
    assert line["model"] == "cli-model" and line["cached"] is False
    assert server.requests[-1].body["model"] == "cli-model"


def test_the_command_tests_the_items_of_every_items_option(
    world: World, server: ScriptedServer
) -> None:
    """``--items 0001 --items 0003`` tests both (a repeated option used to keep only its last
    ids; issue 22, item 14)."""
    out = io.StringIO()
    call_command(
        "oracle_test",
        "--project",
        world.project.name,
        "--items",
        "0001",
        "--items",
        "0003",
        stdout=out,
    )
    *items, _summary = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [i["item"] for i in items] == ["0001", "0003"]


def test_the_command_refuses_bad_input(world: World) -> None:
    with pytest.raises(CommandError, match="no project named"):
        call_command("oracle_test", "--project", "nope")
    with pytest.raises(CommandError, match="no item with the id x9"):
        call_command("oracle_test", "--project", world.project.name, "--items", "x9")


# --------------------------------------------------------------------------- the sample tasks


@base.needs_samples
def test_the_sample_tasks_are_walked_from_their_task_files(
    mme_project: Project, model_server: FakeModelServer
) -> None:
    """Imported tasks store no ground-truth images: the crops and rotations their task files
    define are derived; task 0003's "enhance" records no arguments, so it cannot be tested
    until someone stores that step's image."""
    point_at(mme_project, model_server)
    model_server.answer = "<answer>130</answer>"
    _, results = run(mme_project)
    assert sorted(results) == ["0001", "0002", "0003", "0004", "0005", "0006"]
    assert results["0005"].outcome == OracleOutcome.SOLVED
    assert results["0003"].outcome == OracleOutcome.ERROR
    assert "step 1 (C1)" in results["0003"].error and "enhance" in results["0003"].error
    assert "step 2 (C2)" in results["0003"].error
    assert {k for k, r in results.items() if r.outcome == OracleOutcome.FAILED} == {
        "0001",
        "0002",
        "0004",
        "0006",
    }
    assert model_server.count == 5
    five = results["0005"].messages[1]["content"]
    assert [p["index"] for p in five if p["type"] == "image"] == [0, 1, 2, 3]
