"""The backup folder's manifest and the PostgreSQL tools' versions, without a database: names
that stay inside the folder, a folder that is no backup, a tool that is missing or says no
version. (The commands themselves: test_backup.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark.backup import databases
from benchmark.backup.manifest import BackupInvalid, manifest_read, safe_name


def test_manifest_names_stay_inside_the_folder() -> None:
    assert safe_name("media/images/ab/x.png") and safe_name("database.sqlite3")
    for bad in ("", "/etc/passwd", "media/../x", "media//x", "./x", "media\\x", 3, None):
        assert not safe_name(bad)


def test_a_folder_that_is_no_backup_says_so(tmp_path: Path) -> None:
    with pytest.raises(BackupInvalid, match="is not a folder"):
        manifest_read(tmp_path / "missing")
    with pytest.raises(BackupInvalid, match="manifest.json is missing"):
        manifest_read(tmp_path)


def fake_tool(folder: Path, name: str, version: str) -> None:
    folder.mkdir(exist_ok=True)
    script = folder / name
    script.write_text(f"#!/bin/sh\necho '{name} (PostgreSQL) {version}'\n")
    script.chmod(0o755)


def test_a_missing_or_unversioned_tool_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(databases.BackupFailed, match="pg_dump was not found on PATH"):
        databases.pg_tool_major("pg_dump")
    fake_tool(tmp_path / "bin", "pg_restore", "14.11 (Debian 14.11-1)")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert databases.pg_tool_major("pg_restore") == (str(tmp_path / "bin" / "pg_restore"), 14)
    (tmp_path / "bin" / "pg_restore").write_text("#!/bin/sh\necho 'a wrapper of ours'\n")
    with pytest.raises(databases.BackupFailed, match="did not name a PostgreSQL version"):
        databases.pg_tool_major("pg_restore")


def test_a_database_without_tables_is_not_backed_up(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'typo.sqlite3'}", MEDIA_ROOT=str(tmp_path / "media")
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "backup", str(tmp_path / "b")],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert "no backup written: the database has no tables" in done.stderr
    assert not (tmp_path / "b").exists()
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]


def test_a_database_that_cannot_be_opened_is_named(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from benchmark.backup.manifest import manifest_write

    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "database.sqlite3").write_bytes(b"")
    manifest_write(
        tmp_path / "b",
        {
            "format": "benchwright-backup", "version": 1, "database": {"engine": "sqlite",
            "file": "database.sqlite3"}, "migrations": {}, "counts": {},
            "files": [{"path": "database.sqlite3", "size": 0, "sha256": "e3b0c44298fc1c149afb"
                       "f4c8996fb92427ae41e4649b934ca495991b7852b855"}],
        },
    )  # fmt: skip
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'no' / 'such' / 'folder.sqlite3'}",
        MEDIA_ROOT=str(tmp_path / "media"),
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "restore", str(tmp_path / "b")],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert "not restored: the database answered: unable to open database file" in done.stderr
    assert not (tmp_path / "media").exists()
