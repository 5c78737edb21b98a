"""Release speed: ``manage.py release`` and ``manage.py release_verify`` on 10,000 verified
ATP-Bench items with realistic provenance, each timed as a whole process.

    python tests/perf/bench_release.py                       # SQLite, built in a temp folder
    python tests/perf/bench_release.py --db-file /tmp/rel.sqlite3   # build once, reuse after
    python tests/perf/bench_release.py --pg                  # PostgreSQL at $DATABASE_URL
    python tests/perf/bench_release.py --items 2000 --repeat 3      # best of 3

The items are the import benchmark's ATP records (2 documents, 9 images, a 2,800-character
answer with 4 tool tags), imported through ``dataset_import``, then given what verification
leaves behind: 3 judgments each by 3 of 5 annotators (with their assignments), an accepted
outcome of a majority task, a status change to verified by that rule, a second version of the
answer with 4 tag decisions on a third of the items. Target (issue 13): release <= 5 s and
<= 250 MB peak RSS, release_verify <= 2 s. The figures are wall time, CPU time (user + system:
what the command costs when the machine is shared) and peak RSS of each command's process
(``os.wait4``), Django start-up included. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import ROOT, fresh_postgres  # noqa: E402
from bench_import_export import generate  # noqa: E402

PROJECT = "perf-release"
ANNOTATORS = 5


def setup(items: int, data: Path) -> None:
    """Runs in a child process with Django on the chosen database: the project, its items and
    their provenance (skipped when the database already holds them)."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmark.settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import transaction
    from django.utils import timezone

    from annotation.judgment_tasks.models import Assignment, Judgment, JudgmentTask, Outcome
    from annotation.tag_review.models import ResponseVersion, TagDecision
    from benchmark.datasets.services import dataset_import
    from benchmark.models import Item, ItemStatusChange, Project, Response, Toolset
    from review.releases.models import Release

    call_command("migrate", verbosity=0)
    project = Project.objects.filter(name=PROJECT).first()
    if project and Item.objects.filter(project=project, status="verified").count() == items:
        Release.objects.filter(project=project).delete()
        print(json.dumps({"built": False}))
        return
    Project.objects.filter(name=PROJECT).delete()
    toolset, _ = Toolset.objects.get_or_create(name="atp")
    project = Project.objects.create(
        name=PROJECT, kind="interleaved", tag_syntax="atp", data_format="atp", toolset=toolset
    )
    generate(data, items)
    dataset_import(project=project, path=data)
    User = get_user_model()
    users = [
        User.objects.get_or_create(username=f"rel-annotator-{n}")[0] for n in range(ANNOTATORS)
    ]
    rng = random.Random(13)
    now = timezone.now()
    with transaction.atomic():
        task = JudgmentTask.objects.create(
            project=project, name="verify", question="Is it right?", scheme="binary",
            consensus="majority",
        )  # fmt: skip
        item_ids = list(
            Item.objects.filter(project=project).order_by("position").values_list("pk", flat=True)
        )
        assignments, outcomes, changes = [], [], []
        for pk in item_ids:
            for user in rng.sample(users, 3):
                assignments.append(
                    Assignment(
                        task=task, item_id=pk, user=user, status="submitted", leased_at=now,
                        expires_at=now + timedelta(minutes=30), submitted_at=now,
                    )
                )  # fmt: skip
            outcomes.append(Outcome(task=task, item_id=pk, verdict="accepted", value=1))
            changes.append(
                ItemStatusChange(
                    item_id=pk, from_status="draft", to_status="verified",
                    rule="verify: majority", reason="3 of 3 accept",
                )
            )  # fmt: skip
        Assignment.objects.bulk_create(assignments, batch_size=2000)
        Judgment.objects.bulk_create(
            [
                Judgment(
                    task=task, item_id=a.item_id, user=a.user, assignment=a,
                    value=1 if rng.random() < 0.9 else 0,
                    reason="" if rng.random() < 0.8 else "typo in the answer",
                )
                for a in assignments
            ],
            batch_size=2000,
        )  # fmt: skip
        Outcome.objects.bulk_create(outcomes, batch_size=2000)
        ItemStatusChange.objects.bulk_create(changes, batch_size=2000)
        responses = list(
            Response.objects.filter(item__project=project).values_list("pk", "item_id", "text")
        )
        versions = []
        for pk, item_id, text in responses:
            if item_id % 3 == 0:
                versions.append(
                    ResponseVersion(
                        response_id=pk, number=2, base_number=1, text=text, author=users[0]
                    )
                )
        last = ResponseVersion.objects.filter(response__item__project=project)
        numbers = set(last.filter(number=2).values_list("response_id", flat=True))
        versions = [v for v in versions if v.response_id not in numbers]
        ResponseVersion.objects.bulk_create(versions, batch_size=2000)
        decisions = [
            TagDecision(version=v, tag=k, tool="Search", decision="kept", position=k)
            for v in versions
            for k in range(4)
        ]
        TagDecision.objects.bulk_create(decisions, batch_size=2000)
        Item.objects.filter(project=project).update(status="verified")
    print(json.dumps({"built": True}))


