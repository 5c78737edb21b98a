"""A page's path names the feature package that serves it (benchmark/routing.py): the pages of a
project sit under ``projects/<project_id>/<feature>/``, the others under ``<feature>/``, where
``<feature>`` is the package's name with ``-`` for ``_``; only ``benchmark/projects/`` (the
project list, a project's page, an item's page) sits at the root. The REST API keeps its
published paths under ``api/``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from benchmark.routing import PROJECT_PREFIX, feature_urls

APPS = ("benchmark", "annotation", "review")


def _routes(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            if pattern.app_name in ("admin", "moved"):
                continue
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern).removeprefix("^"), pattern.callback


def page_routes() -> list[tuple[str, str]]:
    """(path pattern, module of the view) of every page route of the apps, outside the API."""
    found = []
    for route, view in _routes(get_resolver().url_patterns):
        module = view.__module__
        if route.startswith("api/") or module.split(".")[0] not in APPS:
            continue
        found.append((route, module))
    return found


def test_there_are_pages_of_every_app() -> None:
    apps = {module.split(".")[0] for _, module in page_routes()}
    assert apps == set(APPS)


@pytest.mark.parametrize(("route", "module"), page_routes())
def test_a_pages_path_starts_with_its_features_name(route: str, module: str) -> None:
    app, feature, *_ = module.split(".")
    if (app, feature) == ("benchmark", "projects"):
        assert route == "" or route.startswith("projects/"), route
        return
    name = feature.replace("_", "-")
    assert route.startswith((f"{PROJECT_PREFIX}{name}/", f"{name}/")), (
        f"{route} is served by {app}/{feature}/, so it should start with "
        f"{PROJECT_PREFIX}{name}/ or {name}/"
    )


def test_feature_urls_mounts_the_project_pages_and_the_others() -> None:
    both = feature_urls("runs", "review.runs.urls")
    assert [str(p.pattern) for p in both] == [f"{PROJECT_PREFIX}runs/", "runs/"]
    only_project = feature_urls("team", "review.team.urls")
    assert [str(p.pattern) for p in only_project] == [f"{PROJECT_PREFIX}team/"]
    with pytest.raises(ValueError, match="benchmark.routing has neither"):
        feature_urls("routing", "benchmark.routing")
