"""python tests/upgrade/replay.py FIXTURE OUT

An upgrade from the fixture's release to this checkout, in a process of its own, on the
database of DATABASE_URL (which must be empty) and the media folder MEDIA_ROOT:

1. migrate to the fixture's release (its migration targets per app, forward only, with
   Django's migration executor; then ``post_migrate`` with that release's models, as that
   release's ``manage.py migrate`` ended);
2. write the fixture's rows through that release's historical models (not today's) and copy
   its media files;
3. ``manage.py migrate``: what an admin runs to upgrade;
4. write down, in OUT: ``rows.json.gz`` (every row now), ``changes.json`` (the migrations run
   and what they renamed or removed of the release's models and fields) and ``exports/`` with
   ``exports.json`` (the fixture's exports made again, by this checkout's code).

The upgrade test (tests/upgrade/test_upgrade.py) runs it and compares OUT with the fixture.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.upgrade import snapshot  # noqa: E402


def replay(fixture: Path, out: Path) -> None:
    snapshot.django_setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    manifest = json.loads((fixture / snapshot.MANIFEST).read_text())
    if connection.introspection.table_names():
        raise SystemExit(f"the database of DATABASE_URL is not empty ({connection.vendor})")
    apps = snapshot.migrate_to(connection, manifest["migrations"])
    snapshot.rows_load(apps, snapshot.rows_read(fixture / snapshot.ROWS), connection)
    media = Path(settings.MEDIA_ROOT)
    if (fixture / snapshot.MEDIA).is_dir():
        shutil.copytree(fixture / snapshot.MEDIA, media, dirs_exist_ok=True)
    changes = snapshot.schema_changes(connection)
    call_command("migrate", verbosity=0, interactive=False)
    from django.db.migrations.loader import MigrationLoader

    head = MigrationLoader(connection).project_state().apps  # the models as migrated
    out.mkdir(parents=True, exist_ok=True)
    snapshot.rows_write(snapshot.rows_dump(head), out / snapshot.ROWS)
    (out / "changes.json").write_text(json.dumps(changes, indent=1))
    specs = [
        {k: v for k, v in spec.items() if k not in ("files", "error")}
        for spec in manifest["exports"]
    ]
    made = snapshot.exports_run(specs, out / snapshot.EXPORTS)
    (out / "exports.json").write_text(json.dumps(made, indent=1))


def run_child(fixture: Path, out: Path, database_url: str, media: Path) -> None:
    """Run :func:`replay` in a new process on ``database_url`` and ``media``; a failure raises
    RuntimeError with the end of its output."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "MEDIA_ROOT": str(media),
        "DJANGO_SETTINGS_MODULE": "benchmark.settings",
        "ALLOWED_HOSTS": "testserver",  # the exports' downloads go through the test client
    }
    for name in ("CELERY_BROKER_URL", "AWS_STORAGE_BUCKET_NAME"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), str(fixture), str(out)],
        cwd=snapshot.ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(
            f"the upgrade failed (exit {done.returncode}):\n{done.stdout[-2000:]}\n"
            f"{done.stderr[-6000:]}"
        )


def accept_exports(fixture: Path) -> None:
    """Replay the fixture on a fresh SQLite database; when no row was lost or changed, make
    this checkout's exports the fixture's recorded ones (see make_fixture.py)."""
    with tempfile.TemporaryDirectory(prefix="bw-upgrade-accept-") as tmp:
        work = Path(tmp)
        run_child(fixture, work / "out", f"sqlite:///{work / 'db.sqlite3'}", work / "media")
        problems = snapshot.rows_compare(
            snapshot.rows_read(fixture / snapshot.ROWS),
            snapshot.rows_read(work / "out" / snapshot.ROWS),
            json.loads((work / "out" / "changes.json").read_text()),
        )
        if problems:
            raise SystemExit("rows were lost or changed; nothing accepted:\n" + "\n".join(problems))
        made: dict[str, Any] = json.loads((work / "out" / "exports.json").read_text())
        failed = {name: e["error"] for name, e in made.items() if "error" in e}
        if failed:
            raise SystemExit(f"exports failed; nothing accepted: {failed}")
        manifest = json.loads((fixture / snapshot.MANIFEST).read_text())
        changed = [
            name
            for spec in manifest["exports"]
            if spec.get("files") != made[(name := spec["name"])]["files"]
        ]
        for spec in manifest["exports"]:
            spec["files"] = made[spec["name"]]["files"]
        shutil.rmtree(fixture / snapshot.EXPORTS, ignore_errors=True)
        for name, result in made.items():
            for rel in result["files"]:
                if snapshot.is_text(rel):
                    target = fixture / snapshot.EXPORTS / name / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(work / "out" / snapshot.EXPORTS / name / rel, target)
        if changed:
            manifest["exports_accepted_at"] = snapshot.git_head()
        (fixture / snapshot.MANIFEST).write_text(
            json.dumps(manifest, indent=1, ensure_ascii=False) + "\n"
        )
    print(f"accepted; exports changed: {', '.join(changed) or 'none'}")
    print("review them: git diff tests/upgrade/previous/")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    replay(Path(sys.argv[1]), Path(sys.argv[2]))
