"""``bin/serve`` refuses what it cannot serve, with a message, before starting anything: an
unknown role, a missing or weak SECRET_KEY with DEBUG off, a worker without a broker; and
``bin/serve migrate`` migrates the database it is given and exits. (The web and worker roles
themselves run in tests/integration/test_scale_out.py, as ``bin/serve`` starts them.)"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVE = ROOT / "bin" / "serve"

pytestmark = pytest.mark.skipif(
    not (ROOT / ".venv" / "bin" / "python").exists() or shutil.which("bash") is None,
    reason="bin/serve runs from the checkout's .venv",
)


def serve(*args: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "SECRET_KEY", "DEBUG"}
    }
    base.update(
        {
            "DATABASE_URL": f"sqlite:///{tmp_path / 'serve.sqlite3'}",
            "MEDIA_ROOT": str(tmp_path / "media"),
            **env,
        }
    )
    return subprocess.run(
        ["bash", str(SERVE), *args],
        cwd=ROOT,
        env=base,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_an_unknown_role_is_refused_with_the_usage(tmp_path: Path) -> None:
    done = serve("webb", tmp_path=tmp_path, SECRET_KEY=secrets.token_urlsafe(50))
    assert done.returncode == 2
    assert "usage: bin/serve [all|web|worker|migrate]" in done.stderr


@pytest.mark.parametrize("key", ["", "short"])
def test_debug_off_needs_a_real_secret_key(tmp_path: Path, key: str) -> None:
    done = serve("migrate", tmp_path=tmp_path, SECRET_KEY=key)
    assert done.returncode == 1
    assert "SECRET_KEY" in done.stderr
    assert not (tmp_path / "serve.sqlite3").exists()  # nothing was migrated


def test_a_worker_needs_a_broker(tmp_path: Path) -> None:
    done = serve("worker", tmp_path=tmp_path, SECRET_KEY=secrets.token_urlsafe(50))
    assert done.returncode == 2
    assert "needs CELERY_BROKER_URL" in done.stderr
    # Said before anything starts: without a broker or CACHE_URL nothing is shared.
    assert "==> cache: each process's own memory" in done.stdout
    assert "set CACHE_URL=redis://HOST:6379/1 to share them" in done.stdout


def test_an_explicit_cache_url_is_named_as_such(tmp_path: Path) -> None:
    done = serve(
        "worker",
        tmp_path=tmp_path,
        SECRET_KEY=secrets.token_urlsafe(50),
        CACHE_URL="redis://cache.internal:6380/4",
    )
    assert "==> cache: Redis at redis://cache.internal:6380, database 4 (from CACHE_URL)" in (
        done.stdout
    )


def test_migrate_migrates_the_given_database_and_exits(tmp_path: Path) -> None:
    done = serve(
        "migrate",
        tmp_path=tmp_path,
        SECRET_KEY=secrets.token_urlsafe(50),
        CELERY_BROKER_URL="redis://:broker-secret@127.0.0.1:6379/0",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "==> migrating the database" in done.stdout
    # The broker's Redis, next database, shared by the web processes; no password shown.
    assert (
        "==> cache: Redis at redis://127.0.0.1:6379, database 1 (from CELERY_BROKER_URL, as "
        "CACHE_URL is not set), shared by every web process"
    ) in done.stdout
    assert "broker-secret" not in done.stdout + done.stderr
    check = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--check"],
        cwd=ROOT,
        env={
            **os.environ,
            "DATABASE_URL": f"sqlite:///{tmp_path / 'serve.sqlite3'}",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0, check.stdout + check.stderr  # no unapplied migration
