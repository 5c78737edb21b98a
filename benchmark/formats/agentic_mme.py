"""Agentic-MME: a dataset folder with ``json/<task>.json`` task configs, ``images/`` and
``runs/<task_id>/`` model runs (``tool_use_list.json``, ``model_answer.txt``,
``tool_images/*.png``).

A task becomes an ItemRecord whose reference trajectory (``process_evaluation``: checkpoints,
ordering constraints, efficiency) is a TrajectoryRecord with key "reference". A run becomes a
TrajectoryRecord attachment with key ``run:<folder>`` whose steps are the logged tool events.
Paths are relative to the dataset folder. The writer names each task's images where the
benchmark's released runners look for them (``images/image_<NNNN>.png`` for the number in the
task file's name; see ``write``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

from ._jsonio import (
    MISSING,
    IdRegistry,
    Overlay,
    Where,
    as_dict,
    as_list,
    as_text,
    dumps,
    existing,
    expect_object,
    get_id,
    get_object,
    get_str,
    load_json,
    object_list,
    parse_raw,
    read_text,
    record_input,
    rel,
    safe_path,
    str_list,
    write_file,
)
from .base import AttachmentRecord, FormatError, ImageRef, ItemRecord, TrajectoryRecord

TASKS_DIR = "json"
RUNS_DIR = "runs"
EVENTS_FILE = "tool_use_list.json"
ANSWER_FILE = "model_answer.txt"
TOOL_IMAGES_DIR = "tool_images"
LEVELS = (1, 2, 3)
#: ``write`` takes ``image_names`` (see ``benchmark.formats``): the released runners find a
#: task's images by the number in its file name, so the export names them (``write``).
NAMES_IMAGES = True
#: The folders under the dataset root the released runners look for images in.
IMAGES_DIRS = ("images", "image")
#: The image file extensions the released runners look for, in their order.
LOADER_EXTENSIONS = (".png", ".jpg", ".jpeg")
#: A task prompt ends with its answer-format sentence, which starts with one of these words.
FORMAT_LEADS = (
    "Answer", "Respond", "Reply", "Give the answer", "Give your answer", "Format", "Output",
    "Write the answer", "Write your answer", "Please answer",
)  # fmt: skip
_FORMAT_LEAD = re.compile(
    r"(?<=[.?!:)\"'])[ ](?=(?:" + "|".join(re.escape(lead) for lead in FORMAT_LEADS) + r")\b)"
)


def split_prompt(prompt: str) -> tuple[str, str]:
    """``(question, format instruction)``: the instruction is the trailing part of the prompt
    that starts a sentence with "Answer with ...", "Respond ...", etc. after exactly one space,
    so :func:`join_prompt` gives the prompt back unchanged. ``("prompt", "")`` otherwise."""
    matches = list(_FORMAT_LEAD.finditer(prompt or ""))
    if not matches:
        return prompt or "", ""
    cut = matches[0]
    question, instruction = prompt[: cut.start()], prompt[cut.end() :]
    if not question.strip() or join_prompt(question, instruction) != prompt:
        return prompt, ""
    return question, instruction


def join_prompt(question: str, instruction: str) -> str:
    question, instruction = question or "", instruction or ""
    if not instruction:
        return question
    if not question:
        return instruction
    return f"{question} {instruction}"


Record = ItemRecord | TrajectoryRecord


def dataset_root(path: str | Path) -> Path:
    """The folder that record paths (``source_file``, ImageRef.path) are relative to: the
    dataset folder, also when ``read`` is given its ``json/`` folder, a task file in ``json/``
    or a run folder in ``runs/``."""
    path = Path(path)
    if path.is_dir() and (path / EVENTS_FILE).is_file():
        return path.parent.parent if path.parent.name == RUNS_DIR else path.parent
    if path.is_dir() and ((path / TASKS_DIR).is_dir() or (path / RUNS_DIR).is_dir()):
        return path
    if path.is_dir():
        return path.parent
    return path.parent.parent if path.parent.name == TASKS_DIR else path.parent


def read(path: str | Path) -> Iterator[Record]:
    """Tasks, then runs. ``path`` is the dataset folder (all tasks and runs), its ``json/``
    folder or one task file (those tasks, plus the runs named after them), or one run folder.
    Paths in the records are relative to ``dataset_root(path)``."""
    path = existing(path)
    root = dataset_root(path)
    if path.is_dir() and (path / EVENTS_FILE).is_file():
        yield _run(path, root)
        return
    if root == path:
        tasks_dir = path / TASKS_DIR
        task_files, all_runs = (_json_files(tasks_dir) if tasks_dir.is_dir() else []), True
    elif path.is_dir():
        task_files, all_runs = _json_files(path), False
        if not task_files:
            raise FormatError(f"no {TASKS_DIR}/ folder or task JSON files in {path}")
    else:
        task_files, all_runs = [path], False

    ids = IdRegistry("task_id")
    task_ids = []
    for position, file in enumerate(task_files):
        item = _task(file, root, position, ids)
        task_ids.append(item.external_id)
        yield item

    runs_dir = root / RUNS_DIR
    if not runs_dir.is_dir():
        return
    if all_runs:
        folders = [d for d in _sorted_dirs(runs_dir) if _is_run(d)]
    else:
        folders = [runs_dir / t for t in task_ids if _plain_name(t) and _is_run(runs_dir / t)]
    for folder in folders:
        yield _run(folder, root)


def _json_files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() == ".json")
    except OSError as exc:
        raise FormatError(f"cannot list folder ({exc.strerror or exc})", file=str(folder)) from None


def _sorted_dirs(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir())
    except OSError as exc:
        raise FormatError(f"cannot list folder ({exc.strerror or exc})", file=str(folder)) from None


def _plain_name(name: str) -> bool:
    return name not in ("", ".", "..") and not any(c in name for c in "/\\\0")


def _is_run(folder: Path) -> bool:
    return (folder / EVENTS_FILE).is_file() or (folder / ANSWER_FILE).is_file()


# --------------------------------------------------------------------------------------------
# Tasks
# --------------------------------------------------------------------------------------------


def _task(file: Path, root: Path, position: int, ids: IdRegistry) -> ItemRecord:
    name = rel(root, file)
    raw, value = load_json(file, name)
    return _task_record(value, raw, name, file.stem, position, ids)


def parse_record(value: Any, *, source_file: str | None = None, position: int = 0) -> ItemRecord:
    """One task file's object given on its own (the parsed object, or the file's text), read
    exactly as ``read`` reads it from ``json/<task_id>.json`` (the default ``source_file``)."""
    raw, record = record_input(value, Where(source_file or TASKS_DIR, "record"), pretty=True)
    if source_file is None:  # the task's file is named after its id, as in the dataset
        where = Where(TASKS_DIR, "record")
        task_id = get_id(expect_object(record, where), "task_id", where)
        if not _plain_name(task_id):
            raise where.error("names the task's file: no slashes", "task_id")
        source_file = f"{TASKS_DIR}/{task_id}.json"
    stem = Path(source_file).stem
    return _task_record(record, raw, source_file, stem, position, IdRegistry("task_id"))


def _task_record(
    value: Any, raw: str, name: str, stem: str, position: int, ids: IdRegistry
) -> ItemRecord:
    where = Where(name, stem)
    record = expect_object(value, where)
    task_id = get_id(record, "task_id", where)
    where.record = task_id
    ids.add(task_id, where)

    meta = get_object(record, "meta", where) or {}
    level = _level(meta.get("level"), where)
    domain = get_str(meta, "domain", where, field="meta.domain") or ""
    get_str(meta, "turncase", where, field="meta.turncase")

    task_input = get_object(record, "input", where, required=True) or {}
    prompt = get_str(
        task_input, "prompt", where, required=True, nonempty=True, field="input.prompt"
    )
    image_paths = _input_images(task_input.get("image"), where)

    answer = get_object(record, "golden_answer", where) or {}
    expected = _answer_value(answer.get("value"), where)
    match_type = get_str(answer, "match_type", where, field="golden_answer.match_type") or ""
    variants = str_list(answer.get("accepted_variants"), where, "golden_answer.accepted_variants")

    item = ItemRecord(
        external_id=task_id,
        source_file=name,
        raw=raw,
        position=position,
        query=prompt or "",
        modality="image" if image_paths else "text",
        images=[ImageRef(path=p, role="input", position=i) for i, p in enumerate(image_paths)],
        expected_answer=expected,
        accepted_variants=list(variants),
        match_type=match_type,
        domain=domain,
        level=level,
    )
    process = get_object(record, "process_evaluation", where)
    if process is not None:
        item.trajectories.append(
            TrajectoryRecord(
                item_id=task_id,
                key="reference",
                source_file=name,
                origin="ground_truth",
                checkpoints=object_list(
                    process.get("checkpoints"), where, "process_evaluation.checkpoints"
                ),
                ordering_constraints=object_list(
                    process.get("ordering_constraints"),
                    where,
                    "process_evaluation.ordering_constraints",
                ),
                efficiency=get_object(
                    process, "efficiency", where, field="process_evaluation.efficiency"
                )
                or {},
            )
        )
    return item


def _level(value: Any, where: Where) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value not in LEVELS:
        raise where.error(f"must be 1, 2 or 3, got {value!r}", "meta.level")
    return value


def _input_images(value: Any, where: Where) -> list[str]:
    """``input.image``: one path; a list of paths is accepted as the multi-image form."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    return str_list(value, where, "input.image")


