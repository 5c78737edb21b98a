"""Lay out a tool plan as a small graph: one box per step, an arrow per ``<node-K>.key``
reference. Pure: the template draws the SVG from these coordinates."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

REF = re.compile(r"<node-(\d+)>\.(\w+)")
BOX_W, BOX_H, GAP, TOP = 150, 44, 40, 40


@dataclass(frozen=True)
class Node:
    id: int
    name: str
    x: int
    y: int
    w: int = BOX_W
    h: int = BOX_H

    @property
    def cx(self) -> int:
        return self.x + self.w // 2


@dataclass(frozen=True)
class Edge:
    source: int
    target: int
    key: str
    path: str  # SVG path from the source box to the target box
    dangling: bool = False


def _refs(value: Any) -> list[tuple[int, str]]:
    if isinstance(value, str):
        return [(int(n), key) for n, key in REF.findall(value)]
    if isinstance(value, dict):
        return [r for v in value.values() for r in _refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    return []


def layout(steps: list[Any]) -> dict[str, Any]:
    """Boxes left to right in plan order; edges arc above the boxes."""
    nodes: list[Node] = []
    for n, step in enumerate(steps):
        step = step if isinstance(step, dict) else {}
        node_id = step.get("id", n)
        nodes.append(
            Node(
                id=node_id if isinstance(node_id, int) else n,
                name=str(step.get("name") or step.get("tool") or "?")[:40],
                x=10 + n * (BOX_W + GAP),
                y=TOP + 10,
            )
        )
    by_id = {node.id: node for node in nodes}
    edges: list[Edge] = []
    for n, step in enumerate(steps):
        target = nodes[n]
        args = step.get("args", {}) if isinstance(step, dict) else {}
        for source_id, key in dict.fromkeys(_refs(args)):
            source = by_id.get(source_id)
            if source is None or source.x >= target.x:
                edges.append(Edge(source_id, target.id, key, "", dangling=True))
                continue
            lift = 12 + 10 * min(4, (target.x - source.x) // (BOX_W + GAP))
            y = target.y
            path = (
                f"M{source.cx},{y} C{source.cx},{y - lift * 2} "
                f"{target.cx - 8},{y - lift * 2} {target.cx - 8},{y}"
            )
            edges.append(Edge(source_id, target.id, key, path))
    width = 20 + max(1, len(nodes)) * (BOX_W + GAP) - GAP
    return {"nodes": nodes, "edges": edges, "width": width, "height": TOP + BOX_H + 30}
