"""Agentic-MME Table 2: tasks per level, checkpoints and tools, key properties."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .table import Table, ratio

LEVEL_NAMES = {1: "Level 1 (Easy)", 2: "Level 2 (Mid)", 3: "Level 3 (Hard)"}
SEARCH_AXIS = "S"
#: Keys of the source record's ``meta`` (or the record itself) that may name a sub-category.
SUB_CATEGORY_KEYS = ("sub_category", "subcategory", "sub_domain", "subdomain", "category")


def reference_trajectory(record: dict[str, Any]) -> dict[str, Any] | None:
    """The trajectory keyed ``reference``, else the record's first trajectory."""
    trajectories = record.get("trajectories") or []
    for trajectory in trajectories:
        if trajectory.get("key") == "reference":
            return trajectory
    return trajectories[0] if trajectories else None


def _checkpoints(trajectory: dict[str, Any] | None) -> list[dict[str, Any]]:
    if trajectory is None:
        return []
    return [c for c in trajectory.get("checkpoints") or [] if isinstance(c, dict)]


def tool_calls(trajectory: dict[str, Any] | None) -> int:
    """Tool calls of a reference trajectory: its steps when it has any, else the tools its
    checkpoints name."""
    if trajectory is None:
        return 0
    steps = trajectory.get("steps") or []
    if steps:
        return len(steps)
    return sum(len(c.get("tools") or []) for c in _checkpoints(trajectory))


def sub_category(record: dict[str, Any]) -> str:
    raw = record.get("raw")
    if not isinstance(raw, dict):
        return ""
    for place in (raw.get("meta"), raw):
        if isinstance(place, dict):
            for key in SUB_CATEGORY_KEYS:
                if place.get(key):
                    return str(place[key])
    return ""


def agentic_mme_tables(records: list[dict[str, Any]]) -> list[Table]:
    per_level: dict[Any, dict[str, int]] = defaultdict(lambda: {"tasks": 0, "ckpts": 0, "tools": 0})
    images = tools = searching = 0
    words: list[int] = []
    domains: set[str] = set()
    subs: set[str] = set()
    for record in records:
        trajectory = reference_trajectory(record)
        checkpoints = _checkpoints(trajectory)
        n_tools = tool_calls(trajectory)
        level = per_level[record.get("level")]
        level["tasks"] += 1
        level["ckpts"] += len(checkpoints)
        level["tools"] += n_tools
        tools += n_tools
        images += len(record.get("image_refs") or [])
        searching += any(c.get("axis") == SEARCH_AXIS for c in checkpoints)
        words += [len(str(c.get("description") or "").split()) for c in checkpoints]
        if record.get("domain"):
            domains.add(str(record["domain"]))
        if sub := sub_category(record):
            subs.add(sub)
    total = len(records)
    levels = sorted((k for k in per_level if k is not None), key=int)
    if None in per_level:
        levels.append(None)
    level_rows: list[list[Any]] = [
        [
            LEVEL_NAMES.get(k, f"Level {k}") if k is not None else "No level",
            per_level[k]["tasks"],
            ratio(100.0 * per_level[k]["tasks"], total),
            ratio(per_level[k]["ckpts"], per_level[k]["tasks"]),
            ratio(per_level[k]["tools"], per_level[k]["tasks"]),
        ]
        for k in levels
    ]
    levels_table = Table(
        name="agentic_mme_table2_levels",
        title="Agentic-MME Table 2: tasks per level",
        columns=["Task Difficulty", "#Tasks", "Share (%)", "Ckpts / Task", "Tools / Task"],
        rows=level_rows,
        definitions={
            "Task Difficulty": "the item's level (1-3); items without one form a 'No level' row.",
            "#Tasks": "items at the level (not in the paper's table, which gives shares only).",
            "Share (%)": "the level's items as a percentage of all items given.",
            "Ckpts / Task": "checkpoints of the reference trajectory (the trajectory keyed "
            "'reference', else the first), averaged over the level's items.",
            "Tools / Task": "tool calls of the reference trajectory (its steps when it has any, "
            "else the tools its checkpoints name), averaged over the level's items.",
        },
    )
    sub_text = str(len(subs)) if subs else "not recorded"
    properties = Table(
        name="agentic_mme_table2_properties",
        title="Agentic-MME Table 2: key properties",
        columns=["Key Property", "Value"],
        rows=[
            ["Total Images / Tools", f"{images} / {tools}"],
            ["Domains / Sub", f"{len(domains)} / {sub_text}"],
            ["Per Descri. Len (words)", ratio(sum(words), len(words))],
            ["External Search (%)", ratio(100.0 * searching, total)],
        ],
        definitions={
            "Total Images / Tools": "image references of the items (input images), and tool "
            "calls of their reference trajectories, summed.",
            "Domains / Sub": "distinct domains (the item's domain) / distinct sub-categories "
            "(the source record's meta sub_category, subcategory, sub_domain or category); "
            "'not recorded' when no record names one.",
            "Per Descri. Len (words)": "words (whitespace-separated) of each checkpoint "
            "description, averaged over all checkpoints; the paper counts tokens of an unnamed "
            "tokenizer, so the figures are not directly comparable.",
            "External Search (%)": "items whose reference trajectory has a search checkpoint "
            "(axis S), as a percentage of all items.",
            "Not computed": "the paper's Small Cues, Avg. Cue Area and Avg. Resolution need "
            "image sizes and cue annotations the records do not carry.",
        },
    )
    return [levels_table, properties]