def timed(cmd: list[str], env: dict[str, str]) -> dict:
    """Run ``cmd``; its wall time and the peak RSS of its process, from ``os.wait4``."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{stderr[-3000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return {
        "seconds": seconds,
        "cpu": cpu,
        "peak_mb": usage.ru_maxrss / 1024,
        "out": stdout.strip(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--db-file", help="SQLite file to build once and reuse")
    parser.add_argument("--pg", action="store_true", help="PostgreSQL at $DATABASE_URL")
    parser.add_argument("--fresh", action="store_true", help="with --pg: recreate the database")
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the best is printed")
    parser.add_argument("--keep", help="copy the last release folder here")
    parser.add_argument("--child-setup", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_setup:
        setup(args.items, Path(args.data))
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        if args.pg:
            url = os.environ["DATABASE_URL"]
            if args.fresh:
                fresh_postgres(url)
        else:
            db = Path(args.db_file) if args.db_file else tmpdir / "release.sqlite3"
            url = f"sqlite:///{db.resolve()}"
        if args.pg:  # kept with the database, which outlives this run
            media = Path(tempfile.gettempdir()) / "bench_release_pg.media"
        elif args.db_file:
            media = Path(args.db_file).resolve().with_suffix(".media")
        else:
            media = tmpdir / "media"
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "MEDIA_ROOT": str(media),
            "DEBUG": "false",
            "SECRET_KEY": "perf-" + "x7q" * 20,  # only for this script's processes
            "BENCHWRIGHT_SHARED_DATA": os.environ.get(
                "BENCHWRIGHT_SHARED_DATA", "/work/shared/data"
            ),
        }
        data = tmpdir / "src" / "data.jsonl"
        data.parent.mkdir()
        start = time.perf_counter()
        built = subprocess.run(
            [sys.executable, __file__, "--child-setup", "--items", str(args.items),
             "--data", str(data)],
            env=env, cwd=ROOT, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if built.returncode:
            raise SystemExit(f"setup failed:\n{built.stderr[-3000:]}")
        what = "built" if json.loads(built.stdout.strip().splitlines()[-1])["built"] else "reused"
        print(f"{what} {args.items} verified items in {time.perf_counter() - start:.1f} s")
        manage = [sys.executable, str(ROOT / "manage.py")]
        rounds = []
        for n in range(args.repeat):
            out = tmpdir / f"release-{n}"
            rel = timed(
                [*manage, "release", "--project", PROJECT, "--name", f"perf {n}", str(out)], env
            )
            ver = timed([*manage, "release_verify", str(out)], env)
            size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
            rounds.append((rel, ver, size))
            if args.keep and n == args.repeat - 1:
                shutil.rmtree(args.keep, ignore_errors=True)
                shutil.copytree(out, args.keep)
            shutil.rmtree(out)
        rel = min((r[0] for r in rounds), key=lambda x: x["seconds"])
        ver = min((r[1] for r in rounds), key=lambda x: x["seconds"])
        db_name = "postgresql" if args.pg else "sqlite"
        print(f"{db_name}: {rel['out']}  ({rounds[-1][2] / 1e6:.1f} MB)")
        print(
            f"{db_name}: release {rel['seconds']:.2f} s wall, {rel['cpu']:.2f} s CPU "
            f"(peak {rel['peak_mb']:.0f} MB)  release_verify {ver['seconds']:.2f} s wall, "
            f"{ver['cpu']:.2f} s CPU (peak {ver['peak_mb']:.0f} MB)"
        )
        if args.repeat > 1:
            print("  release runs: " + ", ".join(f"{r[0]['seconds']:.2f}" for r in rounds))
            print("  verify runs:  " + ", ".join(f"{r[1]['seconds']:.2f}" for r in rounds))


if __name__ == "__main__":
    main()
