"""Dataset statistics tables as each seed paper publishes them. Pure Python: no Django.

``tables_for(data_format, records)`` takes item dicts (the Item fields: query, category,
intent, documents, image_refs, rubric, constraints, level, domain, match_type, status,
external_id, plus responses, plans, trajectories, and optionally ``subset`` and ``raw``) and
returns the format's tables:

* ``atp``: ATP-Bench Tables 2 and 9 (``atp_table2``, ``atp_table9``; their figures as
  dicts: ``atp_summary``, which the statistics page shows);
* ``mms``: m&m's Table 2 (``mms_table2``);
* ``agentic-mme``: Agentic-MME Table 2 (``agentic_mme_table2_levels``,
  ``agentic_mme_table2_properties``);
* ``llmi``: LLMI-Bench counts (``llmi_counts``).

Each ``Table`` renders as CSV (``to_csv``) and markdown with its definitions (``to_markdown``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .agentic_mme import agentic_mme_tables
from .atp import atp_summary, atp_tables
from .llmi import llmi_tables
from .mms import mms_tables
from .records import item_record_dict
from .table import Table

__all__ = ["FORMATS", "Table", "atp_summary", "item_record_dict", "tables_for"]

FORMATS = ("atp", "mms", "agentic-mme", "llmi")


def tables_for(
    data_format: str,
    records: list[dict[str, Any]],
    *,
    tool_kinds: Mapping[str, str] | None = None,
) -> list[Table]:
    """The statistics tables of ``data_format`` over ``records``. ``tool_kinds`` (m&m's only)
    maps a tool name to its toolset category, for tools whose plan steps carry none. An
    unknown format raises ValueError naming it."""
    if data_format == "atp":
        return atp_tables(records)
    if data_format == "mms":
        return mms_tables(records, tool_kinds=tool_kinds)
    if data_format == "agentic-mme":
        return agentic_mme_tables(records)
    if data_format == "llmi":
        return llmi_tables(records)
    raise ValueError(
        f"data_format: unknown format {data_format!r}; choose one of {', '.join(FORMATS)}"
    )
