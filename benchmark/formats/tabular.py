"""Generic JSON Lines and CSV items with a column mapping, for teams with their own
spreadsheets. Pure Python: no Django.

Like Label Studio JSON this is an interchange format, not a benchmark's own: any project can
take items from such a file and give its items back in one. The mapping (``col=field,...``,
as :func:`label_studio.parse_mapping` reads it; empty: every item field under its own name)
says which column feeds which item field. The work beyond the item is in the columns
``responses``, ``plans`` and ``trajectories``: JSON lists as in Label Studio's task data
(see :mod:`label_studio`). In CSV, list and object fields (documents, images, constraints,
accepted_variants, rubric, responses, plans, trajectories) are JSON text in their cell; cells that would start
a spreadsheet formula are written with a leading ``'`` (``csv_safe``), which reading removes.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from .. import limits
from ._jsonio import Where, dataset_root, dumps, existing, iter_jsonl, read_text, write_file
from .base import FormatError, ItemRecord
from .csv_safe import FORMULA_STARTS, csv_row
from .label_studio import (
    FIELDS,
    convert_value,
    field_value,
    mapped_record,
    parse_mapping,
    with_attachments,
)

NAMES = ("jsonl", "csv")
_STRUCTURED = {"list", "dict", "images", "responses", "plans", "trajectories"}


def _uncell(value: str) -> str:
    """A CSV cell as written before ``csv_cell`` guarded it."""
    if value.startswith("'") and value[1:].startswith(FORMULA_STARTS):
        return value[1:]
    return value


def _csv_rows(text: str, name: str) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """The rows of a CSV file as (index, JSON text, cells). A cell may be as long as
    ``limits.CSV_CELL``; a longer one, or text the csv module cannot read, is a FormatError
    naming the file, the row (its line) and the column."""
    # The csv module's own cap (131,072 characters by default, process-wide) is raised to the
    # length of the text, which no cell can pass: the limit is checked below instead, per
    # cell, where the column is known.
    if csv.field_size_limit() <= len(text):
        csv.field_size_limit(len(text) + 1)
    reader = csv.reader(io.StringIO(text, newline=""))
    index = -1
    try:
        header = next(reader, None)
        if not header:
            raise FormatError("no header row", file=name)
        for cells in reader:
            if not cells:  # a blank line, skipped as csv.DictReader skips it
                continue
            index += 1
            row = {}
            for column, value in zip(header, cells, strict=False):
                if len(value) > limits.CSV_CELL.limit:
                    raise FormatError(
                        f"cell is longer than {limits.CSV_CELL.limit:,} characters "
                        f"({len(value):,})",
                        file=name,
                        record=f"row {index + 1} (line {reader.line_num})",
                        field=column,
                    )
                row[column] = _uncell(value)
            for column in header[len(cells) :]:
                row[column] = ""
            yield index, orjson.dumps(row).decode(), row
    except csv.Error as exc:
        raise FormatError(
            f"not readable as CSV: {exc}", file=name, record=f"line {reader.line_num}"
        ) from None


class Table:
    """A format object for ``dataset_import`` / ``dataset_export`` (``fmt=``): ``kind`` is
    "jsonl" or "csv"."""

    #: Not the project's own format: the import stores no raw record (see dataset_import).
    interchange = True

    def __init__(self, kind: str, mapping: Mapping[str, str] | str | None = None) -> None:
        if kind not in NAMES:
            raise FormatError(f"unknown table format {kind!r}; choose one of {', '.join(NAMES)}")
        self.kind = kind
        self.mapping = parse_mapping(mapping)

    @staticmethod
    def dataset_root(path: str | Path) -> Path:
        return dataset_root(path)

    # ------------------------------------------------------------------ reading

    def _rows(self, path: Path) -> Iterator[tuple[int, str, dict[str, Any]]]:
        name = path.name
        if self.kind == "jsonl":
            for index, (lineno, raw, value) in enumerate(iter_jsonl(path, name)):
                if not isinstance(value, dict):
                    raise FormatError("expected a JSON object", file=name, record=f"line {lineno}")
                yield index, raw, value
            return
        yield from _csv_rows(read_text(path, name), name)

    def _values(self, row: dict[str, Any], where: Where) -> dict[str, Any]:
        """The item fields of one row, by the mapping (absent columns are left out)."""
        values: dict[str, Any] = {}
        for key, target in self.mapping.items():
            if key not in row:
                continue
            value = row[key]
            kind = FIELDS[target]
            if self.kind == "csv" and kind in _STRUCTURED:
                if value == "":
                    continue
                try:
                    value = orjson.loads(value)
                except orjson.JSONDecodeError:
                    raise where.error("expected JSON text in this column", key) from None
            values[target] = convert_value(kind, value, where, key)
        return values

    def read(self, path: str | Path) -> Iterator[ItemRecord]:
        p = existing(path)
        if p.is_dir():
            raise FormatError(f"expected a {self.kind} file, got a folder", file=str(p))
        name = p.name
        for index, raw, row in self._rows(p):
            where = Where(name, index + 1)
            values = self._values(row, where)
            rec = mapped_record(
                self.mapping,
                values,
                row,
                where,
                default_id=str(index + 1),
                raw=raw,
                position=index,
                provenance=f"imported:{self.kind}",
            )
            yield rec

    # ------------------------------------------------------------------ writing

    def write(
        self, out: str | Path, items: Iterable[ItemRecord], attachments: Iterable[Any] = ()
    ) -> list[Path]:
        """Items as one row each at ``out`` (a file, or ``items.<kind>`` in a folder), with
        their answers, plans and trajectories (also those given apart, in ``attachments``)."""
        items = with_attachments(items, attachments)
        out = Path(out)
        path = out if out.suffix else out / f"items.{self.kind}"
        where = Where(path.name)
        if self.kind == "jsonl":
            lines = []
            for rec in items:
                where.record = rec.external_id
                row = {key: field_value(rec, target) for key, target in self.mapping.items()}
                lines.append(dumps(row, where) + b"\n")
            return [write_file(path, b"".join(lines))]
        buf = io.StringIO(newline="")
        writer = csv.DictWriter(buf, fieldnames=list(self.mapping), quoting=csv.QUOTE_ALL)
        writer.writeheader()
        for rec in items:
            where.record = rec.external_id
            row = {}
            for key, target in self.mapping.items():
                value = field_value(rec, target)
                if FIELDS[target] in _STRUCTURED:
                    value = dumps(value, where).decode()
                row[key] = "" if value is None else value
            writer.writerow(csv_row(row))
        return [write_file(path, buf.getvalue().encode())]
