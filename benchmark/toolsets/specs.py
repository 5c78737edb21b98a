"""Plain structures built from a Toolset's rows, for the pure checkers: the plan verifier
(benchmark.plans) and the tool-tag validator (benchmark.tags)."""

from __future__ import annotations

from typing import Any

from benchmark.models import Toolset


def plan_toolset(toolset: Toolset) -> dict[str, Any]:
    """``{"tools": {name: {inputs, outputs, input_types, output_types}}, "edges": [...]}``."""
    tools = {}
    names = {}
    for tool in toolset.tools.all():
        names[tool.pk] = tool.name
        tools[tool.name] = {
            "inputs": [p["name"] for p in tool.parameters if isinstance(p, dict) and "name" in p],
            "outputs": list(tool.output_names or []),
            "input_types": list(tool.input_types or []),
            "output_types": list(tool.output_types or []),
        }
    edges = [
        (names[s], names[t])
        for s, t in toolset.edges.values_list("source_id", "target_id")
        if s in names and t in names
    ]
    return {"tools": tools, "edges": edges}


def tag_toolset(toolset: Toolset) -> dict[str, dict[str, Any]]:
    """``{tool name lower-cased: {"name", "params": [{"name", "type", "required"}]}}``."""
    return {
        tool.name.lower(): {
            "name": tool.name,
            "params": [p for p in tool.parameters if isinstance(p, dict) and "name" in p],
        }
        for tool in toolset.tools.all()
    }
