"""Rule checks for m&m's plans against a toolset (paper §4, "plan verification feedback").
No Django here.

A :class:`Toolset` is deliberately plain: ``tools`` maps each tool name to
``{"inputs": [arg names], "outputs": [arg names], "input_types": [...], "output_types": [...]}``
and ``edges`` is a set of ``(source, target)`` tool names. :func:`load_toolset` builds one from
m&m's ``tool_metadata.json`` and ``tool_graph.json``; the Django side builds the same thing from
its Tool and ToolEdge rows.

:func:`verify_plan` returns :class:`~benchmark.plans.parse.Finding` records with these codes:

``parse_error``
    the plan (or one step) could not be read;
``unknown_tool``
    the step names no tool of the toolset (names match case-insensitively, with underscores
    and spaces equivalent);
``missing_arg`` / ``unknown_arg``
    an input of the tool is not given / an argument is not an input of the tool;
``dangling_reference``
    a ``<node-K>.key`` reference that names no earlier step, no output key, or a key the
    referenced tool does not output;
``invalid_edge``
    a step uses an earlier step's output although the tool graph has no edge from the earlier
    step's tool to this one (data-flow edges, as m&m's verifier checks them; steps that merely
    follow each other need no edge).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.plans.parse import Finding, ParsedPlan, Step, normalize_tool_name, parse_plan

FINDING_CODES: tuple[str, ...] = (
    "parse_error",
    "unknown_tool",
    "missing_arg",
    "unknown_arg",
    "dangling_reference",
    "invalid_edge",
)

#: What each code means in a person's words, for the screens (the code stays in the data).
FINDING_LABELS: dict[str, str] = {
    "parse_error": "Cannot be read",
    "unknown_tool": "Unknown tool",
    "missing_arg": "Missing argument",
    "unknown_arg": "Unknown argument",
    "dangling_reference": "Reference to no earlier output",
    "invalid_edge": "Tools that do not connect",
}

# Any <node-...> mention, with its key when one follows. Broader than m&m's own pattern so that
# malformed references ("<node-x>.text", "<node-0>") are reported rather than ignored.
_REFERENCE = re.compile(r"<node-([^<>\s]*)>(?:\.([A-Za-z_]\w*))?")


@dataclass
class Toolset:
    """Tools by name and the tool graph's edges."""

    tools: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    edges: set[tuple[str, str]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._by_key = {normalize_tool_name(name): name for name in self.tools}

    @property
    def names(self) -> list[str]:
        return list(self.tools)

    def resolve(self, name: Any) -> str | None:
        """The toolset's own spelling of a tool name, or ``None``."""
        if not isinstance(name, str):
            return None
        return self._by_key.get(normalize_tool_name(name))

    def inputs(self, name: str) -> list[str]:
        return list(self.tools[name].get("inputs", []))

    def outputs(self, name: str) -> list[str]:
        return list(self.tools[name].get("outputs", []))

    def to_dict(self) -> dict[str, Any]:
        return {"tools": self.tools, "edges": sorted(self.edges)}


def toolset_from_mapping(data: Toolset | Mapping[str, Any]) -> Toolset:
    """A :class:`Toolset` from one, or from a plain ``{"tools": ..., "edges": ...}`` mapping."""
    if isinstance(data, Toolset):
        return data
    tools = {
        str(name): {
            "inputs": [str(a) for a in spec.get("inputs", [])],
            "outputs": [str(a) for a in spec.get("outputs", [])],
            "input_types": [str(a) for a in spec.get("input_types", [])],
            "output_types": [str(a) for a in spec.get("output_types", [])],
        }
        for name, spec in dict(data.get("tools", {})).items()
    }
    edges = {(str(s), str(t)) for s, t in data.get("edges", [])}
    return Toolset(tools=tools, edges=edges)


def _read_json(value: Any) -> Any:
    if isinstance(value, str | Path):
        return json.loads(Path(value).read_text(encoding="utf-8"))
    return value


def load_toolset(metadata: Any, graph: Any) -> Toolset:
    """Build a toolset from m&m's tool metadata and tool graph.

    ``metadata``: a list of ``{name, input: {arg_name, modality}, output: {...}}`` (as in
    ``tool_metadata.json``), the same keyed by name (as ``TOOL_METADATA`` in m&m's
    ``constants.py``), or a path to such JSON. ``graph``: ``{"edges": [[source, target], ...]}``
    (``tool_graph.json``), a bare list of edges, or a path to such JSON.
    """
    metadata = _read_json(metadata)
    graph = _read_json(graph)
    if isinstance(metadata, Mapping):
        metadata = [{"name": name, **dict(meta)} for name, meta in metadata.items()]
    tools: dict[str, dict[str, list[str]]] = {}
    for meta in metadata:
        inp = meta.get("input", {}) or {}
        out = meta.get("output", {}) or {}
        tools[meta["name"]] = {
            "inputs": list(inp.get("arg_name", [])),
            "outputs": list(out.get("arg_name", [])),
            "input_types": list(inp.get("modality", [])),
            "output_types": list(out.get("modality", [])),
        }
    edge_list = graph.get("edges", []) if isinstance(graph, Mapping) else graph
    edges = {(str(source), str(target)) for source, target in edge_list}
    return Toolset(tools=tools, edges=edges)


# --------------------------------------------------------------------------- verification


def _strings(value: Any) -> Iterator[str]:
    """Every string inside an argument value (lists and dicts are searched too)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _position(step: Step, arg: str | None = None) -> tuple[int | None, int | None]:
    if arg is not None and arg in step.arg_positions:
        return step.arg_positions[arg]
    return step.line, step.column


def _words(names: Iterable[str]) -> str:
    """Names for a message: ``text, image`` (not a Python list ``['text', 'image']``), "none" for no names."""
    return ", ".join(names) or "none"


def _check_step(
    step: Step, toolset: Toolset, earlier: Mapping[int, Step], later: Iterable[int]
) -> list[Finding]:
    findings: list[Finding] = []
    line, col = _position(step)
    # steps are named on screen by their 1-based position (the editor's "step 1"); the
    # ``<node-K>`` ids a plan refers to keep their own numbers
    label = f"step {step.index + 1}"
    tool = toolset.resolve(step.name)
    if tool is None:
        findings.append(
            Finding(
                "unknown_tool",
                step.index,
                f"{label}: {step.name!r} is not a tool of this toolset",
                line,
                col,
            )
        )
    else:
        inputs = toolset.inputs(tool)
        for arg in inputs:
            if arg not in step.args:
                findings.append(
                    Finding(
                        "missing_arg",
                        step.index,
                        f"{label}: {tool} needs the argument {arg!r} "
                        f"(its inputs are {_words(inputs)})",
                        line,
                        col,
                    )
                )
        for arg in step.args:
            if arg not in inputs:
                a_line, a_col = _position(step, arg)
                findings.append(
                    Finding(
                        "unknown_arg",
                        step.index,
                        f"{label}: {arg!r} is not an argument of {tool} "
                        f"(its inputs are {_words(inputs)})",
                        a_line,
                        a_col,
                    )
                )

    later_ids = set(later)
    sources: dict[int, None] = {}  # referenced earlier step ids, in order of first mention
    for arg, value in step.args.items():
        a_line, a_col = _position(step, arg)
        for text in _strings(value):
            for match in _REFERENCE.finditer(text):
                ref, raw_id, key = match.group(0), match.group(1), match.group(2)
                where = f"{label}, argument {arg!r}: {ref}"
                ref_id = int(raw_id) if raw_id.isdecimal() else None
                if ref_id is None:
                    problem = f"{where} does not name a step by its number"
                elif ref_id == step.id:
                    problem = f"{where} refers to the step itself"
                elif ref_id in later_ids:
                    problem = f"{where} refers to a later step; only earlier outputs exist"
                elif ref_id not in earlier:
                    problem = f"{where} refers to node {ref_id}, which does not exist"
                else:
                    problem = None
                if problem is None:
                    assert ref_id is not None
                    source = earlier[ref_id]
                    source_tool = toolset.resolve(source.name)
                    outputs = toolset.outputs(source_tool) if source_tool else None
                    if key is None:
                        problem = f"{where} names no output; write <node-{ref_id}>.key" + (
                            f" with a key among {_words(outputs)}" if outputs else ""
                        )
                    elif outputs is not None and key not in outputs:
                        problem = (
                            f"{where}: {source_tool} has no output {key!r} "
                            f"(its outputs are {_words(outputs)})"
                        )
                    sources.setdefault(ref_id, None)
                if problem is not None:
                    findings.append(
                        Finding("dangling_reference", step.index, problem, a_line, a_col)
                    )

    if tool is not None:
        for source_id in sources:
            source_tool = toolset.resolve(earlier[source_id].name)
            if source_tool is not None and (source_tool, tool) not in toolset.edges:
                findings.append(
                    Finding(
                        "invalid_edge",
                        step.index,
                        f"{label}: {tool} cannot take the output of step "
                        f"{earlier[source_id].index + 1} "
                        f"({source_tool}); the tool graph has no edge {source_tool} -> {tool}",
                        line,
                        col,
                    )
                )
    return findings


def verify_parsed(parsed: ParsedPlan, toolset: Toolset | Mapping[str, Any]) -> list[Finding]:
    """Check an already parsed plan. Its parse findings come first."""
    tools = toolset_from_mapping(toolset)
    findings = list(parsed.findings)
    earlier: dict[int, Step] = {}
    all_ids = [step.id for step in parsed.steps]
    for position, step in enumerate(parsed.steps):
        later = all_ids[position + 1 :]
        findings.extend(_check_step(step, tools, earlier, later))
        earlier[step.id] = step
    return findings


def verify_plan(
    plan: Any, toolset: Toolset | Mapping[str, Any], *, plan_format: str = "auto"
) -> list[Finding]:
    """Parse (see :func:`~benchmark.plans.parse.parse_plan`) and check a plan; an empty list
    means it passes. Never raises: anything unexpected becomes a ``parse_error`` finding."""
    try:
        tools = toolset_from_mapping(toolset)
        parsed = parse_plan(plan, plan_format=plan_format, tool_names=tools.names)
        return verify_parsed(parsed, tools)
    except Exception as exc:  # a last resort: verification must never raise
        return [Finding("parse_error", None, f"the plan could not be checked ({exc!r})")]


# --------------------------------------------------------------------------- files

#: Row fields that hold a plan, in the order they are looked for (``code_str`` first in code
#: form). Rows are m&m's dataset rows or ``{id, prediction}`` prediction lines.
ROW_PLAN_FIELDS: tuple[str, ...] = ("prediction", "plan_str", "plan", "code_str")


def _is_row(value: Any) -> bool:
    return isinstance(value, Mapping) and "id" in value and any(f in value for f in ROW_PLAN_FIELDS)


def _row_plan(row: Mapping[str, Any], plan_format: str) -> Any:
    if plan_format == "code" and row.get("code_str") is not None:
        return row["code_str"]
    for name in ROW_PLAN_FIELDS:
        if row.get(name) is not None:
            return row[name]
    return None


def _row_findings(
    rows: Iterable[tuple[Any, Any]], toolset: Toolset, plan_format: str
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for row_id, plan in rows:
        for finding in verify_plan(plan, toolset, plan_format=plan_format):
            out.append({"id": row_id, **finding.to_dict()})
    return out


def verify_text(
    text: str,
    toolset: Toolset | Mapping[str, Any],
    *,
    plan_format: str = "auto",
    jsonl: bool = False,
) -> list[dict[str, Any]]:
    """Check the content of a plan file; returns finding dicts.

    The text may hold one plan (JSON, Python literal or code) or rows: a JSON array of rows,
    or JSONL (``jsonl=True``, or several lines that are each a JSON object). A row is a
    mapping with ``id`` and one of :data:`ROW_PLAN_FIELDS`; its findings carry ``"id"``. A
    JSONL line that is no JSON gives a ``parse_error`` with ``id`` ``None`` and its line.
    """
    tools = toolset_from_mapping(toolset)
    try:
        whole: Any = json.loads(text)
        decoded = True
    except (ValueError, RecursionError):
        whole, decoded = None, False

    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not decoded and (jsonl or len(lines) > 1):
        parsed_lines: list[tuple[int, Any]] = []
        for number, line in lines:
            try:
                parsed_lines.append((number, json.loads(line)))
            except (ValueError, RecursionError):
                parsed_lines.append((number, None))
        if jsonl or all(isinstance(value, Mapping) for _, value in parsed_lines):
            out: list[dict[str, Any]] = []
            for number, value in parsed_lines:
                if _is_row(value):
                    out.extend(
                        _row_findings(
                            [(value["id"], _row_plan(value, plan_format))], tools, plan_format
                        )
                    )
                else:
                    message = (
                        "the line is not JSON"
                        if value is None
                        else "the line is not a row with an id and a plan"
                    )
                    out.append(
                        {"id": None, **Finding("parse_error", None, message, number, 1).to_dict()}
                    )
            return out

    if decoded and isinstance(whole, list) and whole and all(_is_row(r) for r in whole):
        return _row_findings(
            [(row["id"], _row_plan(row, plan_format)) for row in whole], tools, plan_format
        )
    if decoded and _is_row(whole):
        return _row_findings([(whole["id"], _row_plan(whole, plan_format))], tools, plan_format)
    source = whole if decoded else text
    return [f.to_dict() for f in verify_plan(source, tools, plan_format=plan_format)]
