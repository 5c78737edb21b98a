"""No import cycle between the packages of an app (issue 23).

Inside ``benchmark``, ``annotation`` and ``review``, each top-level subpackage or module (a
feature such as ``benchmark.items``, or a shared layer such as ``benchmark.models``) is a node,
and an import anywhere inside one of another is an edge. The graph must have no cycle: a
cycle means no package can be read, tested or changed without the others. The graph is the
one import-linter checks (grimp's, built from the source, lazy imports inside functions
included), so a cycle that hides an import inside a function is found too.
"""

from __future__ import annotations

from collections import defaultdict

import grimp
import pytest

APPS = ("benchmark", "annotation", "review")


def package_graph(graph: grimp.ImportGraph, app: str) -> dict[str, set[str]]:
    """``app``'s top-level subpackages, each with those it imports (directly, from any of its
    modules)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for module in graph.find_descendants(app):
        source = ".".join(module.split(".")[:2])
        edges[source]
        for imported in graph.find_modules_directly_imported_by(module):
            target = ".".join(imported.split(".")[:2])
            if imported.startswith(f"{app}.") and target != source:
                edges[source].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one member (Tarjan's algorithm,
    iterative), each sorted, the list sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def describe(edges: dict[str, set[str]], component: list[str]) -> str:
    members = set(component)
    inside = [f"{a} -> {b}" for a in component for b in sorted(edges[a] & members)]
    return f"{', '.join(component)} (imports: {'; '.join(inside)})"


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*APPS, cache_dir=None)


@pytest.mark.parametrize("app", APPS)
def test_no_import_cycle_between_an_apps_packages(graph: grimp.ImportGraph, app: str) -> None:
    edges = package_graph(graph, app)
    found = cycles(edges)
    assert not found, f"import cycles between {app}'s packages: " + " | ".join(
        describe(edges, c) for c in found
    )


def test_the_cycle_finder_names_every_member_of_a_cycle() -> None:
    edges = {
        "app.a": {"app.b"},
        "app.b": {"app.c"},
        "app.c": {"app.a", "app.d"},
        "app.d": set(),
        "app.e": {"app.f"},
        "app.f": {"app.e"},
    }
    assert cycles(edges) == [["app.a", "app.b", "app.c"], ["app.e", "app.f"]]
    assert cycles({"app.a": {"app.b"}, "app.b": set()}) == []


def test_a_lazy_import_inside_a_function_is_an_edge(graph: grimp.ImportGraph) -> None:
    """A cycle cannot be hidden by importing inside a function: grimp reads those imports
    too (``benchmark.apps`` imports the item index inside ``post_migrate``'s handler)."""
    assert "benchmark.models" in package_graph(graph, "benchmark")["benchmark.apps"]
