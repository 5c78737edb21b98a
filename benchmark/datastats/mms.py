"""m&m's Table 2: examples, tools and tool graphs."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from .table import Table, ratio

VERIFIED = "verified"


def gold_plan(record: dict[str, Any]) -> dict[str, Any] | None:
    """The record's gold plan: its first plan that is not an alternative."""
    for plan in record.get("plans") or []:
        if not plan.get("is_alternative"):
            return plan
    return None


def tool_graph(plan: dict[str, Any] | None) -> tuple[str, ...]:
    """The sequence of tool names of a plan's steps."""
    if plan is None:
        return ()
    return tuple(str(s.get("name") or "") for s in plan.get("steps") or [] if isinstance(s, dict))


def _kind(step: dict[str, Any], tool_kinds: Mapping[str, str] | None) -> str | None:
    kind = step.get("category") or step.get("kind")
    if not kind and tool_kinds:
        kind = tool_kinds.get(str(step.get("name") or ""))
    return str(kind) if kind else None


def mms_tables(
    records: list[dict[str, Any]], *, tool_kinds: Mapping[str, str] | None = None
) -> list[Table]:
    verified = [r for r in records if r.get("status") == VERIFIED]
    balanced = [r for r in verified if r.get("subset")]
    if balanced:
        basis, label = balanced, "human verified & balanced"
    elif verified:
        basis, label = verified, "human verified (none is in the balanced subset)"
    else:
        basis, label = records, "all (none is verified)"
    graphs: dict[tuple[str, ...], set[str]] = defaultdict(set)
    sizes: Counter[int] = Counter()
    tools: set[str] = set()
    kinds: dict[str, set[str]] = defaultdict(set)
    for record in basis:
        plan = gold_plan(record)
        graph = tool_graph(plan)
        if not graph:
            continue
        sizes[len(graph)] += 1
        graphs[graph].add(str(record.get("query") or ""))
        for step in (plan or {}).get("steps") or []:
            if not isinstance(step, dict):
                continue
            name = str(step.get("name") or "")
            tools.add(name)
            kinds[_kind(step, tool_kinds) or ""].add(name)
    kind_names = sorted((k for k in kinds if k), key=str.lower)
    kind_rows = [[f"- {k}", len(kinds[k])] for k in kind_names]
    if "" in kinds:
        kind_rows.append(["- no category known", len(kinds[""])])
    more = sum(n for size, n in sizes.items() if size > 3)
    sizes_text = " / ".join(str(sizes[n]) for n in (1, 2, 3)) + (
        f" (+{more} longer)" if more else ""
    )
    per_graph = ratio(sum(len(q) for q in graphs.values()), len(graphs))
    rows: list[list[Any]] = [
        ["Raw examples", len(records)],
        ["Human verified examples", len(verified)],
        ["Human verified & balanced examples", len(balanced)],
        ["Counted over", f"{label} ({len(basis)})"],
        ["- 1 / 2 / 3-tool examples", sizes_text],
        ["Tools", len(tools)],
        *kind_rows,
        ["Tool graphs", len(graphs)],
        ["Avg. # of unique queries per tool graph", per_graph],
    ]
    definitions = {
        "Raw examples": "every item given, whatever its status.",
        "Human verified examples": "items with status verified (the paper keeps the query-plan "
        "pairs all three annotators rated 1).",
        "Human verified & balanced examples": "verified items in the tool-balanced subset.",
        "Counted over": "the items the rows below count: the verified & balanced ones (the "
        "paper's final set); when there are none, the verified ones; when none is verified, all.",
        "- 1 / 2 / 3-tool examples": "items whose gold plan (the first plan that is not an "
        "alternative) has 1, 2 or 3 steps; longer plans are counted apart.",
        "Tools": "distinct tool names in those gold plans (the paper counts its whole toolset, "
        "33 tools; the data can only give the tools its plans use).",
        "- <kind>": "distinct tools per kind, the kind being the toolset category of each "
        "step (the step's own 'category' or 'kind', else the category the toolset gives its "
        "tool name; the paper's ML model / image processing / API); tools with no category "
        "known are counted in '- no category known' rather than guessed.",
        "Tool graphs": "distinct tool graphs, a graph being the sequence of tool names of a gold "
        "plan.",
        "Avg. # of unique queries per tool graph": "distinct query texts per tool graph, "
        "averaged over the tool graphs; empty when there is none.",
    }
    return [
        Table(
            name="mms_table2",
            title="m&m's Table 2: statistics of the dataset",
            columns=["Item", "Number"],
            rows=rows,
            definitions=definitions,
        )
    ]
