"""Settings come from the environment; production values pass Django's deployment checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    # DJANGO_ALLOW_ASYNC_UNSAFE is set by the browser tests' conftest; it is not a setting a
    # deployment would have, and Django's deploy checks do not look at it either way.
    dropped = {"DATABASE_URL", "DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    clean = {k: v for k, v in os.environ.items() if k not in dropped}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_check_deploy_is_clean_with_production_values() -> None:
    out = _manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DEBUG="false",
        SECRET_KEY="k" * 20 + "-production-secret-with-enough-variety-0123456789",
        ALLOWED_HOSTS="bench.example.org",
        SECURE_SSL_REDIRECT="true",
    )
    assert out.returncode == 0, out.stderr
    assert "no issues" in out.stdout


def test_check_deploy_warns_with_development_defaults() -> None:
    out = _manage("check", "--deploy", "--fail-level", "WARNING", DEBUG="true")
    assert out.returncode != 0
    assert "DEBUG" in out.stderr


def test_database_url_selects_postgresql() -> None:
    code = (
        "import django; django.setup(); from django.conf import settings as s;"
        "print(s.DATABASES['default']['ENGINE'], s.CELERY_TASK_ALWAYS_EAGER)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "benchmark.settings",
            "DATABASE_URL": "postgres://u@127.0.0.1:5432/x",
            "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
        },
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["django.db.backends.postgresql", "False"]


def test_defaults_are_sqlite_with_in_process_jobs() -> None:
    code = (
        "import django; django.setup(); from django.conf import settings as s;"
        "print(s.DATABASES['default']['ENGINE'], s.CELERY_TASK_ALWAYS_EAGER,"
        " 'journal_mode=WAL' in s.DATABASES['default']['OPTIONS']['init_command'])"
    )
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "benchmark.settings"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["django.db.backends.sqlite3", "True", "True"]


def test_models_and_migrations_agree(db: None) -> None:  # type: ignore[no-untyped-def]
    from django.core.management import call_command

    # exits non-zero (SystemExit) when a model change has no migration
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)
