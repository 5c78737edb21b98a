"""python manage.py evaluate: one JSON object per item and a summary, --out through the
protocol's writer, --replay with no model server, and bad input as one line with status 2."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from benchmark.models import Project
from tests.factories import ProjectFactory
from tests.llm_server import MODEL, FakeModelServer

pytestmark = pytest.mark.django_db


def _evaluate(*args: str) -> list[dict[str, Any]]:
    out = StringIO()
    call_command("evaluate", *args, stdout=out, stderr=StringIO())
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_evaluate_prints_each_item_and_the_summary_and_writes_outputs(
    eval_project: Project, eval_server: FakeModelServer, tmp_path: Path
) -> None:
    lines = _evaluate(
        "--project", eval_project.name, "--model", MODEL, "--base-url", eval_server.url,
        "--workers", "2", "--out", str(tmp_path / "out"),
    )  # fmt: skip
    items, summary = lines[:-1], lines[-1]
    assert [(x["item"], x["status"], x["output"], x["scores"]) for x in items] == [
        ("apple", "ok", "a fruit", {"correct": 1.0}),
        ("pear", "ok", "unknown", {"correct": 1.0}),
        ("kiwi", "ok", "a fruit", {"correct": 0.0}),
    ]
    assert {x["model"] for x in items} == {MODEL}
    assert summary["summary"]["accuracy"] == pytest.approx(200 / 3)
    written = (tmp_path / "out" / "answers.jsonl").read_text().splitlines()
    assert [json.loads(line)["answer"] for line in written] == ["a fruit", "unknown", "a fruit"]


def test_the_lines_are_written_a_block_at_a_time_still_one_line_an_item(
    eval_project: Project, eval_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from review.management.commands import evaluate

    writes: list[str] = []
    out = StringIO()
    monkeypatch.setattr(evaluate, "PRINT_BLOCK", 2)
    monkeypatch.setattr(out, "write", lambda text: writes.append(text) or len(text))
    call_command(
        "evaluate", "--project", eval_project.name, "--model", MODEL,
        "--base-url", eval_server.url, stdout=out, stderr=StringIO(),
    )  # fmt: skip
    lines = "".join(writes).splitlines()
    assert [json.loads(line).get("item") for line in lines] == ["apple", "pear", "kiwi", None]
    assert "summary" in json.loads(lines[-1])
    # Two items, then the last one, then the summary: three writes, not one a line.
    assert len(writes) == 3


def test_replay_reruns_with_no_model_server_and_names_a_missing_record(
    eval_project: Project, eval_server: FakeModelServer
) -> None:
    args = ["--project", eval_project.name, "--model", MODEL, "--base-url", eval_server.url]
    first = _evaluate(*args)
    eval_server.stop()
    assert _evaluate(*args, "--replay") == first
    # Another round budget makes other requests for "loop": never recorded.
    from tests.factories import ItemFactory

    ItemFactory(project=eval_project, external_id="new", query="new", status="verified",
                raw=json.dumps({"query": "new", "answer": "?"}))  # fmt: skip
    with pytest.raises(CommandError, match=r"replay: 1 item\(s\) failed; new: replay: no recorded "
                       rf"answer of {MODEL} for item new \(model call 1"):  # fmt: skip
        _evaluate(*args, "--replay")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--project", "Nope"], "--project: no project named 'Nope'"),
        (["--max-rounds", "0"], "--max-rounds: must be between 1 and 100, got 0"),
        (["--shots", "two"], "--shots: 'two' is not a whole number"),
        (["--feedback", "parse,guess"], "--feedback: 'guess' is not one of parse, verify, execute"),
        (["--items", "some"], "--items: 'some' is not verified, all, release:NAME or filter:NAME"),
        (["--base-url", "ftp://x"], "base URL: 'ftp://x' is not an http(s) URL"),
        (["--judge-model", "j"], "--judge-base-url and --judge-model go together"),
    ],
)
def test_bad_input_is_one_line_with_status_2(
    eval_project: Project, eval_server: FakeModelServer, args: list[str], message: str
) -> None:
    base = {"--project": eval_project.name, "--model": MODEL, "--base-url": eval_server.url}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        base[flag] = value
    flat = [part for pair in base.items() for part in pair]
    with pytest.raises(CommandError) as caught:
        _evaluate(*flat)
    assert str(caught.value) == message and caught.value.returncode == 2


def test_a_kind_without_a_protocol_is_refused(db: None, monkeypatch: Any) -> None:
    from tests import evaluation_protocol

    evaluation_protocol.install(monkeypatch, "mms", None)
    project = ProjectFactory(name="plans", kind="plans", data_format="mms")
    with pytest.raises(CommandError, match="m&m's has no evaluation protocol yet") as caught:
        _evaluate("--project", project.name, "--model", "m", "--base-url", "http://127.0.0.1:9/v1")
    assert caught.value.returncode == 2


def test_from_the_command_line_a_bad_option_exits_2_without_a_traceback(
    eval_project: Project,
) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "manage.py", "evaluate", "--project", "x", "--bogus"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["evaluate: unrecognized arguments: --bogus"]


def test_judge_options_run_the_projects_answer_judges_on_the_kept_answers(
    eval_project: Project, eval_server: FakeModelServer
) -> None:
    from tests.judge_server import ScriptedServer

    judge = ScriptedServer().start()
    try:
        lines = _evaluate(
            "--project", eval_project.name, "--model", MODEL, "--base-url", eval_server.url,
            "--judge-base-url", judge.url, "--judge-model", "judge-m",
        )  # fmt: skip
    finally:
        judge.stop()
    judges = lines[-1]["summary"]["judges"]
    from review.judges.specs import judges_for

    # Every answer judge that applies to the project's format (ATP-Bench MAM among them).
    assert sorted(judges) == sorted(s.name for s in judges_for(eval_project))
    assert "atp-mam" in judges and all(j["judge_run"] > 0 for j in judges.values())
    # The judge was asked about the answers the run kept.
    asked = " ".join(json.dumps(r.body["messages"]) for r in judge.requests)
    assert "a fruit" in asked and "unknown" in asked
    assert {r.body["model"] for r in judge.requests} == {"judge-m"}
