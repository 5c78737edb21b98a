"""Every command line README.md and the pages of docs/ print works as printed (issue 22, item
14; issue 23 moved the reference, and its command lines, from README into docs/).

Every ``python manage.py ...`` line of README and of each ``docs/**/*.md`` (code blocks and
inline code; README first, then the pages by path) is expanded
(``tests/readme_commands.py``: each alternative, with and without the optional parts), its
placeholders get real values on the demo database from the table ``VALUES`` below, and it runs
in this process through ``call_command`` and must succeed. A new line picks its values from the
same table; a placeholder the table does not know fails with the file and line named, and so
does a line whose command is missing or whose arguments the command's parser refuses. Lines
run in that order, so a later line may use what an earlier one wrote (``release_verify DIR``
checks the folder the ``release`` line of the same page wrote). The ``bin/...``, ``tests/perf/...`` and
celery lines are checked without running them for real (``--help``, ``bash -n``, the usage).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command, get_commands, load_command_class
from markdown_it import MarkdownIt

from annotation.judgment_tasks.models import JudgmentTask
from annotation.judgment_tasks.services import assignment_next_for_user, judgment_submit
from benchmark.models import ItemStatus, Origin, Project, Response
from benchmark.projects.services import item_status_set
from benchmark.rendering import SandboxCodeRunner
from review.answer_rendering import services as rendering_services
from review.demo import DEMO_PROJECTS, DEMO_ROOT, demo_load
from tests.image_server import fake_run_code
from tests.llm_server import MODEL, FakeModelServer, point_at
from tests.readme_commands import (
    Arg,
    Context,
    NotationError,
    Printed,
    printed_commands,
    strip_comment,
    variants,
)

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def documents() -> list[Path]:
    """README.md, then every page of docs/ by path: the files whose command lines run."""
    return [README, *sorted(DOCS.rglob("*.md"))]


PROJECT_OF_FORMAT = {spec.data_format: spec.name for spec in DEMO_PROJECTS}
FOLDER_OF_FORMAT = {spec.data_format: spec.folder for spec in DEMO_PROJECTS}
LLMI, ATP, MME, MMS = (PROJECT_OF_FORMAT[f] for f in ("llmi", "atp", "agentic-mme", "mms"))

# ----------------------------------------------------------------------------- the table
#: Which demo project a line's ``--project NAME`` names: by the line's --format or --judge,
#: else by the command. Interchange formats (label-studio, jsonl, csv) go to the m&m's demo,
#: whose plan-validity task the fixture gives judgments.
PROJECT_OF_JUDGE = {
    "llmi-rubric": LLMI,
    "llmi-llm": LLMI,
    "llmi-mllm": LLMI,
    "atp-mam": ATP,
    "mms-plan": MMS,
    "pairwise": LLMI,
    "pairwise-models": LLMI,
}
PROJECT_OF_COMMAND = {
    "render_answers": LLMI,
    "score_responses": LLMI,
    "oracle_test": MME,
    "evaluate": ATP,
    "aggregate": MMS,  # the plan-validity task the fixture gives judgments
    "recompute_doubt": MMS,  # routing by doubt on the same task
    "release": MMS,
    "export_dataset": MMS,  # --format label-studio, jsonl, csv
    "import_dataset": MMS,
}
#: Words of prose in a printed line, and what they stand for.
PHRASES = {"[create_project's options]": "[--admin USERNAME --description TEXT]"}
#: Commands the docs show with settings of their own: they run as ``python manage.py`` in a
#: process with that environment, and their output must hold the text (docs/reference/
#: settings.md: "For production also set ...; `python manage.py check --deploy` is then clean").
IN_A_PROCESS: dict[str, tuple[dict[str, str], str]] = {
    "check": (
        {
            "DEBUG": "false",
            "SECRET_KEY": "readme-" + "k" * 20 + "-production-secret-0123456789-abcdef",
            "ALLOWED_HOSTS": "bench.example.org",
            "CSRF_TRUSTED_ORIGINS": "https://bench.example.org",
            "SECURE_SSL_REDIRECT": "true",
        },
        "System check identified no issues",
    ),
}
#: Commands that cannot run on a filled test database; their lines are only parsed.
PARSE_ONLY = {
    "evaluate": "runs each kind's protocol against a scripted model; its lines run in "
    "tests/review/evaluation/test_evaluation_command.py (replay and --out included)",
    "runserver": "serves until stopped",
    "restore": "fills an empty database (its own tests restore into one)",
    "backup": "takes its snapshot outside a transaction (tests/benchmark/test_backup_online.py "
    "runs it as a process, as README prints it)",
}


class World:
    """The demo database and files the lines run against, and what earlier lines wrote."""

    def __init__(self, tmp: Path, server: FakeModelServer) -> None:
        self.tmp, self.server = tmp, server
        self.wrote: dict[str, str] = {}  # command -> the last folder or file a line gave it
        self._n = itertools.count(1)

    def unique(self, stem: str) -> str:
        return f"{stem}-{next(self._n)}"

    def fresh(self, stem: str, suffix: str = "") -> str:
        return str(self.tmp / f"{self.unique(stem)}{suffix}")

    def project(self, c: Context) -> str:
        fmt, judge = c.value_of("--format"), c.value_of("--judge")
        if c.command == "import_dataset" and c.has("--create"):
            return self.unique(f"README {fmt} import")
        if fmt in PROJECT_OF_FORMAT:
            return PROJECT_OF_FORMAT[fmt]
        if judge in PROJECT_OF_JUDGE:
            return PROJECT_OF_JUDGE[judge]
        return PROJECT_OF_COMMAND[c.command]

    def token_to_revoke(self, c: Context) -> Any:
        """A token of the line's ``--user`` (``admin`` for the placeholder), made now."""
        from benchmark.api_tokens.services import api_token_create

        user = get_user_model().objects.get(username=c.value_of("--user") or "admin")
        token, _key = api_token_create(user=user, actor=None, name=self.unique("readme-token"))
        return token

    def task(self, c: Context) -> str:
        project = Project.objects.get(name=self.project(c))
        return JudgmentTask.objects.filter(project=project, unit_kind="item").earliest("id").name

    def judgments_file(self, c: Context) -> str:
        """The judgments JSONL export of the task the fixture gave judgments."""
        from review.agreement.services import judgments_jsonl

        task = JudgmentTask.objects.get(project__name=MMS, unit_kind="item", scheme="binary")
        path = Path(self.fresh("judgments", ".jsonl"))
        path.write_bytes(b"".join(judgments_jsonl(task=task)))
        return str(path)

    def gold_file(self, c: Context) -> str:
        """Gold answers for that task's judged items: the value 1 (the first annotator's)."""
        task = JudgmentTask.objects.get(project__name=MMS, unit_kind="item", scheme="binary")
        items = sorted(set(task.judgments.values_list("item__external_id", flat=True)))
        path = Path(self.fresh("gold", ".jsonl"))
        path.write_text("".join(json.dumps({"item": i, "value": 1}) + "\n" for i in items))
        return str(path)

    def answers(self, c: Context) -> str:
        """A file of model answers (the ground truth, as model ``readme-<n>``)."""
        project = Project.objects.get(name=self.project(c))
        rows = [
            {"id": r.item.external_id, "model": f"readme-{c.nth}", "answer": r.text}
            for r in Response.objects.filter(item__project=project, origin=Origin.GROUND_TRUTH)
            .select_related("item")
            .order_by("item__position")
        ]
        if not rows:  # LLM-I's demo has no ground-truth answers: its model answers, renamed
            rows = [
                {**row, "model": f"readme-{c.nth}"}
                for row in json.loads((DEMO_ROOT / "llmi" / "answers.json").read_text())
            ]
        path = Path(self.fresh("answers", ".jsonl"))
        path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
        return str(path)

    def export(self, c: Context, fmt: str, suffix: str, *extra: str) -> str:
        """A file an export writes for the line's project (with the line's --map)."""
        out = self.fresh(f"export-{fmt}", suffix)
        mapping = c.value_of("--map")
        args = ["export_dataset", out, "--format", fmt, "--project", self.project(c), *extra]
        call_command(*args, *(["--map", mapping] if mapping else []), stdout=StringIO())
        return out

    def label_studio_export(self, c: Context) -> str:
        """Label Studio JSON as an earlier export wrote it, its annotations by annotator3 (as
        Label Studio writes them back; the export leaves them unattributed); with ``--labels``,
        its choices renamed to the labels the line maps, as a Label Studio project with label
        names of its own has them."""
        task = ["--with-judgments", self.task(c)] if c.has("--task") else []
        path = Path(self.export(c, "label-studio", ".json", *task))
        labels = c.value_of("--labels") or ""
        rename = {value: name for name, value in (p.split("=") for p in labels.split(",") if p)}
        tasks = json.loads(path.read_text())
        for entry in tasks:
            for annotation in entry.get("annotations", []):
                annotation["completed_by"] = "annotator3@example.com"
                for result in annotation["result"]:
                    choices = result["value"].get("choices")
                    if choices and rename:
                        result["value"]["choices"] = [self._label(rename, v) for v in choices]
        path.write_text(json.dumps(tasks), encoding="utf-8")
        return str(path)

    @staticmethod
    def _label(rename: dict[str, str], value: Any) -> str:
        if str(value) not in rename:
            raise LookupError(f"--labels gives no Label Studio label for the value {value!r}")
        return rename[str(value)]

    def file(self, c: Context) -> str:
        if c.option == "--answers":
            return self.answers(c)
        if c.command == "import_dataset":
            fmt = c.value_of("--format") or ""
            return self.export(c, fmt, f".{fmt}")
        if c.command == "check_plan":
            return str(DEMO_ROOT / "mms" / "tasks.json")
        if c.command == "check_response":
            project = Project.objects.get(name=PROJECT_OF_FORMAT[c.value_of("--syntax") or ""])
            answer = Response.objects.filter(item__project=project).earliest("id")
            path = Path(self.fresh("answer", ".txt"))
            path.write_text(answer.text, encoding="utf-8")
            return str(path)
        raise LookupError(f"FILE of {c.command} {c.option or '(positional)'}")

    def out(self, c: Context, suffix: str = "") -> str:
        fmt = c.value_of("--format") or ""
        path = self.fresh(
            f"out-{c.command}", suffix or (f".{fmt}" if fmt in ("jsonl", "csv") else "")
        )
        self.wrote[c.command] = path
        return path

    def item_id(self, c: Context) -> str:
        project = Project.objects.get(name=self.project(c))
        ids = project.items.order_by("position").values_list("external_id", flat=True)
        return list(ids)[c.nth]

    def compared(self, c: Context) -> list[str]:
        """Two models whose answers the project has (``MODEL_A``, ``MODEL_B``): the first two
        by name, after importing a second model's answers where there is one model."""
        project = Project.objects.get(name=self.project(c))
        answers = Response.objects.filter(item__project=project, origin=Origin.MODEL)
        names = sorted(set(answers.values_list("model_name", flat=True)))
        if len(names) < 2:  # the demo has one model's answers: import another's (readme-<n>)
            from review.judges.services import answers_import

            path = Path(self.answers(c))
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
            for row in rows:  # another answer than the first model's, not a copy of it
                row["answer"] = f"{row['answer']} (answered again)"
            text = "\n".join(json.dumps(row) for row in rows)
            answers_import(project=project, files=[(path.name, text.encode())])
            names = sorted(set(answers.values_list("model_name", flat=True)))
        return names[:2]

    def model(self, c: Context) -> str:
        """The name of a model whose answers the project has (the first, the second, ...)."""
        project = Project.objects.get(name=self.project(c))
        answers = Response.objects.filter(item__project=project, origin=Origin.MODEL)
        names = sorted(set(answers.values_list("model_name", flat=True)))
        return names[c.nth % len(names)]


