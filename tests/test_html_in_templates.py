"""HTML comes from templates (STYLE.md, "Views and htmx"): no module of the apps outside
``templatetags/`` builds markup and marks it safe (``mark_safe``, ``format_html``,
``SafeString``), and no template turns escaping off (``|safe``, ``{% autoescape off %}``).
HTML that ``benchmark.rendering`` sanitized (rendered answers, the tag editor's preview) is a
``SanitizedHtml``, which the ``sanitized`` filter prints; the filter escapes anything else."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from django.template import Context, Template
from django.utils.html import escape
from django.utils.safestring import mark_safe

from benchmark.rendering import SanitizedHtml
from benchmark.rendering.markup import markdown_html

ROOT = Path(__file__).resolve().parents[1]
APPS = ("benchmark", "annotation", "review")
SAFE_API = {"mark_safe", "format_html", "format_html_join", "SafeString", "SafeText", "SafeData"}


def _python_files() -> list[Path]:
    return [
        path
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        if "templatetags" not in path.parts and "migrations" not in path.parts
    ]


def test_no_module_outside_templatetags_marks_markup_safe() -> None:
    found = []
    for path in _python_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            name = None
            if isinstance(node, ast.ImportFrom):
                name = next((a.name for a in node.names if a.name in SAFE_API), None)
            elif isinstance(node, ast.Attribute) and node.attr in SAFE_API:
                name = node.attr
            if name:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    assert found == []


def test_no_template_turns_escaping_off() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {m.group(0)}"
        for path in (ROOT / "templates").rglob("*.html")
        for m in re.finditer(r"\|\s*safe(?:seq)?\b|{%\s*autoescape\s+off", path.read_text("utf-8"))
    ]
    assert found == []


def test_the_sanitized_filter_prints_sanitized_html_and_escapes_the_rest() -> None:
    template = Template("{% load sanitized %}[{{ value|sanitized }}]")

    def shown(value: object) -> str:
        return template.render(Context({"value": value}))

    html = markdown_html("**bold** <script>alert(1)</script>")
    assert isinstance(html, SanitizedHtml)
    assert shown(html) == f"[{html}]" and "<strong>bold</strong>" in shown(html)
    assert "<script>" not in shown(html)
    assert shown("<b>not sanitized</b>") == "[&lt;b&gt;not sanitized&lt;/b&gt;]"
    assert shown(str(html)) != f"[{html}]"  # plain text: escaped, whatever it holds
    joined = html + "<i>joined</i>"  # a plain str again
    assert shown(joined) == f"[{escape(joined)}]"
    assert shown(None) == "[]" and shown(mark_safe("<i>x</i>")) == "[<i>x</i>]"


def test_no_template_has_a_comment_that_would_print() -> None:
    """Django's ``{# #}`` comments end at the line's end: one spread over lines prints on the
    page as text (the Team page once showed "{# Model-in-the-loop …"). Longer comments use
    ``{% comment %}``."""
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in (ROOT / "templates").rglob("*.html")
        for n, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if re.search(r"{#(?!.*#})", line)
    ]
    assert found == []
