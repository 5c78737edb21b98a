"""The accessibility check of the browser tests (issue 25, finding 12): axe-core, from the
``axe-playwright-python`` package (its ``axe.min.js``, installed with the dev extras), injected
by Playwright into the page; the app never serves it, so the Content-Security-Policy stays
strict. A page passes with no serious or critical violation, in the light and the dark theme.

``tests/e2e/conftest.py`` runs it on every page a browser test opens through ``login_page``:
after the test, each distinct page (by URL pattern, i.e. Django view) not yet checked in this
session is opened again in the test's browser context and checked in both themes. Tests call
``violations(page)`` to check a page in the state they left it."""

from __future__ import annotations

from functools import cache
from typing import Any
from urllib.parse import urlsplit

from django.urls import Resolver404, resolve

#: The impacts that fail a page. axe's "moderate" and "minor" are reported by axe but pass.
FAILING = ("serious", "critical")
SCHEMES = ("light", "dark")
#: Pages whose markup and styles are not the app's: Django's admin and the Swagger UI of the
#: API docs (drf-spectacular). The check covers the app's own templates and stylesheets.
NOT_OURS = ("/admin/", "/api/docs/")


@cache
def _script() -> str:
    from axe_playwright_python.base import AXE_SCRIPT

    return AXE_SCRIPT


def violations(page: Any) -> list[str]:
    """The serious and critical axe violations of the page as it is now, one line per rule
    with the first elements it names (empty: the page passes)."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(_script())
    result = page.evaluate(
        "() => axe.run(document, {resultTypes: ['violations']})"
        ".then(r => r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " targets: v.nodes.slice(0, 3).map(n => n.target.join(' '))})))"
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {', '.join(v['targets'])}"
        for v in result
        if v["impact"] in FAILING
    ]


def violations_in_both_themes(page: Any) -> list[str]:
    """``violations`` in the light and the dark theme (prefers-color-scheme), each line
    prefixed by its theme; the page is left in the light theme."""
    found = []
    for scheme in SCHEMES:
        page.emulate_media(color_scheme=scheme)
        # Colours that change with a transition (the images page's drop zone) jump to the end,
        # so axe reads the theme's colours rather than a blend.
        page.evaluate(
            "() => document.getAnimations().forEach(a => a instanceof CSSTransition && a.finish())"
        )
        found += [f"[{scheme}] {line}" for line in violations(page)]
    page.emulate_media(color_scheme="light")
    return found


def pattern(url: str) -> str:
    """What makes two URLs the same page for the check: the Django view they resolve to."""
    path = urlsplit(url).path
    try:
        return resolve(path).view_name or path
    except Resolver404:
        return path


class Checker:
    """Remembers the pages (by ``pattern``) checked in this session and checks the rest."""

    def __init__(self) -> None:
        self.checked: set[str] = set()

    def check(self, context: Any, urls: list[str]) -> list[str]:
        problems: list[str] = []
        todo: dict[str, str] = {}
        for url in urls:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or parts.path.startswith(NOT_OURS):
                continue
            key = pattern(url)
            if key not in self.checked and key not in todo:
                todo[key] = url
        if not todo:
            return problems
        page = context.new_page()
        try:
            for key, url in todo.items():
                self.checked.add(key)
                try:
                    response = page.goto(url)
                except Exception:  # a download, a page gone with the test's data: nothing to check
                    continue
                if response is None or "text/html" not in response.headers.get("content-type", ""):
                    continue
                page.wait_for_load_state("load")
                problems += [f"{url} {line}" for line in violations_in_both_themes(page)]
        finally:
            page.close()
        return problems
