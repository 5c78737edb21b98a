"""The trajectory editor's pure core on the Agentic-MME sample tasks: reading a task file into a
draft, laying the draft back over it (unchanged, and with an edit in every step), and the level
warnings, as the editor does on every refresh and save.

    python tests/perf/bench_trajectory_document.py
    python tests/perf/bench_trajectory_document.py --repeat 7 --rounds 500
    python tests/perf/bench_trajectory_document.py --module /path/to/document.py   # another copy

Prints the median and min of ``--repeat`` timings, each of ``--rounds`` passes over every sample
task, in microseconds per task. Asserts nothing.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
SAMPLES = ROOT.parent / "shared" / "data" / "agentic-mme" / "json"


def _module(path: str | None) -> ModuleType:
    if not path:
        from annotation.trajectories import document

        return document
    spec = importlib.util.spec_from_file_location("bench_document", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_document"] = module
    spec.loader.exec_module(module)
    return module


def _time(work: Callable[[], Any], rounds: int, repeat: int, tasks: int) -> tuple[float, float]:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(rounds):
            work()
        runs.append((time.perf_counter() - start) / rounds / tasks * 1e6)
    return statistics.median(runs), min(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--samples", default=str(SAMPLES))
    parser.add_argument("--module", help="a document.py to time instead of this checkout's")
    args = parser.parse_args()
    td = _module(args.module)
    docs = [json.loads(p.read_text()) for p in sorted(Path(args.samples).glob("*.json"))]
    if not docs:
        sys.exit(f"no sample tasks in {args.samples}")
    drafts = [td.draft_from_document(doc) for doc in docs]
    edited = copy.deepcopy(drafts)
    for draft in edited:
        for step in draft.steps:
            step.intent += " (edited)"
    cases: dict[str, Callable[[], Any]] = {
        "read a task into a draft": lambda: [td.draft_from_document(d) for d in docs],
        "apply an unchanged draft": lambda: [
            td.apply_draft(d, dr) for d, dr in zip(docs, drafts, strict=True)
        ],
        "apply a draft editing every step": lambda: [
            td.apply_draft(d, dr) for d, dr in zip(docs, edited, strict=True)
        ],
        "level warnings": lambda: [td.level_warnings(d) for d in docs],
    }
    print(f"{len(docs)} sample tasks, {args.rounds} rounds, {args.repeat} repeats (µs per task)")
    for name, work in cases.items():
        median, best = _time(work, args.rounds, args.repeat, len(docs))
        print(f"  {name:<36} median {median:8.1f}   min {best:8.1f}")


if __name__ == "__main__":
    main()
