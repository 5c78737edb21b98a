"""Agentic-MME judges in run scoring (issue 10): the V judge's any-pass rule over the images
from the checkpoint's match onwards, the S judge's PASS/FAIL, a reply that does not parse twice
falling back to the proxy (and saying so), a person's answer overriding the judge, the page
saying which was used, and ``score_runs --judge-base-url``."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from benchmark.models import JobStatus, Project
from review.runs import judging
from review.runs.models import AgentRun
from tests.llm_server import FakeModelServer, point_at
from tests.review import test_runs as base

mme_project = base.mme_project
people = base.people
reviewer = base.reviewer

pytestmark = [pytest.mark.django_db, base.needs_samples]


class ScriptedServer(FakeModelServer):
    """Answers with ``script(body)``: the reply depends on what was asked."""

    script: Callable[[dict[str, Any]], str] = staticmethod(lambda body: "Answer: nothing")  # type: ignore[assignment]

    def _reply(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        self.answer = self.script(body)
        return super()._reply(path, body)


@pytest.fixture
def judge_server() -> Iterator[ScriptedServer]:
    server = ScriptedServer().start()
    try:
        yield server
    finally:
        server.stop()


def is_s(body: dict[str, Any]) -> bool:
    return "search step" in body["messages"][0]["content"]


def sample_0003_with_search(tmp: Path) -> tuple[Path, Path]:
    """Tasks and runs folders: the sample run 0003 (8 images; its crop C2 matched at a later
    call) and task 0003 given an extra S checkpoint the run's one search answers."""
    tasks, runs = tmp / "json", tmp / "runs"
    tasks.mkdir()
    task = json.loads((base.MME / "json" / "0003.json").read_text())
    task["process_evaluation"]["checkpoints"].append(
        {
            "id": "S1",
            "axis": "S",
            "description": "Find the street's district (expected to find: Old Town).",
            "tools": ["google_search"],
            "search_check": {"keywords": ["district"], "expected": "Old Town"},
        }
    )
    (tasks / "0003.json").write_text(json.dumps(task))
    shutil.copytree(base.MME / "runs" / "0003", runs / "0003")
    events = json.loads((runs / "0003" / "tool_use_list.json").read_text())
    events = events[1:]  # without the first crop, C2's crop matches the fourth call
    events.append(
        {
            "index": 9,
            "tool_name": "google_search",
            "arguments": {"query": "street district"},
            "output": {"ok": "true", "context": "The street lies in the Harbour quarter."},
        }
    )
    (runs / "0003" / "tool_use_list.json").write_text(json.dumps(events))
    return tasks, runs


