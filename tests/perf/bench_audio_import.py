"""Import and export speed of m&m's tasks with their audio inputs, on a fresh SQLite database.

    python tests/perf/bench_audio_import.py
    python tests/perf/bench_audio_import.py --tasks 1000 --kb 200 --repeat 5

Each task names one FLAC file of its own (``--kb`` kilobytes, m&m's speech files are about
100 KB) in m&m's layout (``mnms/execution/data/<name>``). Each round imports the folder into a
new project (every file read, checked by its magic bytes, hashed and stored once) and exports
it (the rows and ``data/<name>`` for each file). Prints the median and min of each phase over
``--repeat`` rounds; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--kb", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-audio-"))
    os.environ["DATABASE_URL"] = f"sqlite:///{work / 'db.sqlite3'}"
    os.environ["MEDIA_ROOT"] = str(work / "media")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmark.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from benchmark.builtin import toolsets_ensure
    from benchmark.datasets.services import dataset_export, dataset_import
    from benchmark.models import Project
    from tests.factories import flac_bytes

    padding = bytes(range(256)) * (args.kb * 4)

    def make_dataset(round_: int) -> Path:
        """New files each round, so every import stores them (none is stored already)."""
        dataset = work / f"in{round_}"
        data = dataset / "mnms" / "execution" / "data"
        data.mkdir(parents=True)
        rows = []
        for n in range(args.tasks):
            name = f"{1000 + n}-1180-0003.flac"
            (data / name).write_bytes(flac_bytes(round_ * args.tasks + n) + padding)
            plan = [{"id": 0, "name": "automatic speech recognition", "args": {"audio": name}}]
            rows.append({"id": n, "user_request": f"Transcribe {name}.", "plan_str": repr(plan)})
        (dataset / "tasks.json").write_text(json.dumps(rows))
        return dataset

    toolset = toolsets_ensure()["mms"]
    imports, exports = [], []
    for round_ in range(args.repeat):
        project = Project.objects.create(
            name=f"audio {round_}", kind="plan", data_format="mms", tag_syntax="", toolset=toolset
        )
        dataset = make_dataset(round_)
        start = time.perf_counter()
        result = dataset_import(project=project, path=dataset)
        imports.append(time.perf_counter() - start)
        assert result.items_created == args.tasks and not result.audio_missing
        start = time.perf_counter()
        dataset_export(project=project, out=work / f"out{round_}")
        exports.append(time.perf_counter() - start)
        assert len(list((work / f"out{round_}" / "data").iterdir())) == args.tasks

    size_mb = args.tasks * (len(padding) + 74) / 1e6
    print(f"{args.tasks} tasks, one {args.kb} KB FLAC each ({size_mb:.0f} MB of audio)")
    for label, times in (("import", imports), ("export", exports)):
        print(
            f"{label}: median {statistics.median(times):.2f} s, min {min(times):.2f} s "
            f"over {len(times)} rounds"
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
