"""python manage.py check_plan [--toolset mms] [--metadata M --graph G] [--plan-format F] FILE

Prints a JSON list of findings (see ``benchmark.plans.verify``). FILE holds one plan (JSON,
Python literal or ``def solve()`` code) or rows (a JSON array such as m&m's ``tasks.json``, or
JSONL such as ``predictions.jsonl``); row findings carry the row's ``id``.

The toolset is read from the database (Toolset/Tool/ToolEdge rows of that name). When it is
not there, m&m's bundled ``benchmark/builtin/data/tool_metadata.json`` and ``tool_graph.json``
are used for ``mms``. ``--metadata`` and ``--graph`` name other files and take precedence.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from benchmark.plans.parse import PLAN_FORMATS
from benchmark.plans.verify import Toolset, load_toolset, verify_text

BUNDLED_DATA = Path(__file__).resolve().parents[2] / "builtin" / "data"


def toolset_from_db(name: str) -> Toolset | None:
    """The named toolset from the Tool and ToolEdge rows, or ``None`` when there is none."""
    from benchmark.models import Toolset as ToolsetRow

    try:
        row = ToolsetRow.objects.filter(name=name).first()
        if row is None:
            return None
        tools: dict[str, dict[str, list[str]]] = {}
        for tool in row.tools.all():
            params = tool.parameters if isinstance(tool.parameters, list) else []
            tools[tool.name] = {
                "inputs": [str(p["name"]) for p in params if isinstance(p, dict) and "name" in p],
                "outputs": [str(x) for x in tool.output_names or []],
                "input_types": [str(x) for x in tool.input_types or []],
                "output_types": [str(x) for x in tool.output_types or []],
            }
        edges = set(row.edges.values_list("source__name", "target__name"))
    except DatabaseError:
        return None
    if not tools:
        return None
    return Toolset(tools=tools, edges={(str(s), str(t)) for s, t in edges})


def command_toolset(name: str, metadata: Path | None, graph: Path | None) -> Toolset:
    """The toolset a command works with: explicit files, else the database, else (m&m's) the
    bundled files."""
    if (metadata is None) != (graph is None):
        raise CommandError("give both --metadata and --graph, or neither")
    try:
        if metadata is not None and graph is not None:
            return load_toolset(metadata, graph)
        found = toolset_from_db(name)
        if found is not None:
            return found
        bundled_meta = BUNDLED_DATA / "tool_metadata.json"
        bundled_graph = BUNDLED_DATA / "tool_graph.json"
        if name == "mms" and bundled_meta.exists() and bundled_graph.exists():
            return load_toolset(bundled_meta, bundled_graph)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CommandError(f"cannot read the toolset: {exc}") from None
    raise CommandError(
        f"no toolset named {name!r} in the database; run seed_builtin, "
        "or give --metadata and --graph"
    )


def add_toolset_arguments(parser: CommandParser) -> None:
    parser.add_argument("--toolset", default="mms", help="toolset name (default: mms)")
    parser.add_argument("--metadata", type=Path, help="m&m's-style tool_metadata.json")
    parser.add_argument("--graph", type=Path, help="m&m's-style tool_graph.json")
    parser.add_argument("--plan-format", choices=PLAN_FORMATS, default="auto")


class Command(BaseCommand):
    help = "Check plans against a toolset's tools, arguments and graph; prints JSON findings."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, help="a plan, a code file, or rows (JSON/JSONL)")
        add_toolset_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        toolset = command_toolset(options["toolset"], options["metadata"], options["graph"])
        path: Path = options["file"]
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc}") from None
        findings = verify_text(
            text, toolset, plan_format=options["plan_format"], jsonl=path.suffix == ".jsonl"
        )
        self.stdout.write(json.dumps(findings, indent=2, ensure_ascii=False))