def score_with(tasks: Path, runs: Path, server: FakeModelServer | None) -> list[dict[str, Any]]:
    out = io.StringIO()
    args = ["--tasks", str(tasks), "--runs", str(runs)]
    if server is not None:
        args += ["--judge-base-url", server.url, "--judge-model", "fake-vl-7b"]
    call_command("score_runs", *args, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def checkpoint(line: dict[str, Any], cid: str) -> dict[str, Any]:
    return next(c for c in line["checkpoints"] if c["id"] == cid)


def v_images_expected(run_dir: Path, task: dict[str, Any], cid: str) -> int:
    """How many images the run produced from the checkpoint's proxy-scored match onwards."""
    from benchmark.metrics import agentic_mme as mme

    run = mme.RunRecord.from_dir(run_dir)
    score = mme.score_run(task, run)
    hit = next(c for c in score.checkpoints if c.id == cid).hit_index
    return len(judging.images_from_match(run, hit))


def test_v_passes_when_any_answer_shows_it_and_counts_images_from_the_match(
    judge_server: ScriptedServer, tmp_path: Path
) -> None:
    tasks, runs = sample_0003_with_search(tmp_path)
    task = json.loads((tasks / "0003.json").read_text())
    cp = next(c for c in task["process_evaluation"]["checkpoints"] if c["id"] == "C2")
    expected = cp["visual_check"]["expected_answer"]
    v_seen: list[int] = []

    def script(body: dict[str, Any]) -> str:
        if is_s(body):
            return "FAIL\nthe results name another quarter"
        v_seen.append(1)
        # Only the second image asked about shows it, in another case.
        return f"Answer: it reads {expected.upper()}" if len(v_seen) == 2 else "Answer: a wall"

    judge_server.script = script  # type: ignore[method-assign]
    line = score_with(tasks, runs, judge_server)[0]
    c2 = checkpoint(line, "C2")
    n = v_images_expected(runs / "0003", task, "C2")
    assert n == 5  # calls 3 to 8 made five images; the three before the match are not asked
    assert len(v_seen) == n
    assert c2["visual_passed"] is True and c2["detail"]["decided_by"] == "judge"
    assert line["judge_model"] == "fake-vl-7b"
    image_requests = [r for r in judge_server.requests if not is_s(r.body)]
    assert all(len(r.image_urls) == 1 for r in image_requests)
    assert all(r.image_urls[0].startswith("data:image/png;base64,") for r in image_requests)
    s1 = checkpoint(line, "S1")
    assert s1["passed"] is False and s1["detail"]["decided_by"] == "judge"


def test_v_fails_when_no_answer_shows_it_and_s_passes_on_pass(
    judge_server: ScriptedServer, tmp_path: Path
) -> None:
    tasks, runs = sample_0003_with_search(tmp_path)
    judge_server.script = (  # type: ignore[method-assign]
        lambda body: "PASS\nfound it" if is_s(body) else "Answer: a blank wall"
    )
    line = score_with(tasks, runs, judge_server)[0]
    c2 = checkpoint(line, "C2")
    assert c2["visual_passed"] is False and c2["passed"] is False
    assert c2["detail"]["decided_by"] == "judge"
    assert line["V_true"] == 0.0
    # The proxy would fail S1 (its results do not contain "Old Town"); the judge's PASS decides.
    s1 = checkpoint(line, "S1")
    assert s1["passed"] is True and s1["detail"]["decided_by"] == "judge" and line["S"] == 1.0
    proxy = score_with(tasks, runs, None)[0]
    assert checkpoint(proxy, "S1")["passed"] is False
    assert checkpoint(proxy, "S1")["detail"]["decided_by"] == "proxy"
    assert checkpoint(proxy, "C2")["detail"]["decided_by"] == "proxy"
    assert proxy["judge_model"] is None


def test_s_first_line_must_be_pass_or_fail(judge_server: ScriptedServer, tmp_path: Path) -> None:
    """ "PASS" on a later line is not a verdict: asked again once, then the proxy decides."""
    tasks, runs = sample_0003_with_search(tmp_path)
    judge_server.script = (  # type: ignore[method-assign]
        lambda body: "I think so.\nPASS" if is_s(body) else "Answer: a wall"
    )
    line = score_with(tasks, runs, judge_server)[0]
    s1 = checkpoint(line, "S1")
    assert sum(is_s(r.body) for r in judge_server.requests) == 2
    assert s1["detail"]["decided_by"] == "proxy" and s1["method"] == "search_proxy"
    assert "did not parse twice" in s1["detail"]["judge_fallback"]
    assert s1["passed"] is False  # the proxy: "Old Town" is not in the results


def test_an_unparseable_v_reply_is_retried_once_then_the_proxy_decides(
    judge_server: ScriptedServer, tmp_path: Path
) -> None:
    tasks, runs = sample_0003_with_search(tmp_path)
    task = json.loads((tasks / "0003.json").read_text())
    judge_server.script = (  # type: ignore[method-assign]
        lambda body: "PASS" if is_s(body) else "It shows a sign, I believe."
    )
    line = score_with(tasks, runs, judge_server)[0]
    n = v_images_expected(runs / "0003", task, "C2")
    assert sum(not is_s(r.body) for r in judge_server.requests) == 2 * n
    c2 = checkpoint(line, "C2")
    proxy = checkpoint(score_with(tasks, runs, None)[0], "C2")
    assert c2["detail"]["decided_by"] == "proxy"
    assert "did not parse twice" in c2["detail"]["judge_fallback"]
    assert c2["visual_passed"] == proxy["visual_passed"]
    assert c2["detail"]["visual"]["method"] == "bbox_proxy"


def test_a_retry_that_parses_decides(judge_server: ScriptedServer, tmp_path: Path) -> None:
    tasks, runs = sample_0003_with_search(tmp_path)
    asked: dict[str, int] = {}

    def script(body: dict[str, Any]) -> str:
        if is_s(body):
            key = "s"
            asked[key] = asked.get(key, 0) + 1
            return "maybe" if asked[key] == 1 else "FAIL"
        return "Answer: a wall"

    judge_server.script = script  # type: ignore[method-assign]
    s1 = checkpoint(score_with(tasks, runs, judge_server)[0], "S1")
    assert asked["s"] == 2 and s1["detail"]["decided_by"] == "judge" and s1["passed"] is False


def test_a_bad_judge_option_says_what_is_missing(tmp_path: Path) -> None:
    from django.core.management.base import CommandError

    tasks, runs = sample_0003_with_search(tmp_path)
    with pytest.raises(CommandError, match="--judge-base-url and --judge-model"):
        call_command("score_runs", "--tasks", str(tasks), "--runs", str(runs), "--judge-model", "x")
    with pytest.raises(CommandError, match="not in MODEL_API_KEY_ENV_ALLOWLIST"):
        call_command(
            "score_runs",
            "--tasks",
            str(tasks),
            "--runs",
            str(runs),
            "--judge-base-url",
            "http://127.0.0.1:9/v1",
            "--judge-model",
            "x",
            "--judge-api-key-env",
            "HOME",
        )


# --------------------------------------------------------------------------- on the web


def upload_0001(client: Client, project: Project, capture: Any) -> AgentRun:
    base.upload(
        client,
        project,
        capture,
        [base.zip_upload("runs.zip", base.zip_folder(base.MME / "runs" / "0001", "0001/"))],
    )
    job = base.last_job()
    assert job.status == JobStatus.SUCCEEDED, job.error
    return AgentRun.objects.get()


def test_the_web_job_uses_the_projects_model_and_a_person_overrides(
    mme_project: Project,
    reviewer: Client,
    judge_server: ScriptedServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    point_at(mme_project, judge_server)
    judge_server.script = lambda body: "Answer: no sign visible"  # type: ignore[method-assign]
    run = upload_0001(reviewer, mme_project, django_capture_on_commit_callbacks)
    c1 = next(c for c in run.score["checkpoints"] if c["id"] == "C1")
    # The proxy passes this crop; the judge (one image, one call) says it does not show it.
    assert judge_server.count == 1
    assert c1["detail"]["decided_by"] == "judge" and c1["visual_passed"] is False
    assert run.score["judge_model"] == "fake-vl-7b" and run.score["V_true"] == 0.0
    page = reviewer.get(f"/runs/agent-runs/{run.pk}/").content.decode()
    assert "Judge model: <strong>fake-vl-7b</strong>" in page
    assert 'data-decided-by="judge"' in page and "no sign visible" in page
    results = reviewer.get(f"/runs/{run.run_set_id}/").content.decode()
    assert "Judge model: <strong>fake-vl-7b</strong>" in results

    reviewer.post(
        f"/runs/agent-runs/{run.pk}/visual/", {"checkpoint": "C1", "passed": "yes", "seen": 0}
    )
    run.refresh_from_db()
    c1 = next(c for c in run.score["checkpoints"] if c["id"] == "C1")
    assert c1["detail"]["decided_by"] == "person" and run.score["V_true"] == 1.0
    assert judge_server.count == 1  # the person's answer asked no model
    page = reviewer.get(f"/runs/agent-runs/{run.pk}/").content.decode()
    assert 'data-decided-by="person"' in page


def test_without_a_judge_the_proxy_decides_and_the_page_says_so(
    mme_project: Project, reviewer: Client, django_capture_on_commit_callbacks: Any
) -> None:
    run = upload_0001(reviewer, mme_project, django_capture_on_commit_callbacks)
    c1 = next(c for c in run.score["checkpoints"] if c["id"] == "C1")
    assert c1["detail"]["decided_by"] == "proxy" and run.score["judge_model"] == ""
    page = reviewer.get(f"/runs/agent-runs/{run.pk}/").content.decode()
    assert "No judge model was used" in page and 'data-decided-by="proxy"' in page
    results = reviewer.get(f"/runs/{run.run_set_id}/").content.decode()
    assert "No judge model was used" in results