def _answer_value(value: Any, where: Where) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise where.error("must be a string or a number", "golden_answer.value")
    return as_text(value)


# --------------------------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------------------------


def _run(folder: Path, root: Path) -> TrajectoryRecord:
    run_name = folder.name
    events_file = folder / EVENTS_FILE
    name = rel(root, events_file)
    where = Where(name, run_name)
    raw, steps = "", []
    if events_file.is_file():
        raw, value = load_json(events_file, name)
        steps = object_list(value, where, "events")
    answer_file = folder / ANSWER_FILE
    final_answer = ""
    if answer_file.is_file():
        final_answer = _strip_newline(read_text(answer_file, rel(root, answer_file)))
    return TrajectoryRecord(
        item_id=run_name,
        key=f"run:{run_name}",
        source_file=name,
        raw=raw,
        origin="model",
        steps=steps,
        final_answer=final_answer,
        images=_tool_images(steps, folder, root, where),
    )


def _strip_newline(text: str) -> str:
    if text.endswith("\r\n"):
        return text[:-2]
    return text[:-1] if text.endswith("\n") else text


def _tool_images(
    steps: list[dict[str, Any]], folder: Path, root: Path, where: Where
) -> list[ImageRef]:
    """Images the run produced: each event's ``output.output_path`` in order (an absolute path
    is taken to mean the file of that name in ``tool_images/``), then any other files there."""
    paths: list[str] = []
    for i, event in enumerate(steps):
        output = event.get("output")
        if not isinstance(output, dict):
            continue
        value = output.get("output_path")
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            raise where.error("must be a string", f"events[{i}].output.output_path")
        candidate = Path(value)
        if candidate.is_absolute() or ".." in candidate.parts:
            candidate = Path(TOOL_IMAGES_DIR) / candidate.name
        path = rel(root, folder / candidate)
        if path not in paths:
            paths.append(path)
    extra_dir = folder / TOOL_IMAGES_DIR
    if extra_dir.is_dir():
        try:
            for file in sorted(extra_dir.iterdir()):
                path = rel(root, file)
                if file.is_file() and path not in paths:
                    paths.append(path)
        except OSError:
            pass
    return [ImageRef(path=p, role="artifact", position=i) for i, p in enumerate(paths)]


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def write(
    out: str | Path,
    items: Iterable[ItemRecord],
    attachments: Iterable[AttachmentRecord] = (),
    *,
    image_names: dict[str, str] | None = None,
) -> list[Path]:
    """Tasks to ``out/json/<file>.json`` and runs (TrajectoryRecords keyed ``run:<name>``) to
    ``out/runs/<name>/``; unchanged records are written as their exact raw text.

    The released runners do not read a task's images from its JSON: they take the first number
    in the task file's name and open ``images/image_<NNNN>.png`` (or ``image_<NNNN>_1.png``,
    ``_2``, ... for several; see :func:`loader_image_paths`). So each task is written where
    they find it. A task already named that way (``json/0001.json`` with
    ``images/image_0001.png``) keeps its file names and bytes. Any other task keeps its file
    name if the number in it is one no other task has, else it becomes ``json/<NNNN>.json``
    with the lowest free number; its images are written as ``images/image_<NNNN>...`` and its
    ``input.image`` names them. The task's ``task_id`` is unchanged, so importing the export
    gives the same items. Tasks that need a new name are held back until every task already
    named that way has claimed its number (they are written last).

    ``image_names``, when given, receives ``{path written: ImageRef.path}`` for every image of
    every task: the caller copies each image to the path the task names."""
    out = Path(out)
    names = image_names if image_names is not None else {}
    written: list[Path] = []
    claimed: set[int] = set()
    held: list[ItemRecord] = []
    for item in items:
        file_name = _task_file_name(item)
        number = loader_number(Path(file_name).stem)
        if number is not None and number not in claimed and _in_loader_naming(item, number):
            claimed.add(number)
            written.extend(_write_task(out, item, file_name, names))
        else:
            held.append(item)
    for item, file_name, number in _numbered(held, claimed):
        renamed = replace(item, images=_loader_images(item, number))
        written.extend(_write_task(out, renamed, file_name, names, original=item))
    for att in attachments:
        if isinstance(att, TrajectoryRecord) and att.key.startswith("run:"):
            written.extend(_write_run(out, att))
    return written


