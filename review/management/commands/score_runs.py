"""python manage.py score_runs --tasks TASKS_DIR --runs RUNS_DIR

Scores Agentic-MME agent runs as ``benchmark.metrics.agentic_mme`` defines them (Acc, S, V,
V_tool, V_true, penalty, both Overthink figures) and prints one JSON object per run, one per
line, then one JSON object with the overall figures, the per-level figures and the released
scorer's overthink analysis. Nothing is read from or written to the database.

TASKS_DIR is a folder of task JSON files (or a dataset folder holding ``json/``). RUNS_DIR is a
run folder or a folder of run folders (``runs/<task>/`` or ``runs/<model>/<task>/``); a run
belongs to the task named by ``run_meta.json``'s ``task_id`` or ``task_file``, else by its
folder name. V_true here is the scorer's geometric proxy (no person or model is asked).
A missing folder, a malformed file or a run of an unknown task stops the command with a
message naming the file, and a non-zero exit status.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.exceptions import DomainError
from benchmark.metrics import agentic_mme as mme
from review.runs.folders import read_run_folders, read_tasks, task_variants


class Command(BaseCommand):
    help = "Score Agentic-MME agent runs against their tasks; prints JSON lines."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tasks", type=Path, required=True, help="folder of task JSON files")
        parser.add_argument("--runs", type=Path, required=True, help="folder of run folders")

    def handle(self, *args: Any, **options: Any) -> None:
        tasks_dir: Path = options["tasks"]
        runs_dir: Path = options["runs"]
        for flag, path in (("--tasks", tasks_dir), ("--runs", runs_dir)):
            if not path.is_dir():
                raise CommandError(f"{flag} {path}: no such folder")
        try:
            tasks = read_tasks(tasks_dir)
            folders = read_run_folders(runs_dir)
        except DomainError as exc:
            raise CommandError(exc.message) from None
        unknown = [f for f in folders if f.task_id not in tasks]
        if unknown:
            names = ", ".join(f"{f.name} (task {f.task_id!r})" for f in unknown[:5])
            raise CommandError(f"no task file in {tasks_dir} for run folder(s): {names}")
        scores = []
        for folder in folders:
            _, task = tasks[folder.task_id]
            score = mme.score_run(task, folder.agent_run(), accepted=task_variants(task))
            scores.append(score)
            line = {"run": folder.name, "model": folder.model or None, **score.to_dict()}
            self.stdout.write(json.dumps(line, ensure_ascii=False))
        self.stdout.write(json.dumps(mme.aggregate(scores), ensure_ascii=False))
