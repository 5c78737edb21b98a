"""Nothing outside a benchmark kind's own code names a kind (issue 23): views, selectors,
services, forms and templates ask the project's kind object (``project.benchmark``, see
``benchmark/kinds/``) and never compare a project's kind, data format or tag syntax with a
particular one, so a fifth benchmark is its own module and templates
(docs/howto/new-benchmark-kind.md), not edits across the code base.

The kinds' own code, the only places a particular kind may be named:

* ``benchmark/kinds/`` (one module per kind, and the registry);
* the judges' spec modules (``review/judges/specs/``: which kinds a judge rates);
* ``benchmark/models.py``, where the choices are defined, and migrations (history);
* the pure packages (formats, tags, metrics, statistics, rendering...), which know nothing of
  projects: they take a format or tag-syntax name as a parameter, and the kind says which;
  ``check_response``, the command line of the pure tag checker (``--syntax``), likewise;
* ``benchmark/builtin/``, the catalogue of built-in toolsets and taxonomies, named like the
  benchmarks whose tools and categories they are.

Everywhere else in ``benchmark/``, ``annotation/``, ``review/`` and ``templates/``, these fail:
a reference to a particular ``ProjectKind``, ``DataFormat`` or ``TagSyntax`` member; a
comparison (``==``, ``!=``, ``in``) of something called ``kind``, ``data_format``,
``tag_syntax``, ``syntax`` or ``fmt`` with a kind, format or syntax literal; a dict keyed by
format names; and in templates a comparison of ``project.kind``, ``data_format``,
``tag_syntax``, ``syntax`` or ``fmt`` with a literal.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("benchmark", "annotation", "review")
ENUMS = {"ProjectKind", "DataFormat", "TagSyntax"}
#: Folders and modules that are a kind's own code, or pure code that takes a name.
OWN = (
    Path("benchmark/kinds"),
    Path("review/judges/specs"),
    Path("benchmark/models.py"),
    Path("benchmark/builtin"),
    Path("benchmark/management/commands/check_response.py"),
)
PURE = tuple(
    Path(p)
    for p in (
        "benchmark/formats",
        "benchmark/datastats",
        "benchmark/metrics",
        "benchmark/imaging",
        "benchmark/tags",
        "benchmark/plans",
        "benchmark/judge_prompts",
        "benchmark/sandbox",
        "benchmark/rendering",
    )
)
#: The names a project's kind, format and tag syntax take (``ProjectKind``, ``DataFormat``,
#: ``TagSyntax`` values), and the formats' names (the keys of a dict dispatching on them).
KIND_VALUES = {"interleaved", "plan", "trajectory"}
FORMAT_VALUES = {"atp", "llmi", "agentic-mme", "mms"}
ATTRIBUTES = {"kind", "data_format", "tag_syntax", "syntax", "fmt", "project_kind"}


def python_files(root: Path, skip: Iterable[Path] = (*OWN, *PURE)) -> Iterator[Path]:
    skip = tuple(skip)
    for app in APPS:
        for path in sorted((root / app).rglob("*.py")):
            relative = path.relative_to(root)
            if "migrations" in relative.parts:
                continue
            if any(relative == s or s in relative.parents for s in skip):
                continue
            yield relative


def _named(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _literals(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [v for e in node.elts for v in _literals(e)]
    return []


def python_findings(root: Path, files: Iterable[Path]) -> list[str]:
    """``path:line: what`` for every particular kind named in Python."""
    findings = []
    values = KIND_VALUES | FORMAT_VALUES
    for relative in files:
        tree = ast.parse((root / relative).read_text(encoding="utf-8"), str(relative))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in ENUMS
                and node.attr.isupper()
            ):
                findings.append(f"{relative}:{node.lineno}: {node.value.id}.{node.attr}")
            elif isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                named = [n for n in map(_named, operands) if n in ATTRIBUTES]
                literals = [v for o in operands for v in _literals(o) if v in values]
                if named and literals:
                    findings.append(
                        f"{relative}:{node.lineno}: compares {named[0]} with {literals[0]!r}"
                    )
            elif isinstance(node, ast.Dict):
                keys = [v for k in node.keys if k is not None for v in _literals(k)]
                if len(set(keys) & FORMAT_VALUES) >= 2:
                    findings.append(f"{relative}:{node.lineno}: a dict keyed by format names")
    return sorted(findings, key=lambda f: (f.split(":")[0], int(f.split(":")[1])))


COMPARED = re.compile(
    r"""(?:\bproject\.kind|\b(?:data_format|tag_syntax|syntax|fmt))\s*(?:==|!=|in\b|not in\b)\s*["']"""
    r"""|["']\s*(?:==|!=|in\b|not in\b)\s*(?:\bproject\.kind|[\w.]*\b(?:data_format|tag_syntax|syntax|fmt))\b"""
)


def template_files(root: Path) -> Iterator[Path]:
    for path in sorted((root / "templates").rglob("*.html")):
        yield path.relative_to(root)


def template_findings(root: Path, files: Iterable[Path]) -> list[str]:
    """``path:line: what`` for every comparison of a project's kind, format or syntax with a
    literal."""
    findings = []
    for relative in files:
        for number, line in enumerate((root / relative).read_text().splitlines(), start=1):
            if match := COMPARED.search(line):
                findings.append(f"{relative}:{number}: compares with a literal: {match.group(0)}")
    return findings


def test_no_python_outside_a_kind_names_a_kind() -> None:
    files = list(python_files(ROOT))
    assert Path("benchmark/items/services.py") in files
    assert Path("benchmark/kinds/atp.py") not in files
    findings = python_findings(ROOT, files)
    assert not findings, "ask project.benchmark instead:\n" + "\n".join(findings)


def test_no_template_compares_a_kind() -> None:
    files = list(template_files(ROOT))
    assert Path("templates/benchmark/project_detail.html") in files
    findings = template_findings(ROOT, files)
    assert not findings, "ask project.benchmark instead:\n" + "\n".join(findings)


def test_the_checks_see_what_they_look_for(tmp_path: Path) -> None:
    """The scans find a kind named in Python and in a template (so they can fail)."""
    (tmp_path / "review").mkdir()
    (tmp_path / "review" / "views.py").write_text(
        "from benchmark.models import DataFormat\n\n"
        "if project.data_format == DataFormat.MMS:\n    pass\n"
        'if project.kind != "trajectory":\n    pass\n'
        'if project.tag_syntax not in ("atp", "llmi"):\n    pass\n'
        'ROLES = {"atp": "document", "llmi": "input"}\n'
        'if job.kind == "score_answers" or draft.kind == DraftKind.PLAN:\n    pass\n'
    )
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "page.html").write_text(
        '{% if project.kind == "plan" %}P{% endif %}\n'
        "{% if project.data_format in 'mms atp' %}{% endif %}\n"
        '{% if result.syntax == "llmi" %}{% endif %}\n'
        '{% if job.kind == "model_call" %}{% endif %}\n'
        "{% if project.benchmark.offers.edit_plan %}{% endif %}\n"
    )
    found = python_findings(tmp_path, python_files(tmp_path, ()))
    assert found == [
        "review/views.py:3: DataFormat.MMS",
        "review/views.py:5: compares kind with 'trajectory'",
        "review/views.py:7: compares tag_syntax with 'atp'",
        "review/views.py:9: a dict keyed by format names",
    ], found
    found = template_findings(tmp_path, template_files(tmp_path))
    assert [f.split(": compares")[0] for f in found] == [
        "templates/page.html:1",
        "templates/page.html:2",
        "templates/page.html:3",
    ], found