def loader_number(stem: str) -> int | None:
    """The number the released runners read from a task file's name (without ``.json``): its
    first run of digits, or None when it has none."""
    digits = re.search(r"\d+", stem)
    return int(digits.group()) if digits else None


def loader_image_paths(number: int, extensions: list[str]) -> list[str]:
    """Where the released runners look for the images of the task numbered ``number``, one
    per extension given: ``images/image_<NNNN><ext>`` for one image, ``images/image_<NNNN>_<k>
    <ext>`` (k from 1) for several; ``<NNNN>`` is the number padded to four digits."""
    padded = str(number).zfill(4)
    if len(extensions) == 1:
        return [f"images/image_{padded}{extensions[0]}"]
    return [f"images/image_{padded}_{k}{ext}" for k, ext in enumerate(extensions, start=1)]


def _task_file_name(item: ItemRecord) -> str:
    return Path(item.source_file).name if item.source_file else f"{item.external_id}.json"


def _sorted_images(item: ItemRecord) -> list[ImageRef]:
    return sorted(item.images, key=lambda im: im.position)


def _in_loader_naming(item: ItemRecord, number: int) -> bool:
    """Whether the released runners find the task's images, in order, where they are now."""
    if not _task_file_name(item).endswith(".json"):
        return False  # the runners list *.json, case and all
    paths = [PurePosixPath(im.path) for im in _sorted_images(item)]
    if any(p.parent.as_posix() not in IMAGES_DIRS for p in paths):
        return False
    expected = loader_image_paths(number, [p.suffix for p in paths])
    return [p.name for p in paths] == [PurePosixPath(e).name for e in expected] and all(
        p.suffix in LOADER_EXTENSIONS for p in paths
    )


