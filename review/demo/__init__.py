"""The demo: one project per benchmark, filled with the project's own authored records.

The datasets live next to this file, each in its benchmark's own layout, so the demo works
where the repository is all there is:

    atp/           data.jsonl and images/                      (ATP-Bench)
    llmi/          text_only.json, mm_input.json, answers.json,
                   train_sample.json and images/               (LLM-I / LLMI-Bench)
    agentic-mme/   json/, images/ and runs/<task_id>/           (Agentic-MME)
    mms/           tasks.json and predictions.jsonl            (m&m's)

Every record was written for Benchwright; none is a benchmark row, so never report results
on them. Some are flawed on purpose, for the review features to find (see README.md here).
``bin/make_demo_images.py`` draws the images; the PNGs are committed.

``demo_load()`` is idempotent: it creates only the users, projects, memberships and items that
are missing (and scores the recorded agent runs once, for the run-scoring page), and never
changes an existing user's password unless asked to (``reset_passwords``, ``load_demo
--reset-passwords``, ``bin/run --reset-demo-passwords``).
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.judgment_tasks.services import judgment_task_ensure_defaults
from benchmark.builtin import taxonomies_ensure, toolsets_ensure
from benchmark.datasets.services import dataset_import
from benchmark.exceptions import DomainError
from benchmark.jobs.services import job_claim, job_create, job_finish
from benchmark.kinds import KINDS, BenchmarkKind
from benchmark.models import Membership, Project, Role, Taxonomy, Toolset
from benchmark.projects.services import membership_set
from benchmark.typing import User

DEMO_ROOT = Path(__file__).resolve().parent
PASSWORD_ENV = "BENCHWRIGHT_DEMO_PASSWORD"
#: The name of the scored upload of ``agentic-mme/runs/`` on the Agentic-MME demo's run page.
DEMO_RUNS_NAME = "demo-agent (authored run)"


@dataclass(frozen=True)
class DemoUser:
    username: str
    role: str
    superuser: bool = False


@dataclass(frozen=True)
class DemoProject:
    name: str
    kind: str
    tag_syntax: str
    data_format: str
    toolset: str
    taxonomy: str
    folder: str
    description: str
    #: The recorded agent runs, scored once for the run-scoring page.
    runs: bool = False
    #: The project's guidelines (markdown; ``guidelines/<folder>.md``), written from the
    #: benchmark's paper: what its annotators and reviewers do.
    guidelines: str = ""

    @classmethod
    def of(cls, kind: BenchmarkKind) -> DemoProject:
        demo = kind.demo
        assert demo is not None
        return cls(
            name=demo.name,
            kind=kind.project_kind,
            tag_syntax=kind.tag_syntax,
            data_format=kind.name,
            toolset=kind.toolset or "",
            taxonomy=kind.taxonomy or "",
            folder=demo.folder,
            description=demo.description,
            runs=demo.runs,
            guidelines=_guidelines(demo.folder),
        )


def _guidelines(folder: str) -> str:
    path = DEMO_ROOT / "guidelines" / f"{folder}.md"
    return path.read_text(encoding="utf-8").strip() if path.is_file() else ""


DEMO_USERS = [
    DemoUser("admin", Role.ADMIN, superuser=True),
    DemoUser("reviewer", Role.REVIEWER),
    DemoUser("annotator1", Role.ANNOTATOR),
    DemoUser("annotator2", Role.ANNOTATOR),
    DemoUser("annotator3", Role.ANNOTATOR),
]

#: One demo project per benchmark kind that has demo data (``BenchmarkKind.demo``).
DEMO_PROJECTS = [DemoProject.of(kind) for kind in KINDS if kind.demo is not None]


class Writer(Protocol):
    """Anything with ``write(text)``: a file, ``sys.stdout`` or a command's ``self.stdout``."""

    def write(self, text: str, /) -> object: ...


class _Printer:
    def __init__(self, stdout: Writer | None) -> None:
        self.stdout = stdout

    def __call__(self, line: str) -> None:
        if self.stdout is not None:
            self.stdout.write(line if line.endswith("\n") else line + "\n")


def _new_password() -> str:
    return os.environ.get(PASSWORD_ENV) or secrets.token_urlsafe(12)


def _ensure_users(
    say: _Printer, *, reset_passwords: bool = False
) -> tuple[dict[str, User], dict[str, str]]:
    """The demo users, created with a password only when they do not exist yet; with
    ``reset_passwords`` an existing demo user gets a new password too (printed like a new one)."""
    user_model = get_user_model()
    users: dict[str, User] = {}
    passwords: dict[str, str] = {}
    for spec in DEMO_USERS:
        user = user_model.objects.filter(username=spec.username).first()
        if user is None:
            password = _new_password()
            email = f"{spec.username}@example.com"
            if spec.superuser:
                user = user_model.objects.create_superuser(spec.username, email, password)
            else:
                user = user_model.objects.create_user(spec.username, email, password)
            passwords[spec.username] = password
            say(f"  {spec.username} / {password}")
        elif reset_passwords:
            password = _new_password()
            user.set_password(password)
            user.save(update_fields=["password"])
            passwords[spec.username] = password
            say(f"  {spec.username} / {password}   (new password)")
        else:
            say(f"  {spec.username}: already exists, password unchanged")
        users[spec.username] = user
    return users, passwords


