"""What the speed scripts share: a fresh PostgreSQL database, and running one phase of a
script in a child process of its own (so each phase's time and peak memory are its own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def fresh_postgres(url: str) -> None:
    """Drop the database named in ``url`` and create it again."""
    import urllib.parse

    import psycopg

    p = urllib.parse.urlparse(url)
    with psycopg.connect(
        host=p.hostname,
        port=p.port or 5432,
        user=p.username,
        password=p.password,
        dbname="postgres",
        autocommit=True,
        connect_timeout=5,
    ) as conn:
        name = p.path.lstrip("/")
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')


def run_phase(script: str, phase: str, argv: list[str], env: dict[str, str]) -> dict:
    """Run ``script --child phase *argv`` with ``env`` added; its last stdout line is the
    phase's figures as JSON. A failed phase stops the benchmark with its stderr."""
    out = subprocess.run(
        [sys.executable, script, "--child", phase, *argv],
        env={**os.environ, **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode:
        raise SystemExit(f"{phase} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def child_phase(phases: dict, args: Any, name: str) -> None:
    """The child side of :func:`run_phase`: set Django up on the environment's database, run
    ``phases[name](args)`` and print its figures as the last line of JSON."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmark.settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    print(json.dumps(phases[name](args)))


def atp_project_with_people(name: str, annotators: int = 0) -> tuple:
    """In a child phase, after Django is set up: migrate, then an ATP-Bench project ``name``
    with the reviewer ``perf-reviewer`` (password "x") and ``annotators`` annotators
    (``annotator000``, ... without passwords). Returns (project, reviewer, annotators)."""
    from django.core.management import call_command

    from benchmark.models import Membership, Project, Toolset
    from benchmark.typing import User

    call_command("migrate", verbosity=0)
    toolset, _ = Toolset.objects.get_or_create(name="atp")
    project = Project.objects.create(
        toolset=toolset, name=name, kind="interleaved", tag_syntax="atp", data_format="atp"
    )
    reviewer = User.objects.create_user("perf-reviewer", password="x")
    Membership.objects.create(project=project, user=reviewer, role="reviewer")
    people = User.objects.bulk_create(User(username=f"annotator{n:03d}") for n in range(annotators))
    Membership.objects.bulk_create(
        Membership(project=project, user=u, role="annotator") for u in people
    )
    return project, reviewer, people
