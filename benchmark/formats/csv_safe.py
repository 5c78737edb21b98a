"""CSV cells that a spreadsheet will not run as formulas (CSV injection). Pure Python: no Django.

Not a benchmark format: a helper for every CSV the app writes. OWASP's advice
(https://owasp.org/www-community/attacks/CSV_Injection): a cell that starts with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return is prefixed with a single quote, so Excel, LibreOffice
and Google Sheets show it as text. Writers also quote every cell (``csv.QUOTE_ALL``), so a
``;`` or a tab inside a cell cannot start a new cell in a spreadsheet that splits on it.

Choice for negative numbers: a cell that is nothing but a negative decimal number (``-3``,
``-12.5``, ``-1e5``) is left as it is. A spreadsheet reads it as a number, which is what it is,
and the strict full match leaves no room for a formula (``-1+1`` or ``-2+3+cmd|...`` do not match
and are prefixed). Only values that are already ``str`` are touched: numbers and None written
by the csv module cannot start a formula either."""

from __future__ import annotations

import re
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NEGATIVE_NUMBER = re.compile(r"-\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def csv_cell(value: Any) -> Any:
    """``value`` as a CSV cell that no spreadsheet runs as a formula."""
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    if _NEGATIVE_NUMBER.fullmatch(value):
        return value
    return "'" + value


def csv_row(row: dict[str, Any]) -> dict[str, Any]:
    """Every cell of a ``csv.DictWriter`` row through ``csv_cell``."""
    return {key: csv_cell(value) for key, value in row.items()}
