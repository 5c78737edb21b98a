"""Start-up does not load what only a job or a page uses: review registers its job kinds by
name and its item-notice and identity-hiding hooks by dotted path, so a data command's
process never imports the services and selectors behind them (judges, rendering,
trajectories); the hooks still resolve to the functions themselves when used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAZY = [
    "review.judges.services",
    "review.oracle.services",
    "review.oracle.selectors",
    "review.answer_rendering.services",
    "review.answers.services",
    "review.human_eval.selectors",
]
PROBE = """
import json, sys
import django
django.setup()
from django.core.management import load_command_class
load_command_class("benchmark", "import_dataset")
print(json.dumps(sorted(set(sys.modules) & set({lazy!r}))))
"""


def test_a_data_command_starts_without_reviews_job_services_and_selectors() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(lazy=LAZY)],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "benchmark.settings"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def test_the_hooks_registered_by_path_are_the_functions_themselves() -> None:
    from benchmark import notices, visibility
    from benchmark.jobs.kinds import job_kind
    from review.human_eval.selectors import identity_hidden
    from review.judges.services import JUDGE_KIND
    from review.oracle.selectors import item_oracle_notices
    from review.runs.services import UPLOAD_AREA

    assert identity_hidden in visibility.identity_hiding_rules()
    assert "review.oracle.selectors.item_oracle_notices" in notices._SOURCES
    assert item_oracle_notices.__module__ == "review.oracle.selectors"
    assert job_kind(JUDGE_KIND) is not None
    assert job_kind("score_runs").upload_area == UPLOAD_AREA  # type: ignore[union-attr]
