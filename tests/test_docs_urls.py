"""Every path of the site printed in README.md and docs/ (in backticks) is a current page, not a
path that moved: readers copy them. Only the "Old paths" section of docs/reference/urls.md names
old paths, and each of those must still redirect."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.urls import Resolver404, URLResolver, get_resolver, resolve

ROOT = Path(__file__).resolve().parents[1]
_PATH = re.compile(r"`(?:(?:GET|POST) )?(/[^`\s]*)`")
_PLACEHOLDER = re.compile(r"<([^>]+)>")


#: Paths printed in the docs that are another service's, not pages of this site: the
#: OpenAI-compatible image endpoints of docs/reference/rendering.md.
NOT_OURS = {"/images/edits", "/images/generations"}


def _routes(patterns: list[Any], prefix: str = "") -> Iterator[str]:
    for pattern in patterns:
        route = prefix + str(pattern.pattern).lstrip("^")
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, route)
        else:
            yield route


def _first_segments() -> set[str]:
    """The first path segment of every route of the site (``projects``, ``jobs``, ``api``...)."""
    return {route.split("/", 1)[0] for route in _routes(get_resolver().url_patterns)} - {""}


def _concrete(printed: str) -> str:
    """A path that can be resolved: placeholders filled in, the query string dropped."""
    path = printed.split("?", 1)[0]
    return _PLACEHOLDER.sub(lambda m: "ab" * 32 if m[1] == "sha256" else "1", path)


def printed_paths() -> list[tuple[str, str, bool]]:
    """(file, printed path, whether it is printed as an old path) for every site path."""
    segments = _first_segments()
    found = []
    for file in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = file.read_text(encoding="utf-8")
        old_section = ""
        if file.name == "urls.md":
            text, _, old_section = text.partition("## Old paths")
        for section, old in ((text, False), (old_section, True)):
            for printed in _PATH.findall(section):
                first = printed.lstrip("/").split("/", 1)[0]
                if first not in segments or printed in NOT_OURS:
                    continue
                if "..." in printed or "<feature>" in printed:  # a pattern, not one path
                    continue
                found.append((str(file.relative_to(ROOT)), printed, old))
    return found


def test_the_docs_print_paths_of_most_features() -> None:
    paths = printed_paths()
    assert len(paths) > 40, paths
    assert any(old for _, _, old in paths), "the old paths of docs/reference/urls.md"


@pytest.mark.parametrize(("file", "printed", "old"), printed_paths())
def test_a_printed_path_is_a_current_page(file: str, printed: str, old: bool) -> None:
    try:
        match = resolve(_concrete(printed))
    except Resolver404:
        pytest.fail(f"{file} prints {printed}, which is no page")
    if old:
        assert match.namespace == "moved", f"{file} prints {printed} as old, but it is current"
    else:
        assert match.namespace != "moved", f"{file} prints {printed}, a path that moved"
