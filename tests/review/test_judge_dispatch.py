"""Nothing outside a judge's own code names a judge (issue 23): views, selectors, services,
forms and templates ask the judge's spec (``review.judges.specs``) and never compare a judge's
name, so a new judge is its own module and templates (docs/howto/new-judge.md), not edits
across the code base.

The judges' own code, the only places a judge's name may appear:

* its spec module, ``review/judges/specs/<module>.py`` (the module of its spec's class);
* its templates folder, ``templates/review/judges/<folder>/`` (the folder of its partials);
* migrations (history: the choices a migration once recorded).

Everywhere else in ``benchmark/``, ``annotation/``, ``review/`` and ``templates/``, these fail:
a string literal that is a judge's name (in a comparison, a dict of judges, an argument...), a
reference to the ``JudgeName`` enum the registry replaced, and a template comparing ``judge``
or ``<something>.judge`` with a literal.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from review.judges.specs import judge_specs

ROOT = Path(__file__).resolve().parents[2]
APPS = ("benchmark", "annotation", "review")
JUDGES_TEMPLATES = Path("templates/review/judges")


def judge_names() -> set[str]:
    return {spec.name for spec in judge_specs()}


def own_modules() -> set[Path]:
    """Each judge's spec module, relative to the root."""
    found = set()
    for spec in judge_specs():
        module = type(spec).__module__
        found.add(Path(*module.split(".")).with_suffix(".py"))
    return found


def own_template_folders() -> set[Path]:
    """Each judge's templates folder (the folder of the partials its spec names)."""
    folders = set()
    for spec in judge_specs():
        for name in (
            spec.result_template,
            spec.definitions_template,
            spec.figures_template,
            spec.overall_template,
        ):
            folder = (Path("templates") / name).parent if name else None
            if folder is not None and folder != JUDGES_TEMPLATES:
                folders.add(folder)
    return folders


def python_files(root: Path, skip: set[Path]) -> Iterator[Path]:
    for app in APPS:
        for path in sorted((root / app).rglob("*.py")):
            relative = path.relative_to(root)
            if "migrations" in relative.parts or relative in skip:
                continue
            yield relative


def python_findings(root: Path, files: Iterable[Path], names: set[str]) -> list[str]:
    """``path:line: what`` for every judge name literal and ``JudgeName`` reference."""
    findings = []
    for relative in files:
        tree = ast.parse((root / relative).read_text(encoding="utf-8"), str(relative))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value in names:
                    findings.append(f"{relative}:{node.lineno}: the judge name {node.value!r}")
            elif (isinstance(node, ast.Name) and node.id == "JudgeName") or (
                isinstance(node, ast.Attribute) and node.attr == "JudgeName"
            ):
                findings.append(f"{relative}:{node.lineno}: JudgeName")
            elif isinstance(node, ast.alias) and node.name == "JudgeName":
                findings.append(f"{relative}:{node.lineno}: imports JudgeName")
    return findings


COMPARED = re.compile(r"""\bjudge\s*(?:==|!=)\s*["']|["']\s*(?:==|!=)\s*[\w.]*\bjudge\b""")


def template_files(root: Path, skip: set[Path]) -> Iterator[Path]:
    for path in sorted((root / "templates").rglob("*.html")):
        relative = path.relative_to(root)
        if not any(folder in relative.parents for folder in skip):
            yield relative


def template_findings(root: Path, files: Iterable[Path], names: set[str]) -> list[str]:
    """``path:line: what`` for every quoted judge name and comparison of a judge with a
    literal."""
    alternatives = "|".join(re.escape(n) for n in sorted(names))
    quoted = re.compile(rf"""["']({alternatives})["']""")
    findings = []
    for relative in files:
        for number, line in enumerate((root / relative).read_text().splitlines(), start=1):
            if match := quoted.search(line):
                findings.append(f"{relative}:{number}: the judge name {match.group(1)!r}")
            elif COMPARED.search(line):
                findings.append(f"{relative}:{number}: compares a judge with a literal")
    return findings


def test_the_judges_own_code_is_where_the_spec_says() -> None:
    modules = own_modules()
    assert Path("review/judges/specs/llmi_rubric.py") in modules
    assert all((ROOT / m).is_file() for m in modules), modules
    folders = own_template_folders()
    assert Path("templates/review/judges/atp_mam") in folders
    assert all((ROOT / f).is_dir() for f in folders), folders


def test_no_python_outside_a_judge_names_a_judge() -> None:
    findings = python_findings(ROOT, python_files(ROOT, own_modules()), judge_names())
    assert not findings, "ask the judge's spec instead:\n" + "\n".join(findings)


def test_no_template_outside_a_judge_names_or_compares_a_judge() -> None:
    files = list(template_files(ROOT, own_template_folders()))
    assert Path("templates/review/judges/run.html") in files
    findings = template_findings(ROOT, files, judge_names())
    assert not findings, "ask the judge's spec instead:\n" + "\n".join(findings)


def test_the_checks_see_what_they_look_for(tmp_path: Path) -> None:
    """The scans find a name compared in Python and in a template (so they can fail)."""
    (tmp_path / "review").mkdir()
    (tmp_path / "review" / "views.py").write_text(
        'from review.judges.models import JudgeName\n\nif run.judge == "atp-mam":\n    pass\n'
    )
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "page.html").write_text(
        '{% if run.judge == "llmi-mllm" %}R{% endif %}\n{% if judge == x %}{% endif %}\n'
        "{% if kind == 'x' %}{% endif %}\n"
    )
    names = judge_names()
    found = python_findings(tmp_path, python_files(tmp_path, set()), names)
    assert found == [
        "review/views.py:1: imports JudgeName",
        "review/views.py:3: the judge name 'atp-mam'",
    ]
    found = template_findings(tmp_path, template_files(tmp_path, set()), names)
    assert found == ["templates/page.html:1: the judge name 'llmi-mllm'"]
    (tmp_path / "templates" / "page.html").write_text('{% if r.judge != "new-judge" %}{% endif %}')
    found = template_findings(tmp_path, template_files(tmp_path, set()), names)
    assert found == ["templates/page.html:1: compares a judge with a literal"]
