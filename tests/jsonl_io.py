"""A project's items in and out as JSON Lines lines, for tests that check a round trip through
the database (import, then export, compared line by line)."""

from __future__ import annotations

from pathlib import Path

from benchmark.datasets import services
from benchmark.models import Project


def import_lines(project: Project, lines: list[str], tmp_path: Path) -> None:
    """Import ``lines`` as ``data/data.jsonl`` under ``tmp_path``."""
    path = tmp_path / "data" / "data.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    services.dataset_import(project=project, path=path)


def export_lines(project: Project, tmp_path: Path) -> list[str]:
    """The project exported as ``out/data.jsonl`` under ``tmp_path``, line by line."""
    out = tmp_path / "out" / "data.jsonl"
    services.dataset_export(project=project, out=out)
    return out.read_text().splitlines()
