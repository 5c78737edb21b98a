"""Judge runs (issue 10): stored model answers, the four interleaved judges end to end against
the fake model server with scripted replies, retry and exclusion of unparseable output, the
cache, resuming a run, and ``manage.py judge``."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from benchmark.exceptions import Conflict, ValidationFailed
from benchmark.jobs.kinds import job_kind
from benchmark.models import JobStatus, Origin, Project, Response
from review.judges import services as judge_services
from review.judges.models import JudgeCall, JudgeRun
from review.judges.selectors import judge_run_report
from tests.factories import ItemFactory, ProjectFactory
from tests.llm_server import FakeModelServer, point_at

pytestmark = pytest.mark.django_db

GARBAGE = "I think it is fine."


class ScriptedServer(FakeModelServer):
    """Answers each request with ``script(system, user)``."""

    script: Callable[[str, str], str] = staticmethod(lambda system, user: GARBAGE)

    def _reply(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict]:
        status, payload, headers = super()._reply(path, body)
        if status == 200:
            system = next(m["content"] for m in body["messages"] if m["role"] == "system")
            user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
            payload["choices"][0]["message"]["content"] = self.script(system, user)
        return status, payload, headers


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    s = ScriptedServer().start()
    try:
        yield s
    finally:
        s.stop()


def files(rows_by_model: dict[str, list[dict[str, Any]]]) -> list[tuple[str, bytes]]:
    return [
        (f"{model}.jsonl", "\n".join(json.dumps(r) for r in rows).encode())
        for model, rows in rows_by_model.items()
    ]


def judge(project: Project, name: str, **kw: Any) -> tuple[JudgeRun, dict[str, Any]]:
    run, job = judge_services.judge_run_create(project=project, user=None, judge=name, **kw)
    job = judge_services.judge_run_execute(job=job)
    assert job.status == JobStatus.SUCCEEDED, job.error
    return run, job.result["summary"]


def rubric(score: int) -> str:
    return json.dumps({"score": score, "justification": "because"})


IMGEN = '<imgen>{"source": "google_search", "description": "d", "params": {"query": "q"}}</imgen>'


@pytest.fixture
def llmi(server: ScriptedServer) -> Project:
    project = ProjectFactory(name="LLMI sample", data_format="llmi")
    point_at(project, server)
    for n in (1, 2):
        ItemFactory(
            project=project,
            external_id=f"q{n}",
            query=f"Explain topic {n}",
            rubric=[{"key": "r1", "text": "is correct"}, {"key": "r2", "text": "has an image"}],
            constraints={"image_num": 1},
        )
    judge_services.answers_import(
        project=project,
        files=files(
            {
                "alpha": [
                    {"trace_id": "q1", "answer": f"ALPHA one {IMGEN}"},
                    {"trace_id": "q2", "answer": f"ALPHA two {IMGEN}"},
                ],
                "beta": [
                    {"trace_id": "q1", "answer": "BETA one"},
                    {"trace_id": "q2", "answer": "BETA two"},
                ],
            }
        ),
    )
    return project


# --------------------------------------------------------------------------- answers


def test_answers_import_stores_model_responses_idempotently(llmi: Project) -> None:
    rows = Response.objects.filter(item__project=llmi).order_by("item__external_id", "key")
    assert [(r.item.external_id, r.key, r.origin, r.model_name) for r in rows] == [
        ("q1", "model:alpha", Origin.MODEL, "alpha"),
        ("q1", "model:beta", Origin.MODEL, "beta"),
        ("q2", "model:alpha", Origin.MODEL, "alpha"),
        ("q2", "model:beta", Origin.MODEL, "beta"),
    ]
    again = judge_services.answers_import(
        project=llmi,
        files=files(
            {
                "beta": [
                    {"trace_id": "q1", "answer": "BETA one"},
                    {"trace_id": "q2", "answer": "BETA two, revised"},
                    {"trace_id": "nope", "answer": "?"},
                ]
            }
        ),
    )
    assert (again.created, again.updated, again.unchanged, again.unknown) == (0, 1, 1, ["nope"])
    assert Response.objects.filter(item__project=llmi).count() == 4
    assert Response.objects.get(item__external_id="q2", key="model:beta").text.endswith("revised")


def test_answers_import_refuses_a_second_answer_naming_both_places(llmi: Project) -> None:
    twice = files({"alpha": [{"trace_id": "q1", "answer": "a"}, {"trace_id": "q1", "answer": "b"}]})
    with pytest.raises(ValidationFailed, match=r"alpha.jsonl, line 2: .*first in alpha.jsonl"):
        judge_services.answers_import(project=llmi, files=twice)


def test_the_judge_job_kind_is_registered() -> None:
    kind = job_kind("judge")
    assert kind is not None and kind.action == "run_judges"


# --------------------------------------------------------------------------- the judges


def rubric_script(system: str, user: str) -> str:
    criterion = user.rsplit("Criterion ", 1)[1][:2]
    if "ALPHA" in user:
        return rubric(2 if criterion == "r1" else 1)
    if "BETA two" in user and criterion == "r2":
        return GARBAGE
    return rubric(0 if "BETA one" in user else 2)


def test_llmi_rubric_end_to_end(llmi: Project, server: ScriptedServer) -> None:
    server.script = rubric_script
    run, summary = judge(llmi, "llmi-rubric")
    # alpha: (2 + 1) / 4 on both answers -> 75 %. beta: q1 0 / 4 = 0; q2 r1 = 2, r2 unparseable
    # twice and excluded -> 2 / 2 = 1; mean 0.5 -> 50 %.
    assert summary["models"]["alpha"] == {
        "rubric": 75.0,
        "n": 2,
        "excluded": 0,
        "criteria_excluded": 0,
    }
    assert summary["models"]["beta"] == {
        "rubric": 50.0,
        "n": 2,
        "excluded": 0,
        "criteria_excluded": 1,
    }
    assert summary["calls"]["total"] == 8 and summary["calls"]["made"] == 8
    assert server.count == 9  # 8 calls, one retried
    failed = JudgeCall.objects.get(run=run, ok=False)
    assert failed.label == "r2" and failed.outputs == [GARBAGE, GARBAGE]
    assert "not valid JSON" in failed.error
    assert failed.template_id == "llmi.rubric" and failed.parsed is None
    ok = JudgeCall.objects.filter(run=run, ok=True, label="r1").first()
    assert ok is not None and ok.parsed == {"score": 2, "justification": "because"}
    assert ok.prompt_tokens == 17 and ok.latency_ms is not None
    assert run.templates == {"llmi.rubric": run.templates["llmi.rubric"]}


def llm_script(system: str, user: str) -> str:
    if "ALPHA" in user:
        return "Text: 4\nImage: 2"
    if "BETA two" in user:
        return GARBAGE
    return "Text: 5\nImage: 5"


def test_llmi_llm_unparseable_is_retried_once_then_excluded(
    llmi: Project, server: ScriptedServer
) -> None:
    server.script = llm_script
    run, summary = judge(llmi, "llmi-llm")
    # alpha: ((4-1)/4 + (2-1)/4) / 2 = 0.5; beta: q1 1.0, q2 excluded.
    assert summary["models"] == {
        "alpha": {"r_llm": 0.5, "n": 2, "excluded": 0},
        "beta": {"r_llm": 1.0, "n": 1, "excluded": 1},
    }
    assert summary["excluded"] == 1
    assert server.count == 5  # 4 calls, the unparseable one asked twice
    failed = JudgeCall.objects.get(run=run, ok=False)
    assert failed.outputs == [GARBAGE, GARBAGE]
    assert "expected 2 lines" in failed.error


def test_a_retry_that_parses_counts(llmi: Project, server: ScriptedServer) -> None:
    seen: set[str] = set()

    def script(system: str, user: str) -> str:
        if user in seen:
            return "Text: 3\nImage: 3"
        seen.add(user)
        return GARBAGE

    server.script = script
    run, summary = judge(llmi, "llmi-llm", models=["alpha"])
    assert summary["models"] == {"alpha": {"r_llm": 0.5, "n": 2, "excluded": 0}}
    assert server.count == 4
    assert [c.outputs for c in JudgeCall.objects.filter(run=run)] == [
        [GARBAGE, "Text: 3\nImage: 3"]
    ] * 2


def mllm_script(system: str, user: str) -> str:
    if system.startswith("You judge a finished answer"):
        return "Image quality: 5\nTask relevance: 5\nText-image relevance: 2"
    return "Text: 5\nImage: 3"


def test_llmi_mllm_end_to_end_gives_r(llmi: Project, server: ScriptedServer) -> None:
    server.script = mllm_script
    _, summary = judge(llmi, "llmi-mllm")
    # R_llm = (1 + 0.5) / 2 = 0.75; R_mllm = (1 + 1 + 0.25) / 3 = 0.75.
    # alpha has the one image asked for: R_rule 1, R = (1 + 0.75 + 0.75 * 1) / 3.
    # beta has none: R_rule 0, R = (0 + 0.75 + 0) / 3 = 0.25.
    alpha, beta = summary["models"]["alpha"], summary["models"]["beta"]
    assert (alpha["r_rule"], alpha["r_llm"], alpha["r_mllm"]) == (1.0, 0.75, 0.75)
    assert alpha["r"] == pytest.approx(2.5 / 3)
    assert (beta["r_rule"], beta["r"]) == (0.0, pytest.approx(0.25))
    assert alpha["n"] == beta["n"] == 2
    assert server.count == 8
    mllm_users = [
        r.user_content
        for r in server.requests
        if "finished answer" in r.body["messages"][0]["content"]
    ]
    assert any("ALPHA one [image 1]" in u for u in mllm_users)


def tool(name: str, params: dict[str, Any]) -> str:
    return (
        "<tool>" + json.dumps({"tool_name": name, "description": "d", "params": params}) + "</tool>"
    )


def check(index: int, parameters: int = 2) -> dict[str, Any]:
    return {
        "index": index,
        "necessity": 2,
        "position": 2,
        "structure": 2,
        "tool_choice": 2,
        "parameters": parameters,
        "format": 2,
        "comment": "ok",
    }


def mam_script(system: str, user: str) -> str:
    alpha = "ALPHA" in user
    if "Precision Inspector" in system and system.startswith("You are the Precision"):
        return json.dumps({"calls": [check(1), check(2, parameters=1)]})
    if system.startswith("You are the Recall"):
        missed = [] if alpha else [{"after": "x", "tool": "Search", "why": "y"}] * 2
        return json.dumps({"missed": missed})
    if alpha:
        return json.dumps({"score": 85, "tier": "Excellent", "why": "good"})
    return json.dumps({"score": 30, "tier": "Poor", "why": "bad"})


def test_atp_mam_end_to_end(server: ScriptedServer) -> None:
    project = ProjectFactory(name="ATP judged")
    point_at(project, server)
    ItemFactory(project=project, external_id="atp_1", query="Show me a cat")
    ref, search = tool("Reference", {"img_index": 0}), tool("Search", {"query": "cat"})
    judge_services.answers_import(
        project=project,
        files=files(
            {
                "alpha": [{"trace_id": "atp_1", "answer": f"ALPHA\n\n{ref}\n\nMore.\n\n{search}"}],
                "beta": [{"trace_id": "atp_1", "answer": "BETA, text only."}],
            }
        ),
    )
    server.script = mam_script
    run, summary = judge(project, "atp-mam")
    alpha, beta = summary["models"]["alpha"], summary["models"]["beta"]
    # alpha: Chief 85, nothing missed, 2 calls of which 1 is all 2s; parameters 1 of 2.
    assert (alpha["fs"], alpha["mi"], alpha["sr"], alpha["calls"]) == (85.0, 0.0, 50.0, 2)
    assert alpha["sub_checks"] == {
        "1a": 100.0,
        "1b": 100.0,
        "1c": 100.0,
        "2a": 100.0,
        "2b": 50.0,
        "2c": 100.0,
    }
    # beta: no tool call, so no Precision call; Chief 30, two missed images.
    assert (beta["fs"], beta["mi"], beta["sr"], beta["calls"]) == (30.0, 2.0, None, 0)
    assert server.count == 5
    labels = sorted(JudgeCall.objects.filter(run=run).values_list("label", flat=True))
    assert labels == ["chief", "chief", "precision", "recall", "recall"]
    chief_users = [
        r.user_content
        for r in server.requests
        if "Chief Judge" in r.body["messages"][0]["content"] and "ALPHA" in r.user_content
    ]
    assert '"parameters": 1' in chief_users[0]


def test_mam_chief_is_skipped_when_an_inspector_fails(server: ScriptedServer) -> None:
    project = ProjectFactory(name="ATP failing")
    point_at(project, server)
    ItemFactory(project=project, external_id="atp_1")
    judge_services.answers_import(
        project=project, files=files({"alpha": [{"trace_id": "atp_1", "answer": "ALPHA"}]})
    )
    server.script = lambda system, user: GARBAGE
    _, summary = judge(project, "atp-mam")
    assert summary["models"]["alpha"]["n"] == 0
    assert summary["models"]["alpha"]["excluded"] == 1
    assert server.count == 2  # the Recall Inspector, asked twice; no Chief call


# --------------------------------------------------------------------------- cache and resume


def test_a_second_run_is_served_from_the_cache(llmi: Project, server: ScriptedServer) -> None:
    server.script = rubric_script
    _, first = judge(llmi, "llmi-rubric")
    before = server.count
    run, second = judge(llmi, "llmi-rubric")
    assert server.count == before
    assert second["models"] == first["models"]
    assert second["calls"]["cached"] == 8 and second["calls"]["made"] == 0
    assert JudgeCall.objects.filter(run=run, cached=True).count() == 8


def test_another_endpoint_is_not_served_from_the_cache(
    llmi: Project, server: ScriptedServer
) -> None:
    server.script = llm_script
    judge(llmi, "llmi-llm")
    other = ScriptedServer().start()
    try:
        other.script = llm_script
        _, summary = judge(llmi, "llmi-llm", base_url=other.url)
        assert other.count == 5 and summary["calls"]["cached"] == 0
    finally:
        other.stop()


def test_a_resumed_run_makes_only_the_missing_calls(llmi: Project, server: ScriptedServer) -> None:
    server.script = llm_script
    run, first = judge(llmi, "llmi-llm")
    # The worker "died" after two calls: drop the others, and make the cache forget them.
    kept = list(JudgeCall.objects.filter(run=run, ok=True).order_by("id")[:2])
    JudgeCall.objects.filter(run=run).exclude(pk__in=[c.pk for c in kept]).delete()
    before = server.count
    job = judge_services.judge_run_execute(job=judge_services.judge_run_resume(run=run, user=None))
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert server.count - before == 3  # two calls, one of them retried
    summary = job.result["summary"]
    assert summary["calls"]["reused"] == 2 and summary["calls"]["made"] == 2
    assert summary["models"] == first["models"]
    assert JudgeCall.objects.filter(run=run).count() == 4


def test_a_model_error_is_stored_and_called_again_on_resume(
    llmi: Project, server: ScriptedServer
) -> None:
    point_at(llmi, server, max_retries=0)
    server.script = llm_script
    server.fail_next(500, times=1)
    run, summary = judge(llmi, "llmi-llm", workers=1)
    failed = JudgeCall.objects.get(run=run, transport_error=True)
    assert "500" in failed.error and failed.outputs == []
    assert summary["excluded"] == 1 + 1  # the failed call and beta's unparseable answer
    before = server.count
    job = judge_services.judge_run_execute(job=judge_services.judge_run_resume(run=run, user=None))
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert server.count - before == 1
    run.refresh_from_db()
    assert run.job_id == job.pk
    assert not JudgeCall.objects.filter(run=run, transport_error=True).exists()


# --------------------------------------------------------------------------- bad input


def test_bad_requests_say_what_is_wrong(llmi: Project) -> None:
    with pytest.raises(ValidationFailed, match="unknown judge 'nope'"):
        judge_services.judge_run_create(project=llmi, user=None, judge="nope")
    with pytest.raises(ValidationFailed, match="workers must be between 1 and 32"):
        judge_services.judge_run_create(project=llmi, user=None, judge="llmi-llm", workers=0)
    with pytest.raises(ValidationFailed, match="no model answers of gamma"):
        judge_services.judge_run_create(project=llmi, user=None, judge="llmi-llm", models=["gamma"])
    bare = ProjectFactory(name="No model")
    with pytest.raises(ValidationFailed, match="No judge model"):
        judge_services.judge_run_create(project=bare, user=None, judge="llmi-llm")


# --------------------------------------------------------------------------- the command


def test_judge_command_prints_one_object_per_answer_then_the_summary(
    server: ScriptedServer, tmp_path: Path
) -> None:
    project = ProjectFactory(name="LLMI cli", data_format="llmi")
    for n in (1, 2):
        ItemFactory(project=project, external_id=f"q{n}", query=f"Explain {n}")
    answers = tmp_path / "alpha.jsonl"
    answers.write_text(
        "\n".join(json.dumps({"trace_id": f"q{n}", "answer": f"ALPHA {n}"}) for n in (1, 2))
    )
    server.script = llm_script
    out = io.StringIO()
    call_command(
        "judge",
        "--project",
        "LLMI cli",
        "--judge",
        "llmi-llm",
        "--answers",
        str(answers),
        "--base-url",
        server.url,
        "--model",
        "judge-7b",
        "--workers",
        "2",
        stdout=out,
        stderr=io.StringIO(),
    )
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(a["item"], a["model"], a["scores"]["r_llm"]) for a in lines[:2]] == [
        ("q1", "alpha", 0.5),
        ("q2", "alpha", 0.5),
    ]
    assert lines[0]["scores"]["llm"] == {"text": 4, "image": 2}
    summary = lines[2]["summary"]
    assert summary["models"] == {"alpha": {"r_llm": 0.5, "n": 2, "excluded": 0}}
    assert summary["judge_model"] == "judge-7b"
    assert {r.body["model"] for r in server.requests} == {"judge-7b"}
    assert len(lines) == 3


def test_judge_command_takes_answer_files_from_every_answers_option(
    server: ScriptedServer, tmp_path: Path
) -> None:
    """``--answers a --answers b c`` imports all three (a repeated option used to keep only
    its last values; issue 22, item 14)."""
    project = ProjectFactory(name="LLMI repeat", data_format="llmi")
    ItemFactory(project=project, external_id="q1", query="Explain")
    files = []
    for model in ("alpha", "beta", "gamma"):
        file = tmp_path / f"{model}.jsonl"
        file.write_text(json.dumps({"trace_id": "q1", "answer": model.upper()}))
        files.append(str(file))
    server.script = llm_script
    out = io.StringIO()
    call_command(
        "judge",
        "--project",
        project.name,
        "--judge",
        "llmi-llm",
        "--answers",
        files[0],
        "--answers",
        *files[1:],
        "--base-url",
        server.url,
        "--model",
        "judge-7b",
        stdout=out,
        stderr=io.StringIO(),
    )
    summary = json.loads(out.getvalue().splitlines()[-1])["summary"]
    assert sorted(summary["models"]) == ["alpha", "beta", "gamma"]


def test_judge_command_bad_input_exits_with_a_message(tmp_path: Path) -> None:
    ProjectFactory(name="P")
    with pytest.raises(CommandError, match="no project named 'Q'"):
        call_command("judge", "--project", "Q", "--judge", "llmi-llm")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"trace_id": "x"}\n')
    with pytest.raises(CommandError, match="bad.jsonl"):
        call_command("judge", "--project", "P", "--judge", "atp-mam", "--answers", str(bad))


def test_report_rebuilds_from_stored_calls(llmi: Project, server: ScriptedServer) -> None:
    server.script = rubric_script
    run, summary = judge(llmi, "llmi-rubric", models=["alpha"])
    report = judge_run_report(run=run)
    assert report["summary"]["models"] == summary["models"]
    assert report["answers"][0]["scores"] == {"r1": 2, "r2": 1, "rate": 0.75, "excluded": 0}


def test_a_started_run_runs_through_the_job_pipeline(
    llmi: Project, server: ScriptedServer, django_capture_on_commit_callbacks: Any
) -> None:
    server.script = llm_script
    with django_capture_on_commit_callbacks(execute=True):
        run, job = judge_services.judge_run_create(
            project=llmi, user=None, judge="llmi-llm", enqueue=True
        )
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.progress == job.total == 4
    assert job.result["summary"]["models"]["alpha"]["r_llm"] == 0.5


def test_a_run_whose_job_is_still_going_cannot_be_resumed(llmi: Project) -> None:
    run, _ = judge_services.judge_run_create(
        project=llmi, user=None, judge="llmi-llm", base_url="http://127.0.0.1:9/v1", model="m"
    )
    with pytest.raises(Conflict, match="still queued"):
        judge_services.judge_run_resume(run=run, user=None)
