"""``python manage.py backup OUT`` while another process keeps writing (rows and media files),
then ``python manage.py restore IN`` into a new database and media folder, as
docs/reference/running-for-a-team.md prints the commands: the backup does not fail, and what
it restores is one instant of the database (the rows written before it, without a gap) with
every file those rows name.

On SQLite the databases are files; with DATABASE_URL on PostgreSQL, two databases of their
own on the test database's server (named after it, dropped afterwards)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

ROOT = Path(__file__).resolve().parents[2]

WRITER = """
import os, sys
import django
django.setup()
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from benchmark.models import Toolset

stop, n = sys.argv[1], 0
while not os.path.exists(stop):
    # The file first, then the row naming it (as images are stored).
    default_storage.save(f"written/{n}.bin", ContentFile(b"row %d" % n))
    Toolset.objects.create(name=f"written-{n:06d}")
    n += 1
    if n == 25:
        print("ready", flush=True)
print(n, flush=True)
"""

READ = """
import json
import django
django.setup()
from benchmark.models import Toolset
print(json.dumps(list(Toolset.objects.filter(name__startswith="written-")
                      .order_by("name").values_list("name", flat=True))))
"""


def _env(database_url: str, media: Path) -> dict[str, str]:
    keep = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL"} and not k.startswith("AWS_")
    }
    return {**keep, "DATABASE_URL": database_url, "MEDIA_ROOT": str(media)}


def _run(*args: str, env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def databases(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(URL of the database being worked on, URL of an empty one to restore into)."""
    if connection.vendor == "sqlite":
        yield f"sqlite:///{tmp_path / 'live.sqlite3'}", f"sqlite:///{tmp_path / 'new.sqlite3'}"
        return
    import psycopg

    s = connection.settings_dict
    names = [f"{s['NAME']}_bk_live", f"{s['NAME']}_bk_new"]
    params = {
        "host": s["HOST"] or "127.0.0.1",
        "port": s["PORT"] or 5432,
        "user": s["USER"],
        "password": s["PASSWORD"] or None,
        "dbname": "postgres",
        "autocommit": True,
    }
    with psycopg.connect(**params) as admin:
        for name in names:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{name}"')
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    base = f"postgres://{auth}@{params['host']}:{params['port']}"
    try:
        yield f"{base}/{names[0]}", f"{base}/{names[1]}"
    finally:
        with psycopg.connect(**params) as admin:
            for name in names:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_backup_taken_while_others_write_restores_one_instant(
    tmp_path: Path, databases: tuple[str, str]
) -> None:
    live_url, new_url = databases
    live = _env(live_url, tmp_path / "live-media")
    done = _run("manage.py", "migrate", "-v", "0", env=live)
    assert done.returncode == 0, done.stderr

    stop = tmp_path / "stop"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(stop)],
        cwd=ROOT, env=live, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "ready", writer.stderr.read()
        backup = _run("manage.py", "backup", str(tmp_path / "backup"), env=live)
        time.sleep(0.2)  # a few more writes after the backup
    finally:
        stop.touch()
        out, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err
    written = int(out.split()[-1])
    assert backup.returncode == 0, backup.stdout + backup.stderr
    assert "Backup written to" in backup.stdout

    manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
    in_backup = manifest["counts"]["benchmark.Toolset"]
    assert 25 <= in_backup <= written

    new = _env(new_url, tmp_path / "new-media")
    restored = _run("manage.py", "restore", str(tmp_path / "backup"), env=new)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    names = json.loads(_run("-c", READ, env=new).stdout)
    # One instant: the first rows written, in order, without a gap.
    assert names == [f"written-{n:06d}" for n in range(in_backup)]
    media = tmp_path / "new-media" / "written"
    assert all((media / f"{n}.bin").read_bytes() == b"row %d" % n for n in range(in_backup))
    if connection.vendor == "sqlite":
        with sqlite3.connect(tmp_path / "new.sqlite3") as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    check = _run("manage.py", "migrate", "--check", env=new)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_backup_older_than_the_code_is_migrated_after_the_restore(
    tmp_path: Path, databases: tuple[str, str]
) -> None:
    old_url, new_url = databases
    old = _env(old_url, tmp_path / "old-media")
    done = _run("manage.py", "migrate", "benchmark", "0016", "-v", "0", env=old)
    assert done.returncode == 0, done.stderr
    made = _run(
        "-c",
        "import django; django.setup(); from benchmark.models import Toolset;"
        " Toolset.objects.create(name='written-000000')",
        env=old,
    )
    assert made.returncode == 0, made.stderr
    backup = _run("manage.py", "backup", str(tmp_path / "backup"), env=old)
    assert backup.returncode == 0, backup.stdout + backup.stderr
    manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
    assert "0017_long_answer_text_packed_on_sqlite" not in manifest["migrations"]["benchmark"]

    new = _env(new_url, tmp_path / "new-media")
    restored = _run("manage.py", "restore", str(tmp_path / "backup"), env=new)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert "then migrated to this code" in restored.stdout
    check = _run("manage.py", "migrate", "--check", env=new)
    assert check.returncode == 0, check.stdout + check.stderr
    assert json.loads(_run("-c", READ, env=new).stdout) == ["written-000000"]
