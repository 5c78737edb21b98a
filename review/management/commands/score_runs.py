"""python manage.py score_runs --tasks TASKS_DIR --runs RUNS_DIR

Scores Agentic-MME agent runs as ``benchmark.metrics.agentic_mme`` defines them (Acc, S, V,
V_tool, V_true, penalty, both Overthink figures) and prints one JSON object per run, one per
line, then one JSON object with the overall figures, the per-level figures and the released
scorer's overthink analysis. Nothing is read from or written to the database.

TASKS_DIR is a folder of task JSON files (or a dataset folder holding ``json/``). RUNS_DIR is a
run folder or a folder of run folders (``runs/<task>/`` or ``runs/<model>/<task>/``); a run
belongs to the task named by ``run_meta.json``'s ``task_id`` or ``task_file``, else by its
folder name. V_true and S come from the scorer's proxies, unless ``--judge-base-url URL
--judge-model NAME`` names an OpenAI-compatible judge model (its key, if any, from
BENCHWRIGHT_MODEL_API_KEY, or from the variable ``--judge-api-key-env`` names, which must be in
MODEL_API_KEY_ENV_ALLOWLIST): then the Agentic-MME judges decide them, with answers cached in
memory for the command's run, and each checkpoint's ``detail.decided_by`` says what decided it.
A missing folder, a malformed file or a run of an unknown task stops the command with a
message naming the file, and a non-zero exit status.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.exceptions import DomainError
from benchmark.llm.cache import MemoryCache
from benchmark.llm.client import ModelConfig, ModelError
from benchmark.metrics import agentic_mme as mme
from review.runs import judging
from review.runs.folders import read_run_folders, read_tasks, task_variants


class Command(BaseCommand):
    help = "Score Agentic-MME agent runs against their tasks; prints JSON lines."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tasks", type=Path, required=True, help="folder of task JSON files")
        parser.add_argument("--runs", type=Path, required=True, help="folder of run folders")
        parser.add_argument("--judge-base-url", default="", help="judge model endpoint (…/v1)")
        parser.add_argument("--judge-model", default="", help="judge model name")
        parser.add_argument(
            "--judge-api-key-env",
            default="",
            help="environment variable holding the judge's key (must be allow-listed)",
        )

    def judge(self, options: dict[str, Any]) -> judging.RunJudge | None:
        base_url = str(options.get("judge_base_url") or "").strip()
        model = str(options.get("judge_model") or "").strip()
        if not base_url and not model:
            return None
        if not base_url or not model:
            raise CommandError("give both --judge-base-url and --judge-model, or neither")
        name = str(options.get("judge_api_key_env") or "").strip()
        if name:
            allowed = {
                str(e).strip().partition("=")[0].strip()
                for e in settings.MODEL_API_KEY_ENV_ALLOWLIST
            }
            if name not in allowed:
                raise CommandError(
                    f"--judge-api-key-env {name} is not in MODEL_API_KEY_ENV_ALLOWLIST"
                )
            api_key = os.environ.get(name, "")
        else:
            api_key = str(settings.BENCHWRIGHT_MODEL_API_KEY or "")
        try:
            config = ModelConfig(base_url=base_url, model=model, api_key=api_key)
        except ModelError as exc:
            raise CommandError(f"the judge model: {exc}") from None
        return judging.RunJudge(config=config, cache=MemoryCache(), scope="score_runs")

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
        judge = self.judge(options)
        unknown = [f for f in folders if f.task_id not in tasks]
        if unknown:
            names = ", ".join(f"{f.name} (task {f.task_id!r})" for f in unknown[:5])
            raise CommandError(f"no task file in {tasks_dir} for run folder(s): {names}")
        scores = []
        for folder in folders:
            _, task = tasks[folder.task_id]
            score = judging.score_run_judged(
                task, folder.agent_run(), judge=judge, accepted=task_variants(task)
            )
            scores.append(score)
            line = {
                "run": folder.name,
                "model": folder.model or None,
                "judge_model": judge.model if judge else None,
                **score.to_dict(),
            }
            self.stdout.write(json.dumps(line, ensure_ascii=False))
        self.stdout.write(json.dumps(mme.aggregate(scores), ensure_ascii=False))