def _numbered(held: list[ItemRecord], claimed: set[int]) -> Iterator[tuple[ItemRecord, str, int]]:
    """``(task, file name, number)`` for the tasks held back: the number in the file's name
    when no task has it yet (first come, first served), else the lowest free number and the
    file name ``<NNNN>.json``."""
    kept: dict[int, tuple[ItemRecord, str, int]] = {}
    rest: list[int] = []
    for index, item in enumerate(held):
        file_name = _task_file_name(item)
        number = loader_number(Path(file_name).stem)
        if number is not None and number not in claimed and file_name.endswith(".json"):
            claimed.add(number)
            kept[index] = (item, file_name, number)
        else:
            rest.append(index)
    free = 1
    for index in rest:
        while free in claimed:
            free += 1
        claimed.add(free)
        kept[index] = (held[index], f"{str(free).zfill(4)}.json", free)
    for index in range(len(held)):
        yield kept[index]


def _loader_images(item: ItemRecord, number: int) -> list[ImageRef]:
    """The task's images at the paths the runners look for. An image in a format they do not
    look for (GIF, WebP, ...) gets the ``.png`` name; they open it by its content."""
    images = _sorted_images(item)
    extensions = [
        suffix if suffix in LOADER_EXTENSIONS else LOADER_EXTENSIONS[0]
        for suffix in (PurePosixPath(im.path).suffix.lower() for im in images)
    ]
    paths = loader_image_paths(number, extensions)
    return [replace(im, path=path) for im, path in zip(images, paths, strict=True)]


