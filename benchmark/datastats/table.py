"""The ``Table`` every statistics function returns, and its CSV and markdown renderings."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any

Cell = str | int | float | None


def format_cell(value: Cell) -> str:
    """Floats with two decimals (as the papers print them), ``None`` (nothing to average) as
    an empty cell, everything else as ``str``."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


@dataclass
class Table:
    """One statistics table. ``rows`` hold raw values (``None`` where there is nothing to
    average); ``definitions`` maps each column (or row label, for two-column tables of
    properties) to how it is computed."""

    name: str  # a file-name-safe slug, e.g. "atp_table2"
    title: str
    columns: list[str]
    rows: list[list[Cell]]
    definitions: dict[str, str] = field(default_factory=dict)

    def to_csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.columns)
        for row in self.rows:
            writer.writerow([format_cell(v) for v in row])
        return out.getvalue()

    def to_markdown(self) -> str:
        def line(cells: list[Any]) -> str:
            return "| " + " | ".join(_md_escape(c) for c in cells) + " |"

        lines = [f"### {self.title}", "", line(self.columns)]
        lines.append("| " + " | ".join("---" for _ in self.columns) + " |")
        lines.extend(line([format_cell(v) or "–" for v in row]) for row in self.rows)
        if self.definitions:
            lines += ["", "How each column is computed:", ""]
            lines += [f"- **{_md_escape(k)}**: {v}" for k, v in self.definitions.items()]
        return "\n".join(lines) + "\n"


def _md_escape(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def ratio(total: float, n: int) -> float | None:
    return total / n if n else None
