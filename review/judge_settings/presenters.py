"""How the settings page shows a template version's change: a line diff (pure Python)."""

from __future__ import annotations

import difflib


def text_diff(old: str, new: str, *, context: int = 2) -> list[tuple[str, str]]:
    """``[(kind, line)]`` with kind ``"add"``, ``"del"``, ``"ctx"`` or ``"meta"`` (a ``@@``
    hunk header), from a unified diff of the two texts; empty when they are the same."""
    lines: list[tuple[str, str]] = []
    diff = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=context))
    for line in diff[2:]:  # after the "---" and "+++" file headers
        if line.startswith("@@"):
            lines.append(("meta", line))
        elif line.startswith("+"):
            lines.append(("add", line[1:]))
        elif line.startswith("-"):
            lines.append(("del", line[1:]))
        else:
            lines.append(("ctx", line[1:]))
    return lines