def _name(c: Context, w: World) -> str:
    by_option: dict[str | None, Callable[[], str]] = {
        "--project": lambda: w.project(c),
        "--name": lambda: (
            w.token_to_revoke(c).name
            if c.command == "api_token" and c.has("revoke")
            else w.unique(f"readme-{c.command}")
        ),
        "--toolset": lambda: c.value_of("--format") or "atp",
        "--taxonomy": lambda: c.value_of("--format") or "atp",
        "--model": lambda: MODEL,
        "--judge-model": lambda: MODEL,
        "--judge-api-key-env": lambda: "README_TEST_KEY",
        None: lambda: "annotator1",  # axes_reset_username NAME
    }
    return by_option[c.option]()


#: Every placeholder README and docs/ use, and its value on the demo database (``U``, ``IN`` and
#: ``--expires-days N``: for the api_token, backup and restore lines of issue 22's other parts).
VALUES: dict[str, Callable[[Context, World], str]] = {
    "NAME": _name,
    "USERNAME": lambda c, w: "admin",
    "U": lambda c, w: "annotator1",
    "TEXT": lambda c, w: "Made by tests/benchmark/test_readme_commands.py",
    "MARKDOWN": lambda c, w: "# Guidelines\n\nJudge carefully.",
    "PATH": lambda c, w: str(DEMO_ROOT / FOLDER_OF_FORMAT[c.value_of("--format") or ""]),
    "OUT": lambda c, w: w.out(c),
    "OUT.json": lambda c, w: w.out(c, ".json"),
    "OUT_DIR": lambda c, w: w.out(c),
    "DIR": lambda c, w: w.wrote["release"],
    "IN": lambda c, w: w.wrote.get("backup") or w.fresh("backup"),
    "EXPORT.json": lambda c, w: w.label_studio_export(c),
    "FILE": lambda c, w: w.file(c),
    "ANSWERS": lambda c, w: w.answers(c),
    "GOLD": lambda c, w: str(DEMO_ROOT / "mms" / "tasks.json"),
    "JUDGMENTS.jsonl": lambda c, w: w.judgments_file(c),
    "GOLD.jsonl": lambda c, w: w.gold_file(c),
    "PRED": lambda c, w: str(DEMO_ROOT / "mms" / "predictions.jsonl"),
    "TASKS_DIR": lambda c, w: str(DEMO_ROOT / "agentic-mme" / "json"),
    "RUNS_DIR": lambda c, w: str(DEMO_ROOT / "agentic-mme" / "runs"),
    "URL": lambda c, w: w.server.url,
    "TASK": lambda c, w: w.task(c),
    "JUDGMENT_TASK": lambda c, w: w.task(c),
    "N": lambda c, w: {"--expires-days": "30", "--name": "readme token"}.get(c.option or "", "2"),
    "K": lambda c, w: "1",
    "PREFIX": lambda c, w: w.token_to_revoke(c).prefix,
    "ADDRESS": lambda c, w: "127.0.0.1",
    "M": lambda c, w: w.model(c),
    "MODEL_A": lambda c, w: w.compared(c)[0],
    "MODEL_B": lambda c, w: w.compared(c)[1],
    "ID": lambda c, w: w.item_id(c),
    "...": lambda c, w: {"--map": "question=query,cat=category"}[c.option or ""],
    "col=field,...": lambda c, w: "external_id=external_id,query=query",
}