def _write_task(
    out: Path,
    item: ItemRecord,
    file_name: str,
    image_names: dict[str, str],
    *,
    original: ItemRecord | None = None,
) -> list[Path]:
    """The task file (and the runs nested in the task); ``original`` is the task as stored
    when ``item`` carries its images under new names."""
    where = Where(item.source_file or f"{TASKS_DIR}/{item.external_id}.json", item.external_id)
    ov = Overlay(item.raw, where, partial(_skeleton, item))
    _overlay_task(ov, item)
    images = _sorted_images(item)
    stored = _sorted_images(original) if original is not None else images
    if original is not None:
        paths = [im.path for im in images]
        ov.put(("input", "image"), paths, _decode_image_paths, _encode_image_paths)
    for new, old in zip(images, stored, strict=True):
        image_names[new.path] = old.path
    target = safe_path(out, f"{TASKS_DIR}/{file_name}", where)
    written = [write_file(target, ov.document())]
    # A run without a tool_use_list.json has no raw text, so it may come back nested.
    for trajectory in item.trajectories:
        if trajectory.key.startswith("run:"):
            written.extend(_write_run(out, trajectory))
    return written


def _decode_image_paths(value: Any) -> list[Any]:
    if value is MISSING or value is None or value == "":
        return []
    return value if isinstance(value, list) else [value]


def _encode_image_paths(new: list[str], old: Any) -> Any:
    """``input.image`` in the shape it had: one path as a string, several as a list."""
    if isinstance(old, list) or len(new) > 1:
        return new
    return new[0] if new else old


def _skeleton(item: ItemRecord) -> dict[str, Any]:
    images = [im.path for im in _sorted_images(item)]
    return {
        "task_id": item.external_id,
        "meta": {"level": item.level, "domain": item.domain, "turncase": "single_turn"},
        "input": {
            "prompt": item.query,
            "image": images[0] if len(images) == 1 else (images or None),
        },
        "golden_answer": {"value": item.expected_answer, "match_type": item.match_type},
        "process_evaluation": {"checkpoints": [], "ordering_constraints": [], "efficiency": {}},
    }


def _overlay_task(ov: Overlay, item: ItemRecord) -> None:
    ov.put(("task_id",), item.external_id, as_text)
    ov.put(("meta", "level"), item.level)
    ov.put(("meta", "domain"), item.domain, as_text)
    ov.put(("input", "prompt"), item.query, as_text)
    ov.put(("golden_answer", "value"), item.expected_answer, as_text)
    ov.put(("golden_answer", "match_type"), item.match_type, as_text)
    ov.put(("golden_answer", "accepted_variants"), item.accepted_variants, as_list)
    for trajectory in item.trajectories:
        if trajectory.key != "reference":
            continue
        process = ("process_evaluation",)
        ov.put((*process, "checkpoints"), trajectory.checkpoints, as_list)
        ov.put((*process, "ordering_constraints"), trajectory.ordering_constraints, as_list)
        ov.put((*process, "efficiency"), trajectory.efficiency, as_dict)


def _write_run(out: Path, att: TrajectoryRecord) -> list[Path]:
    """``tool_use_list.json`` (the raw text unless the steps were edited) and
    ``model_answer.txt`` (the final answer plus a newline, as the runner writes it)."""
    run_name = att.key[len("run:") :]
    where = Where(att.source_file or f"{RUNS_DIR}/{run_name}/{EVENTS_FILE}", att.key)
    folder = safe_path(out, f"{RUNS_DIR}/{run_name}", where)
    if att.raw and parse_raw(att.raw, where) == att.steps:
        events = att.raw.encode()
    else:
        events = dumps(att.steps, where, pretty=True) + b"\n"
    answer = f"{att.final_answer}\n" if att.final_answer else ""
    return [
        write_file(folder / EVENTS_FILE, events),
        write_file(folder / ANSWER_FILE, answer.encode()),
    ]
