"""check_plan and score_plans: the thin commands over benchmark.plans and benchmark.metrics."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from benchmark.builtin import toolsets_ensure
from benchmark.metrics.mms import read_gold, read_predictions, score_plans
from benchmark.models import ToolEdge
from benchmark.plans.verify import load_toolset
from tests.shared_data import MMS_DATA

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "benchmark" / "builtin" / "data"


@pytest.fixture
def data() -> Path:
    if not (MMS_DATA / "tasks.json").exists():
        pytest.skip(f"m&m's sample data not found at {MMS_DATA}")
    return MMS_DATA


def run(name: str, *args: Any) -> Any:
    out = StringIO()
    call_command(name, *args, stdout=out)
    return json.loads(out.getvalue())


def test_check_plan_on_tasks_uses_the_bundled_files_without_a_toolset_row(data: Path) -> None:
    findings = run("check_plan", str(data / "tasks.json"))
    assert {(f["id"], f["code"]) for f in findings} == {
        (9010, "unknown_tool"),
        (9011, "missing_arg"),
        (9011, "unknown_arg"),
        (9012, "invalid_edge"),
    }
    assert set(findings[0]) == {"id", "code", "step", "message", "line", "column"}


def test_check_plan_code_form_reports_lines(data: Path) -> None:
    findings = run("check_plan", "--plan-format", "code", str(data / "tasks.json"))
    assert {f["id"] for f in findings} == {9010, 9011, 9012}
    assert all(f["line"] and f["column"] for f in findings)


def test_check_plan_reads_the_toolset_from_the_database(data: Path) -> None:
    toolsets_ensure()
    files = ["--metadata", str(BUNDLED / "tool_metadata.json")]
    files += ["--graph", str(BUNDLED / "tool_graph.json")]
    assert run("check_plan", str(data / "tasks.json")) == run(
        "check_plan", *files, str(data / "tasks.json")
    )
    # An admin removes the edge ASR -> text summarization: row 36 now breaks, which only the
    # database toolset can know.
    ToolEdge.objects.filter(
        toolset__name="mms",
        source__name="automatic speech recognition",
        target__name="text summarization",
    ).delete()
    findings = run("check_plan", str(data / "tasks.json"))
    assert (36, "invalid_edge") in {(f["id"], f["code"]) for f in findings}


def test_check_plan_on_predictions_jsonl(data: Path) -> None:
    findings = run("check_plan", str(data / "predictions.jsonl"))
    assert {(f["id"], f["code"]) for f in findings} == {
        (9004, "missing_arg"),
        (9004, "unknown_arg"),
        (9010, "parse_error"),
    }


def test_check_plan_on_single_files(tmp_path: Path) -> None:
    broken = tmp_path / "plan.py"
    broken.write_text('def solve():\n    output0 = image_captioning(image="a.jpg"\n')
    (finding,) = run("check_plan", str(broken))
    assert (finding["code"], finding["line"], finding["column"]) == ("parse_error", 2, 31)
    assert "id" not in finding

    good = tmp_path / "plan.json"
    good.write_text(json.dumps([{"id": 0, "name": "get date fact", "args": {"date": "May 7"}}]))
    assert run("check_plan", str(good)) == []


def test_check_plan_option_errors(tmp_path: Path) -> None:
    plan = tmp_path / "p.json"
    plan.write_text("[]")
    with pytest.raises(CommandError, match="both --metadata and --graph"):
        call_command("check_plan", "--metadata", str(BUNDLED / "tool_metadata.json"), str(plan))
    with pytest.raises(CommandError, match="no toolset named 'nothing'"):
        call_command("check_plan", "--toolset", "nothing", str(plan))
    with pytest.raises(CommandError, match="cannot read"):
        call_command("check_plan", str(tmp_path / "missing.json"))


def test_score_plans_prints_the_metrics(data: Path) -> None:
    tasks, preds = str(data / "tasks.json"), str(data / "predictions.jsonl")
    result = run("score_plans", "--gold", tasks, "--pred", preds)
    gold, _ = read_gold(tasks)
    toolset = load_toolset(BUNDLED / "tool_metadata.json", BUNDLED / "tool_graph.json")
    assert result == score_plans(gold, read_predictions(preds), toolset)
    assert result["tool_macro_f1"] == 49.75 and result["invalid_ids"] == [9010]

    best = run("score_plans", "--gold", tasks, "--pred", preds, "--alternatives")
    assert best["best_match"]["9008"] == 1
    assert best["tool_macro_f1"] == 51.08

    as_json = run("score_plans", "--gold", tasks, "--pred", preds, "--plan-format", "json")
    assert as_json["invalid_ids"] == [9005, 9010]


def test_score_plans_bad_file(tmp_path: Path) -> None:
    broken = tmp_path / "preds.jsonl"
    broken.write_text('{"id": 1, "prediction": []}\nnot json\n')
    with pytest.raises(CommandError, match="line 2"):
        call_command("score_plans", "--gold", str(broken), "--pred", str(broken))
