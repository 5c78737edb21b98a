"""The registry of benchmark kinds: one object per benchmark (``benchmark/kinds/<kind>.py``).

    KINDS                 every registered kind, in the order pages list them
    kind_for(project)     the project's kind (also ``project.benchmark``)
    kind_named(name)      the kind whose name (a project's ``data_format``) is ``name``
    kind_choices()        (name, label) pairs: ``Project.data_format``'s choices

A fifth benchmark is a module here and one line in ``BUILT_IN``
(docs/howto/new-benchmark-kind.md). ``register`` adds one at run time (tests).
"""

from __future__ import annotations

from typing import Any

from benchmark.kinds import agentic_mme, atp, llmi, mms
from benchmark.kinds.base import BenchmarkKind, DefaultTask, Demo, Offers

__all__ = [
    "BUILT_IN",
    "KINDS",
    "BenchmarkKind",
    "DefaultTask",
    "Demo",
    "Offers",
    "kind_choices",
    "kind_for",
    "kind_named",
    "register",
    "unregister",
]

BUILT_IN: tuple[BenchmarkKind, ...] = (atp.KIND, llmi.KIND, agentic_mme.KIND, mms.KIND)

#: The registered kinds (the built-in ones, then any registered at run time).
KINDS: list[BenchmarkKind] = list(BUILT_IN)


class UnknownKind(LookupError):
    """No kind has this name."""


def kind_named(name: str) -> BenchmarkKind:
    for kind in KINDS:
        if kind.name == name:
            return kind
    raise UnknownKind(
        f"data_format: no benchmark kind {name!r}; choose one of {', '.join(k.name for k in KINDS)}"
    )


def kind_for(project: Any) -> BenchmarkKind:
    """The kind of ``project`` (anything with a ``data_format``)."""
    return kind_named(project.data_format)


def kind_choices() -> list[tuple[str, str]]:
    return [(kind.name, kind.label) for kind in KINDS]


def register(kind: BenchmarkKind) -> None:
    """Add ``kind`` (a name not yet registered)."""
    if any(k.name == kind.name for k in KINDS):
        raise ValueError(f"a benchmark kind {kind.name!r} is registered already")
    KINDS.append(kind)


def unregister(kind: BenchmarkKind) -> None:
    KINDS.remove(kind)
