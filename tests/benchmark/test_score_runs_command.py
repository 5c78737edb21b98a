"""``manage.py score_runs``: JSON per run then the overall and per-level figures, on the sample
runs (figures worked out by hand from their trace files) and on bad input."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from tests.shared_data import SHARED_DATA, needs_data

ROOT = Path(__file__).resolve().parents[2]
MME = SHARED_DATA / "agentic-mme"
pytestmark = needs_data("agentic-mme")


def score(tasks: Path, runs: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    out = io.StringIO()
    call_command("score_runs", "--tasks", str(tasks), "--runs", str(runs), stdout=out)
    lines = [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]
    return lines[:-1], lines[-1]


@pytest.fixture
def runs_copy(tmp_path: Path) -> Path:
    target = tmp_path / "runs"
    shutil.copytree(MME / "runs", target)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


def test_sample_runs_print_one_line_each_then_the_figures() -> None:
    runs, summary = score(MME / "json", MME / "runs")
    assert [r["run"] for r in runs] == ["0001", "0003"]
    first, second = runs
    # runs/0001: one crop call; reference_tool_calls 1; answer "Willow St" contains the
    # golden "Willow St"; the crop box equals the checkpoint's box.
    assert first["task_id"] == "0001" and first["level"] == 1 and first["acc"] is True
    assert (first["calls"], first["reference_calls"], first["excess_calls"]) == (1, 1, 0)
    assert (first["penalty"], first["overthink"], first["overthink_ratio"]) == (0.0, 0.0, 1.0)
    assert first["overthink_category"] == "optimal"
    assert (first["S"], first["V"], first["V_tool"], first["V_true"]) == (None, 1.0, 1.0, 1.0)
    # runs/0003: nine logged calls (crop, enhance, autocontrast, crop, crop, sharpen,
    # google_search, enhance, crop) against 2: paper (9-2)/(2+1) = 2.33, released 9/2 = 4.5,
    # penalty min(1, 7 x 0.1) = 0.7 (the budget of 10 holds); "317" equals the golden "317".
    assert second["task_id"] == "0003" and second["level"] == 2 and second["acc"] is True
    assert (second["calls"], second["reference_calls"], second["excess_calls"]) == (9, 2, 7)
    assert round(second["overthink"], 2) == 2.33 and second["overthink_ratio"] == 4.5
    assert second["penalty"] == pytest.approx(0.7) and second["exceeded_max"] is False
    assert second["overthink_category"] == "overthink"
    # C1 (enhance) and C2 (crop of the brightened image, the proxy finds an exact crop).
    assert (second["V"], second["V_tool"], second["V_true"]) == (1.0, 1.0, 1.0)
    assert [c["id"] for c in second["checkpoints"]] == ["C1", "C2", "C3"]

    overall = summary["overall"]
    assert overall["n"] == 2 and overall["acc"] == 1.0
    assert overall["penalty"] == pytest.approx(0.35)
    assert overall["calls"] == 5.0 and overall["reference_calls"] == 1.5
    assert overall["overthink"] == pytest.approx((0 + 7 / 3) / 2)
    assert overall["overthink_of_means"] == pytest.approx((5 - 1.5) / (1.5 + 1))
    assert overall["overthink_ratio"] == pytest.approx((1 + 4.5) / 2)
    assert (overall["pct_overthink"], overall["pct_underthink"], overall["pct_optimal"]) == (
        50.0,
        0.0,
        50.0,
    )
    assert set(summary["levels"]) == {"L1", "L2"}
    assert summary["levels"]["L2"]["overthink"] == pytest.approx(7 / 3)
    analysis = summary["overthink_analysis"]
    assert analysis["model_total_calls"] == 10 and analysis["human_total_reference_calls"] == 3


def test_run_meta_names_the_task_the_model_and_the_call_count(
    runs_copy: Path, tmp_path: Path
) -> None:
    # The released runners' layout: runs/<model>/<task file stem>/ with run_meta.json.
    folder = tmp_path / "by-model" / "some-model" / "attempt-7"
    shutil.copytree(runs_copy / "0003", folder)
    (folder / "run_meta.json").write_text(
        json.dumps({"task_id": "0003", "model": "some-model", "effective_tool_calls": 4})
    )
    runs, summary = score(MME, tmp_path / "by-model")  # the dataset folder holds json/
    (run,) = runs
    assert run["run"] == "some-model/attempt-7" and run["model"] == "some-model"
    # 4 calls against 2: (4-2)/(2+1) = 0.67; 4/2 = 2; min(1, 2 x 0.1) = 0.2.
    assert run["calls"] == 4 and run["penalty"] == pytest.approx(0.2)
    assert run["overthink"] == pytest.approx(2 / 3) and run["overthink_ratio"] == 2.0
    assert summary["overall"]["n"] == 1


def test_gen_mode_script_exec_events_are_not_counted(runs_copy: Path) -> None:
    events = json.loads((runs_copy / "0001" / "tool_use_list.json").read_text())
    events.append(
        {
            "index": 1,
            "tool_name": "run_visual_processing_code",
            "raw_tool_name": "script_exec",
            "arguments": {"code": "print(1)"},
            "output": {"ok": "true"},
        }
    )
    (runs_copy / "0001" / "tool_use_list.json").write_text(json.dumps(events))
    (runs_copy / "0001" / "model_answer.txt").write_text("<answer>willow st</answer>\n")
    runs, _ = score(MME / "json", runs_copy / "0001")
    assert runs[0]["calls"] == 1 and runs[0]["acc"] is True and runs[0]["answer"] == "willow st"


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda r: (r / "0003" / "tool_use_list.json").write_text("[{"), "0003', file tool_use_list.json: not valid JSON"),
        (lambda r: (r / "0003" / "tool_use_list.json").write_text('{"a": 1}'), "expected a JSON list of tool events"),
        (lambda r: (r / "0001" / "model_answer.txt").unlink(), "run folder '0001': model_answer.txt is missing"),
        (lambda r: (r / "0001" / "run_meta.json").write_text("[1]"), "0001', file run_meta.json: expected a JSON object"),
        (lambda r: shutil.copytree(r / "0001", r / "0099"), "run folder(s): 0099 (task '0099')"),
    ],
)  # fmt: skip
def test_bad_run_folders_stop_with_a_message_naming_the_file(
    runs_copy: Path, damage: Any, message: str
) -> None:
    damage(runs_copy)
    with pytest.raises(CommandError) as caught:
        score(MME / "json", runs_copy)
    assert message in str(caught.value)


def test_bad_task_files_and_missing_folders(tmp_path: Path) -> None:
    tasks = tmp_path / "json"
    shutil.copytree(MME / "json", tasks)
    (tasks / "0002.json").chmod(0o644)
    (tasks / "0002.json").write_text('{"task_id": "0002", ')
    with pytest.raises(CommandError, match=r"0002\.json: not valid JSON"):
        score(tasks, MME / "runs")
    with pytest.raises(CommandError, match="--runs .*nowhere: no such folder"):
        score(MME / "json", tmp_path / "nowhere")
    with pytest.raises(CommandError, match="no run folders found"):
        score(MME / "json", MME / "images")


def test_the_command_exits_non_zero_on_bad_input(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "score_runs", "--tasks", str(tmp_path / "x"), "--runs", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "--tasks" in result.stderr and "no such folder" in result.stderr