def resolve(printed: Printed, args: list[Arg], world: World) -> list[str]:
    out = []
    for arg in args:
        if not arg.placeholder:
            out.append(arg.text)
            continue
        value = VALUES.get(arg.text)
        if value is None:
            raise LookupError(
                f"{printed}\n  the placeholder {arg.text!r} has no value in VALUES "
                "(tests/benchmark/test_readme_commands.py); add one"
            )
        try:
            out.append(value(Context(printed.program, arg, args), world))
        except (LookupError, IndexError) as exc:
            raise LookupError(
                f"{printed}\n  no value for {arg.text!r} after {arg.option or '(positional)'} "
                f"in VALUES: {exc}"
            ) from None
    return out


# ----------------------------------------------------------------------------- the fixture


@pytest.fixture
def world(tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """The demo, with its projects' model on the fake server, three verified items each, and
    two judgments of the m&m's plan-validity task."""
    server = FakeModelServer().start()
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.MODEL_API_KEY_ENV_ALLOWLIST = [f"README_TEST_KEY={server.url}"]
    monkeypatch.setenv("README_TEST_KEY", "sk-readme")
    monkeypatch.setattr(rendering_services, "code_runner", lambda: SandboxCodeRunner(fake_run_code))
    demo_load()
    users = get_user_model().objects
    reviewer = users.get(username="reviewer")
    for spec in DEMO_PROJECTS:
        project = Project.objects.get(name=spec.name)
        point_at(project, server)
        for item in project.items.order_by("position")[:3]:
            item_status_set(item=item, user=reviewer, status=ItemStatus.VERIFIED, reason="ok")
    task = JudgmentTask.objects.get(project__name=MMS, unit_kind="item", scheme="binary")
    for username, value in (("annotator1", 1), ("annotator2", 0)):
        user = users.get(username=username)
        lease = assignment_next_for_user(task=task, user=user)
        assert lease is not None
        judgment_submit(task=task, item=lease.item, user=user, value=value)
    (tmp_path / "readme").mkdir()
    # A line that writes to a relative path (the Label Studio page's folder) writes here, not
    # into the checkout.
    monkeypatch.chdir(tmp_path / "readme")
    try:
        yield World(tmp_path / "readme", server)
    finally:
        server.stop()


# ----------------------------------------------------------------------------- the tests


def _printed() -> list[Printed]:
    return [
        printed
        for path in documents()
        for printed in printed_commands(
            path.read_text(encoding="utf-8"), source=str(path.relative_to(ROOT))
        )
    ]


def _parse(printed: Printed, argv: list[str]) -> None:
    command = load_command_class(get_commands()[printed.program], printed.program)
    command.create_parser("manage.py", printed.program).parse_args(argv)


def _in_a_process(command: str, argv: list[str]) -> None:
    env, expected = IN_A_PROCESS[command]
    done = subprocess.run(
        [sys.executable, "manage.py", command, *argv],
        cwd=ROOT,
        # as a deployment runs it: not with the browser tests' DJANGO_ALLOW_ASYNC_UNSAFE
        env={k: v for k, v in {**os.environ, **env}.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = done.stdout + done.stderr
    if done.returncode != 0 or expected not in output:
        raise AssertionError(f"exit {done.returncode}, not {expected!r}: {output.strip()[-1500:]}")


@pytest.mark.slow
def test_every_manage_py_line_in_readme_and_docs_runs_as_printed(world: World) -> None:
    lines = [p for p in _printed() if p.kind == "manage"]
    listed = [p for p in lines if p.source == "docs/reference/commands.md"]
    assert len(listed) >= 24  # the list of commands
    assert len(lines) >= 40  # and the lines in the text of the other pages
    failures: list[str] = []
    ran = 0
    commands = get_commands()
    for printed in lines:
        if printed.program not in commands:
            failures.append(f"{printed}\n  no command {printed.program!r}")
            continue
        try:
            expanded = variants(printed.rest, phrases=PHRASES)
        except NotationError as exc:
            failures.append(f"{printed}\n  cannot read the notation: {exc}")
            continue
        for args in expanded:
            argv: list[str] = []
            try:
                argv = resolve(printed, args, world)
                if printed.program in PARSE_ONLY:
                    _parse(printed, argv)
                elif printed.program in IN_A_PROCESS:
                    _in_a_process(printed.program, argv)
                else:
                    call_command(printed.program, *argv, stdout=StringIO(), stderr=StringIO())
                    ran += 1
            except LookupError as exc:
                failures.append(str(exc))
            except Exception as exc:  # any failure of any line is reported with the line
                shown = " ".join(argv)
                failures.append(
                    f"{printed}\n  ran: manage.py {printed.program} {shown}\n"
                    f"  {type(exc).__name__}: {exc}"
                )
    assert failures == [], "\n\n".join(failures)
    assert ran >= 40


def test_command_lines_are_read_from_readme_and_every_docs_page() -> None:
    """The reference moved from README into docs/: its command lines are still found there,
    each named by its file, and README's own lines (the two commands) still count."""
    printed = _printed()
    sources = {p.source for p in printed}
    assert "README.md" in sources
    assert {
        "docs/reference/commands.md",
        "docs/reference/running-for-a-team.md",
        "docs/reference/releases.md",
        "docs/reference/api.md",
        "docs/reference/label-studio.md",
    } <= sources
    assert {p.program for p in printed if p.source == "README.md"} >= {"bin/run", "bin/test"}
    found = printed_commands("Text\n\n```\npython manage.py jobs_sweep\n```\n", source="docs/x.md")
    assert [str(p) for p in found] == ["docs/x.md line 4: python manage.py jobs_sweep"]


def test_every_command_readme_names_exists() -> None:
    commands = get_commands()
    named = [p for p in _printed() if p.kind in ("manage", "manage-name")]
    assert {p.program for p in named} >= {"judge", "render_answers", "load_demo"}
    missing = [str(p) for p in named if p.program not in commands]
    assert missing == []


def test_readme_order_for_render_answers_parses() -> None:
    """The line of issue 22: ``--answers F OUT_DIR`` in README's order (``--answers`` took
    OUT_DIR as a second answer file, and the command said OUT_DIR was missing)."""
    printed = Printed(1, "", "manage", "render_answers", "")
    _parse(printed, ["--project", "P", "--answers", "a.json", "out"])
    _parse(printed, ["--project", "P", "--model", "m", "--answers", "a.json", "out"])


# --------------------------------------------------------------------- scripts, not commands


def _bin_usage(script: Path) -> set[str]:
    """The arguments a bin/ script's ``usage:`` line names."""
    found = re.search(r"usage: \S+ \[?([\w|-]+)\]?", script.read_text())
    return set(found[1].split("|")) if found else set()


def _reads_env(script: Path, name: str) -> bool:
    """Whether a bin/ script (or bin/_env.sh, which each sources) reads the variable."""
    used = re.compile(rf"\$\{{?{name}\b")
    return any(used.search(path.read_text()) for path in (script, ROOT / "bin" / "_env.sh"))


def test_readme_set_up_is_two_commands_and_says_port_password_and_reset() -> None:
    """Issue 25, finding 13: README's code blocks hold exactly the two set-up commands; its
    text names PORT (with a line the tests run through bin/run's usage), the demo password
    variable and the way to reset the demo passwords, each read by the script it names."""
    text = README.read_text()
    blocks = [
        t.content.strip()
        for t in MarkdownIt("commonmark").parse(text)
        if t.type == "fence" and t.content.strip().startswith("bin/")
    ]
    assert blocks[:2] == ["bin/run", "bin/test"]
    bin_lines = [p for p in printed_commands(text) if p.kind == "bin"]
    assert any(p.program == "bin/run" and "PORT" in p.env for p in bin_lines)
    assert any(p.program == "bin/run" and p.rest == "--reset-demo-passwords" for p in bin_lines)
    assert "BENCHWRIGHT_DEMO_PASSWORD" in text
    assert _reads_env(ROOT / "bin" / "run", "PORT")
    assert "--reset-demo-passwords" in _bin_usage(ROOT / "bin" / "run")


def test_a_bin_line_may_set_the_environment_first() -> None:
    found = printed_commands("Try `PORT=8123 DEBUG=true bin/run --reset-demo-passwords`.\n")
    assert [(p.program, p.rest, p.env) for p in found] == [
        ("bin/run", "--reset-demo-passwords", ("PORT", "DEBUG"))
    ]


@pytest.mark.slow
def test_every_script_line_in_readme_parses() -> None:
    """``bin/...`` lines: the script exists, is executable, ``bash -n`` reads it and its
    ``usage:`` names the arguments given; ``tests/perf/...`` lines answer ``--help`` with the
    arguments README gives; the celery line's options are celery's (``--help``)."""
    lines = [p for p in _printed() if p.kind in ("bin", "perf", "celery")]
    assert {p.kind for p in lines} == {"bin", "perf", "celery"}
    failures = []
    for printed in lines:
        args = strip_comment(printed.rest).split()
        if printed.kind == "bin":
            script = ROOT / printed.program
            if not script.is_file() or not script.stat().st_mode & 0o111:
                failures.append(f"{printed}\n  {printed.program} is not an executable file")
                continue
            syntax = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
            unknown = set(args) - _bin_usage(script)
            if syntax.returncode or unknown:
                failures.append(f"{printed}\n  {syntax.stderr.strip()} not in its usage: {unknown}")
            unread = [name for name in printed.env if not _reads_env(script, name)]
            if unread:
                failures.append(f"{printed}\n  {printed.program} does not read {unread}")
            continue
        if printed.kind == "perf":
            argv = [sys.executable, str(ROOT / printed.program), *args, "--help"]
        else:
            argv = [str(Path(sys.executable).parent / "celery"), *args, "--help"]
        done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=120)
        if done.returncode != 0:
            failures.append(f"{printed}\n  exit {done.returncode}: {done.stderr.strip()[-500:]}")
    assert failures == [], "\n\n".join(failures)


# ---------------------------------------------------------------- the reading of README lines


def test_the_notation_expands_alternatives_options_and_repeats() -> None:
    runs = variants("--format {a,b} --project NAME [--x X ...] [--y Y]... OUT  # a comment")
    texts = [[a.text for a in args] for args in runs]
    assert texts == [
        ["--format", "a", "--project", "NAME", "--x", "X", "X", "--y", "Y", "--y", "Y", "OUT"],
        ["--format", "b", "--project", "NAME", "--x", "X", "X", "--y", "Y", "--y", "Y", "OUT"],
        ["--format", "a", "--project", "NAME", "OUT"],
        ["--format", "b", "--project", "NAME", "OUT"],
    ]
    first = runs[0]
    assert [(a.option, a.nth) for a in first if a.text == "X"] == [("--x", 0), ("--x", 1)]
    assert next(a for a in first if a.text == "OUT").option is None
    assert [a.placeholder for a in first[:4]] == [False, False, False, True]
    assert [[a.text for a in r] for r in variants("--status ok|all --map ... v1")][:2] == [
        ["--status", "ok", "--map", "...", "v1"],
        ["--status", "all", "--map", "...", "v1"],
    ]
    with pytest.raises(NotationError):
        variants("--x [--y Y")


def test_lines_are_found_in_blocks_and_inline_code_with_their_line_numbers() -> None:
    text = (
        "Intro `python manage.py judge --project NAME\n--judge J` and `manage.py load_demo`.\n"
        "\n```\npython manage.py jobs_sweep   # sweep\nbin/serve web\nexport X=1\n```\n"
    )
    found = [(p.line, p.kind, p.program, p.rest) for p in printed_commands(text)]
    assert found == [
        (1, "manage", "judge", "--project NAME --judge J"),
        (2, "manage-name", "load_demo", ""),
        (5, "manage", "jobs_sweep", "# sweep"),
        (6, "bin", "bin/serve", "web"),
    ]


def test_a_placeholder_without_a_value_fails_naming_the_readme_line(tmp_path: Path) -> None:
    printed = Printed(7, "python manage.py jobs_sweep --colour HUE", "manage", "jobs_sweep", "")
    args = variants("--colour HUE")[0]
    with pytest.raises(LookupError) as caught:
        resolve(printed, args, World(tmp_path, FakeModelServer()))
    assert "README.md line 7" in str(caught.value) and "'HUE'" in str(caught.value)


def test_a_line_the_parser_refuses_fails() -> None:
    from django.core.management import CommandError

    printed = Printed(1, "", "manage", "render_answers", "")
    with pytest.raises(CommandError):
        _parse(printed, ["--project", "P", "--answers"])


def test_the_model_comparison_line_compares_the_two_models_in_both_orders(world: World) -> None:
    """The ``judge --judge pairwise-models`` line of commands.md (and of the reviewer guide),
    run as printed against a scripted judge that always answers "A" (whichever answer is shown
    first): every pair's verdict flips with the order, so each is a tie, and the summary says
    so for the two models the line names."""
    lines = [p for p in _printed() if p.program == "judge" and "pairwise-models" in p.rest]
    assert {p.source for p in lines} >= {"docs/reference/commands.md", "docs/guides/reviewer.md"}
    world.server.answer = "A\nThe answer shown first is better."
    for printed in lines:
        for args in variants(printed.rest, phrases=PHRASES):
            argv = resolve(printed, args, world)
            out = StringIO()
            call_command("judge", *argv, stdout=out, stderr=StringIO())
            rows = [json.loads(line) for line in out.getvalue().splitlines()]
            pairs, summary = rows[:-1], rows[-1]["summary"]
            models = [argv[n + 1] for n, arg in enumerate(argv) if arg == "--model-answers"]
            assert (summary["model_a"], summary["model_b"]) == tuple(models), printed
            assert pairs and summary["n"] == len(pairs), printed
            assert summary["tie"] == 100 and summary["flip"] == 100, printed
            assert summary["a_win"] == summary["b_win"] == 0, printed
