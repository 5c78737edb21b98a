"""m&m's: task rows ``{id, user_request, plan_str, code_str, alt_plans_str}`` (a JSON array,
or JSON Lines) and prediction files ``{id, prediction}`` (JSON Lines).

``plan_str`` and ``alt_plans_str`` are Python literals (a list of steps; a list of such lists);
``code_str`` is the same plan as a ``def solve():`` function. A task written in Benchwright
may also carry its input files: ``images`` (paths relative to the file's folder, like LLM-I's)
and ``input_files`` (other files by name); both are optional and written only when the task has
some, so the dataset's own rows keep their shape. The gold plan becomes
PlanRecord "gold" and each alternative PlanRecord "alt:<i>" (0-based), inside the item.
A prediction is a step list (form "json"), a code string (form "code") or text that is neither
(form "raw", the text kept in ``code``); it becomes a PlanRecord attachment keyed
``pred:<file name>``. The audio files a task names (its ``input_files`` and its plans' file
arguments ending in .flac, .wav or .mp3) are in ``ItemRecord.audio``; the importer finds each
beside the tasks file or under ``data/`` (m&m's ``mnms/execution/data`` layout), and the export
writes them to ``data/<name>``. ``load_toolset`` reads the tool metadata and the tool graph.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from ._jsonio import (
    MISSING,
    IdRegistry,
    Overlay,
    SinkSet,
    Where,
    as_text,
    dataset_root,
    existing,
    expect_object,
    first_record,
    get_id,
    get_str,
    iter_jsonl,
    iter_rows,
    literal,
    load_json,
    object_list,
    record_input,
    rel,
    row_files,
    str_list,
)
from .audio import audio_names
from .base import AttachmentRecord, FormatError, ImageRef, ItemRecord, PlanRecord

TASKS_FILE = "tasks.json"
#: The key of a task's ground-truth plan (``plan_str``/``code_str``) among the item's plans.
GOLD_PLAN_KEY = "gold"
TOOLSET_FILES = ("tool_metadata.json", "tool_graph.json")

__all__ = [
    "GOLD_PLAN_KEY",
    "dataset_root",
    "load_toolset",
    "parse_prediction",
    "parse_record",
    "read",
    "write",
]

Record = ItemRecord | PlanRecord


def read(path: str | Path) -> Iterator[Record]:
    """A tasks file, a predictions file, or a folder holding them (tasks first). The tool
    metadata and tool graph files in a folder are skipped; see ``load_toolset``."""
    path = existing(path)
    if path.is_dir():
        root = path
        files = [f for f in row_files(path) if f.name not in TOOLSET_FILES]
    else:
        root, files = path.parent, [path]
    tasks: list[Path] = []
    predictions: list[Path] = []
    for file in files:
        kind = _kind_of(file, rel(root, file))
        (predictions if kind == "predictions" else tasks).append(file)
    for file in tasks:
        yield from _tasks(file, rel(root, file))
    for file in predictions:
        yield from _predictions(file, rel(root, file))


def _kind_of(file: Path, name: str) -> str:
    first = first_record(file, name)
    if first is MISSING:
        return "tasks"
    record = expect_object(first, Where(name, 0))
    if "prediction" in record:
        return "predictions"
    if "user_request" in record or "plan_str" in record:
        return "tasks"
    raise FormatError(
        "not an m&m's file: expected task rows {id, user_request, plan_str, ...} or "
        "predictions {id, prediction}",
        file=name,
        record=0,
    )


# --------------------------------------------------------------------------------------------
# Tasks
# --------------------------------------------------------------------------------------------


def _tasks(file: Path, name: str) -> Iterator[ItemRecord]:
    ids = IdRegistry("id")
    for position, raw, value in iter_rows(file, name):
        yield _task(value, raw, name, position, ids)


def parse_record(value: Any, *, source_file: str = TASKS_FILE, position: int = 0) -> ItemRecord:
    """One task row given on its own (the parsed object, or its JSON text), read exactly as
    ``read`` reads it in a tasks file."""
    raw, record = record_input(value, Where(source_file, position))
    return _task(record, raw, source_file, position, IdRegistry("id"))


def _task(value: Any, raw: str, name: str, position: int, ids: IdRegistry) -> ItemRecord:
    where = Where(name, position)
    record = expect_object(value, where)
    task_id = get_id(record, "id", where)
    where.record = task_id
    ids.add(task_id, where)
    request = get_str(record, "user_request", where, required=True, nonempty=True) or ""
    if record.get("plan_str") is None:
        raise where.error("required field is missing", "plan_str")
    gold = _plan(record["plan_str"], where, "plan_str")
    code = get_str(record, "code_str", where) or ""
    alternatives = _alternatives(record.get("alt_plans_str"), where)

    images = str_list(record.get("images"), where, "images")
    input_files = str_list(record.get("input_files"), where, "input_files")
    item = ItemRecord(
        external_id=task_id,
        source_file=name,
        raw=raw,
        position=position,
        query=request,
        modality="image" if images else "text",
        images=[ImageRef(path=p, role="input", position=i) for i, p in enumerate(images)],
        constraints={"input_files": input_files} if input_files else {},
        audio=audio_names(input_files, [gold, *alternatives]),
    )
    common: dict[str, Any] = {"item_id": task_id, "source_file": name, "origin": "ground_truth"}
    item.plans.append(PlanRecord(key=GOLD_PLAN_KEY, form="json", steps=gold, code=code, **common))
    for i, steps in enumerate(alternatives):
        item.plans.append(
            PlanRecord(
                key=f"alt:{i}",
                position=i + 1,
                form="json",
                steps=steps,
                is_alternative=True,
                **common,
            )
        )
    return item


def _plan(value: Any, where: Where, field: str, text: bool = True) -> list[dict[str, Any]]:
    """A plan: a Python-literal string (as in the HF rows; only if ``text``) or a list."""
    steps = literal(value, where, field) if text and isinstance(value, str) else value
    if not isinstance(steps, list):
        raise where.error("plan must be a list of steps", field)
    return object_list(steps, where, field)


def _alternatives(value: Any, where: Where) -> list[list[dict[str, Any]]]:
    if value is None:
        return []
    plans = literal(value, where, "alt_plans_str") if isinstance(value, str) else value
    if not isinstance(plans, list):
        raise where.error("must be a list of plans", "alt_plans_str")
    return [_plan(p, where, f"alt_plans_str[{i}]", text=False) for i, p in enumerate(plans)]


# --------------------------------------------------------------------------------------------
# Predictions
# --------------------------------------------------------------------------------------------


def _predictions(file: Path, name: str) -> Iterator[PlanRecord]:
    ids = IdRegistry("id")
    key = f"pred:{file.name}"
    model = file.stem
    for position, (lineno, raw, value) in enumerate(iter_jsonl(file, name)):
        where = Where(name, f"line {lineno}")
        record = expect_object(value, where)
        task_id = get_id(record, "id", where)
        where.record = task_id
        ids.add(task_id, where)
        if "prediction" not in record:
            raise where.error("required field is missing", "prediction")
        form, steps, code = parse_prediction(record["prediction"])
        yield PlanRecord(
            item_id=task_id,
            key=key,
            source_file=name,
            raw=raw,
            origin="model",
            model_name=model,
            position=position,
            form=form,
            steps=steps,
            code=code,
        )


def parse_prediction(value: Any) -> tuple[str, list[dict[str, Any]], str]:
    """(form, steps, code) for a prediction: a step list or ``{"nodes": [...]}`` (also when
    given as JSON or Python-literal text) is "json"; text defining a function is "code";
    anything else is "raw" with its text in ``code``."""
    steps = _as_steps(value)
    if steps is not None:
        return "json", steps, ""
    if not isinstance(value, str):
        return "raw", [], orjson.dumps(value).decode()
    text = value.strip()
    if text.startswith("def ") or "\ndef solve" in text:
        return "code", [], value
    if text[:1] in ("[", "{"):
        try:
            parsed = orjson.loads(text)
        except orjson.JSONDecodeError:
            try:
                parsed = literal(text, Where(""), "prediction")
            except FormatError:
                parsed = None
        steps = _as_steps(parsed)
        if steps is not None:
            return "json", steps, ""
    return "raw", [], value


def _as_steps(value: Any) -> list[dict[str, Any]] | None:
    if isinstance(value, dict) and isinstance(value.get("nodes"), list):
        value = value["nodes"]
    if isinstance(value, list) and all(isinstance(step, dict) for step in value):
        return value
    return None


# --------------------------------------------------------------------------------------------
# Tool set
# --------------------------------------------------------------------------------------------


def load_toolset(
    tool_metadata_path: str | Path, tool_graph_path: str | Path | None = None
) -> dict[str, Any]:
    """The m&m's tools and tool graph as plain data::

        {"tools": [{"name", "category", "inputs": [{"name", "modality"}], "outputs": [...],
                    "next_tools": [...]}],
         "edges": [{"source", "target"}],
         "unknown_next_tools": [names in next_tools that are not tools]}

    Without a graph file the edges are the ``next_tools`` links between known tools."""
    meta_path = existing(tool_metadata_path)
    meta_name = meta_path.name
    _, value = load_json(meta_path, meta_name)
    if not isinstance(value, list):
        raise FormatError("expected a JSON array of tools", file=meta_name)
    tools: list[dict[str, Any]] = []
    names: set[str] = set()
    for i, entry in enumerate(value):
        where = Where(meta_name, i)
        tool = expect_object(entry, where)
        name = get_str(tool, "name", where, required=True, nonempty=True) or ""
        where.record = name
        if name in names:
            raise where.error(f"duplicate tool {name!r}", "name")
        names.add(name)
        tools.append(
            {
                "name": name,
                "category": get_str(tool, "category", where) or "",
                "inputs": _args(tool, "input", where),
                "outputs": _args(tool, "output", where),
                "next_tools": list(str_list(tool.get("next_tools"), where, "next_tools")),
            }
        )
    unknown = sorted({n for t in tools for n in t["next_tools"] if n not in names})
    if tool_graph_path is None:
        edges = [
            {"source": t["name"], "target": n} for t in tools for n in t["next_tools"] if n in names
        ]
    else:
        edges = _graph_edges(existing(tool_graph_path), names)
    return {"tools": tools, "edges": edges, "unknown_next_tools": unknown}


def _args(tool: dict[str, Any], key: str, where: Where) -> list[dict[str, str]]:
    spec = tool.get(key)
    if spec is None:
        return []
    spec = expect_object(spec, where, key)
    arg_names = str_list(spec.get("arg_name"), where, f"{key}.arg_name")
    modalities = str_list(spec.get("modality"), where, f"{key}.modality")
    if len(arg_names) != len(modalities):
        raise where.error("arg_name and modality must have the same length", key)
    return [{"name": n, "modality": m} for n, m in zip(arg_names, modalities, strict=True)]


def _graph_edges(path: Path, names: set[str]) -> list[dict[str, str]]:
    graph_name = path.name
    _, value = load_json(path, graph_name)
    where = Where(graph_name)
    graph = expect_object(value, where)
    raw_edges = graph.get("edges")
    if not isinstance(raw_edges, list):
        raise where.error("must be a list of [source, target] pairs", "edges")
    edges = []
    for i, edge in enumerate(raw_edges):
        if (
            not isinstance(edge, list)
            or len(edge) != 2
            or not all(isinstance(n, str) for n in edge)
        ):
            raise where.error("must be a [source, target] pair of tool names", f"edges[{i}]")
        for node in edge:
            if node not in names:
                raise where.error(f"unknown tool {node!r}", f"edges[{i}]")
        edges.append({"source": edge[0], "target": edge[1]})
    return edges


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def write(
    out: str | Path,
    items: Iterable[ItemRecord],
    attachments: Iterable[AttachmentRecord] = (),
) -> list[Path]:
    """Tasks to ``out/<source_file>`` (``tasks.json``; a ``.jsonl`` name gives JSON Lines) and
    predictions (PlanRecords keyed ``pred:<file>``) to ``out/<file>`` as JSON Lines."""
    out = Path(out)
    with SinkSet(out) as sinks:
        for item in items:
            name = item.source_file or TASKS_FILE
            where = Where(name, item.external_id)
            ov = Overlay(item.raw, where, partial(_skeleton, item))
            _overlay_task(ov, item)
            sinks.get(name, where).add(item.position, ov.value, where, line=ov.line())
        for att in attachments:
            if not isinstance(att, PlanRecord) or not att.key.startswith("pred:"):
                continue
            name = att.source_file or att.key[len("pred:") :]
            where = Where(name, att.item_id)
            ov = Overlay(att.raw, where, partial(_prediction_skeleton, att))
            ov.put(("id",), att.item_id, as_text)
            ov.put(("prediction",), (att.form, att.steps, att.code), _decode_prediction, _encode)
            sinks.get(name, where).add(att.position, ov.value, where, line=ov.line())
    return sinks.paths


def _skeleton(item: ItemRecord) -> dict[str, Any]:
    ident = item.external_id
    return {
        # m&m's ids are numbers; an id written as digits is one.
        "id": int(ident)
        if ident.isascii() and ident.isdigit() and str(int(ident)) == ident
        else ident,
        "user_request": item.query,
        "plan_str": "[]",
        "code_str": "",
        # What m&m's evaluator evaluates in best-match mode: a task written here has a list,
        # empty or not ("[]"), never the null some dataset rows carry.
        "alt_plans_str": "[]",
    }


def _prediction_skeleton(att: PlanRecord) -> dict[str, Any]:
    return {"id": att.item_id}


def _overlay_task(ov: Overlay, item: ItemRecord) -> None:
    ov.put(("id",), item.external_id, as_text)
    ov.put(("user_request",), item.query, as_text)
    gold = next((p for p in item.plans if p.key == GOLD_PLAN_KEY), None)
    if gold is not None:
        ov.put(("plan_str",), gold.steps, _decode_plan, _encode_literal)
        ov.put(("code_str",), gold.code, as_text)
    alternatives = [p.steps for p in item.plans if p.is_alternative]
    ov.put(("alt_plans_str",), alternatives, _decode_alternatives, _encode_literal)
    images = [im.path for im in sorted(item.images, key=lambda im: im.position)]
    ov.put(("images",), images, _decode_names, _encode_names)
    ov.put(
        ("input_files",),
        list(item.constraints.get("input_files") or []),
        _decode_names,
        _encode_names,
    )


def _decode_names(value: Any) -> Any:
    """An optional list of file names: absent or null reads as none."""
    return [] if value is MISSING or value is None else value


def _encode_names(new: list[str], old: Any) -> Any:
    """The names; an emptied list stays in the row's shape (null stays null)."""
    return None if not new and old is None else new


def _decode_plan(value: Any) -> Any:
    try:
        return _plan(value, Where(""), "plan_str")
    except FormatError:
        return MISSING


def _decode_alternatives(value: Any) -> Any:
    if value is MISSING:
        return []
    try:
        return _alternatives(value, Where(""))
    except FormatError:
        return MISSING


def _encode_literal(new: list[Any], old: Any) -> Any:
    """Plans go back in the form they came in: Python-literal text, or a JSON list (an
    imported row's null stays null while it has no alternatives)."""
    if isinstance(old, list):
        return new
    if not new and old is None:
        return None
    return repr(new)


def _decode_prediction(value: Any) -> tuple[str, list[dict[str, Any]], str]:
    return parse_prediction(None if value is MISSING else value)


def _encode(new: tuple[str, list[dict[str, Any]], str], old: Any) -> Any:
    form, steps, code = new
    if form == "json":
        if isinstance(old, dict) and isinstance(old.get("nodes"), list):
            return {**old, "nodes": steps}
        return steps
    return code