def _ensure_project(
    spec: DemoProject, toolsets: dict[str, Toolset], taxonomies: dict[str, Taxonomy]
) -> tuple[Project, bool]:
    project = Project.objects.filter(name=spec.name).first()
    if project is not None:
        if not project.guidelines and spec.guidelines:  # a demo loaded before there were any
            project.guidelines = spec.guidelines
            project.save(update_fields=["guidelines"])
        return project, False
    project = Project(
        name=spec.name,
        kind=spec.kind,
        tag_syntax=spec.tag_syntax,
        data_format=spec.data_format,
        toolset=toolsets[spec.toolset],
        taxonomy=taxonomies[spec.taxonomy],
        description=spec.description,
        guidelines=spec.guidelines,
    )
    project.full_clean()
    project.save()
    return project, True


def _ensure_memberships(project: Project, users: dict[str, User]) -> int:
    """Add the demo users who are not members yet; roles changed since are kept."""
    members = set(Membership.objects.filter(project=project).values_list("user_id", flat=True))
    added = 0
    for spec in DEMO_USERS:
        user = users[spec.username]
        if user.pk not in members:
            membership_set(project=project, user=user, role=spec.role)
            added += 1
    return added


def _ensure_demo_runs(project: Project, user: User, say: _Printer) -> int:
    """Score the demo's recorded agent runs (``agentic-mme/runs/``) once, as an upload named
    DEMO_RUNS_NAME, so the run-scoring page has something to show. Returns the runs added;
    when the project's items no longer fit the runs (one was deleted), says so and adds none."""
    from review.runs import (
        services as runs,  # review depends on benchmark, not the other way round at import
    )

    folder = DEMO_ROOT / "agentic-mme" / "runs"
    if not folder.is_dir() or project.run_sets.filter(name=DEMO_RUNS_NAME).exists():
        return 0
    try:
        with transaction.atomic():
            job = job_create(
                kind=runs.SCORE_KIND,
                user=user,
                project=project,
                params={"project_id": project.pk, "name": DEMO_RUNS_NAME, "path": str(folder)},
            )
            job_claim(job_id=job.pk)
            run_set = runs.run_set_score(job=job)
            count = run_set.runs.count()
            job_finish(job_id=job.pk, result={"run_set_id": run_set.pk, "runs": count})
    except DomainError as exc:
        say(f"  {project.name}: the demo agent run was not scored: {exc.message}")
        return 0
    return count


@transaction.atomic
def demo_load(*, stdout: Writer | None = None, reset_passwords: bool = False) -> dict[str, Any]:
    """Create (or complete) the demo: built-in toolsets and taxonomies, the demo users, four
    projects with memberships, and each project's demo dataset. Re-running adds nothing and
    keeps passwords, unless ``reset_passwords`` gives every demo user a new one.

    Returns ``{"passwords": {username: password} for users created (or reset) now, "projects": {name:
    {"id", "created", "items", "items_created", ...import counts, and for the trajectory
    project "runs_created"}}}``."""
    say = _Printer(stdout)
    toolsets = toolsets_ensure()
    taxonomies = taxonomies_ensure()
    say("Users (username / password):")
    users, passwords = _ensure_users(say, reset_passwords=reset_passwords)
    projects: dict[str, dict[str, Any]] = {}
    say("Projects:")
    for spec in DEMO_PROJECTS:
        project, created = _ensure_project(spec, toolsets, taxonomies)
        _ensure_memberships(project, users)
        summary: dict[str, Any] = {"id": project.pk, "created": created}
        if project.data_format != spec.data_format:
            say(
                f"  {spec.name}: exists with format {project.data_format!r}, not "
                f"{spec.data_format!r}; its demo data was not imported"
            )
        else:
            result = dataset_import(project=project, path=DEMO_ROOT / spec.folder)
            summary.update(result.as_dict())
        summary["items"] = project.items.count()
        summary["judgment_tasks"] = [t.name for t in judgment_task_ensure_defaults(project=project)]
        if spec.runs and project.data_format == spec.data_format:
            summary["runs_created"] = _ensure_demo_runs(project, users["admin"], say)
        projects[spec.name] = summary
        say(
            f"  {spec.name}: {summary['items']} items "
            f"({summary.get('items_created', 0)} new, "
            f"{summary.get('attachments_created', 0)} new attachments"
            + (
                f", {summary['runs_created']} new scored agent run(s)"
                if "runs_created" in summary
                else ""
            )
            + ")"
        )
    return {"passwords": passwords, "projects": projects}
