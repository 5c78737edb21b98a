"""Reading agent-run folders (Agentic-MME): tool_use_list.json, model_answer.txt, run_meta.json and tool_images/, and the task files they are scored against. Errors name the folder and the file."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from benchmark.exceptions import ValidationFailed
from benchmark.metrics import agentic_mme as mme

EVENTS_FILE = "tool_use_list.json"


ANSWER_FILE = "model_answer.txt"


META_FILE = "run_meta.json"


TOOL_IMAGES_DIR = "tool_images"


MAX_DEPTH = 4


@dataclass
class RunFolder:
    """One run folder, read and checked."""

    path: Path
    name: str
    """The folder relative to the upload (or RUNS_DIR), in POSIX form."""
    task_id: str
    model: str
    events: list[dict[str, Any]]
    events_raw: str
    answer: str
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def effective_tool_calls(self) -> int | None:
        value = self.meta.get("effective_tool_calls")
        return None if value is None else int(value)

    def agent_run(self, *, with_files: bool = True) -> mme.RunRecord:
        return mme.RunRecord(
            tuple(self.events),
            self.answer,
            self.path if with_files else None,
            self.effective_tool_calls,
            self.name,
        )


def _natural(path: Path) -> tuple[Any, ...]:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.as_posix()))


def is_run_folder(path: Path) -> bool:
    return any((path / name).is_file() for name in (EVENTS_FILE, ANSWER_FILE, META_FILE))


def find_run_folders(root: Path) -> list[Path]:
    """Run folders under ``root`` (``root`` itself when it is one), up to MAX_DEPTH levels
    down, in natural order. A run folder's own subfolders (``tool_images/``) are not searched."""
    if is_run_folder(root):
        return [root]
    found: list[Path] = []

    def walk(folder: Path, depth: int) -> None:
        try:
            children = sorted((p for p in folder.iterdir() if p.is_dir()), key=_natural)
        except OSError as exc:
            raise ValidationFailed(f"cannot list folder {folder} ({exc.strerror or exc})") from None
        for child in children:
            if child.name.startswith(("__MACOSX", ".")):
                continue
            if is_run_folder(child):
                found.append(child)
            elif depth < MAX_DEPTH:
                walk(child, depth + 1)

    walk(root, 1)
    return found


def _where(name: str, file: str) -> str:
    return f"run folder {name!r}, file {file}"


def _read_text(path: Path, name: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValidationFailed(f"{_where(name, path.name)}: not UTF-8 text") from None
    except OSError as exc:
        raise ValidationFailed(
            f"{_where(name, path.name)}: cannot be read ({exc.strerror or exc})"
        ) from None


def _read_json(path: Path, name: str) -> tuple[str, Any]:
    text = _read_text(path, name)
    try:
        return text, json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationFailed(
            f"{_where(name, path.name)}: not valid JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno})"
        ) from None


def read_run_folder(path: Path, root: Path) -> RunFolder:
    """Read and check one run folder; ValidationFailed names the folder and the file."""
    rel = path.relative_to(root).as_posix() if path != root else path.name
    name = rel if rel not in ("", ".") else path.name
    for required in (EVENTS_FILE, ANSWER_FILE):
        if not (path / required).is_file():
            raise ValidationFailed(f"run folder {name!r}: {required} is missing")
    events_raw, events = _read_json(path / EVENTS_FILE, name)
    if not isinstance(events, list):
        raise ValidationFailed(
            f"{_where(name, EVENTS_FILE)}: expected a JSON list of tool events, "
            f"found {type(events).__name__}"
        )
    for i, event in enumerate(events):
        if not isinstance(event, dict):
            raise ValidationFailed(f"{_where(name, EVENTS_FILE)}: event {i} is not a JSON object")
        for key in ("arguments", "output"):
            if event.get(key) is not None and not isinstance(event[key], dict | str):
                raise ValidationFailed(
                    f"{_where(name, EVENTS_FILE)}: event {i}: {key!r} must be an object"
                )
    answer = _read_text(path / ANSWER_FILE, name).strip()
    meta: dict[str, Any] = {}
    if (path / META_FILE).is_file():
        _, value = _read_json(path / META_FILE, name)
        if not isinstance(value, dict):
            raise ValidationFailed(f"{_where(name, META_FILE)}: expected a JSON object")
        meta = value
        effective = meta.get("effective_tool_calls")
        if effective is not None and (
            isinstance(effective, bool) or not isinstance(effective, int) or effective < 0
        ):
            raise ValidationFailed(
                f"{_where(name, META_FILE)}: effective_tool_calls must be a whole number >= 0"
            )
    task_id = ""
    if isinstance(meta.get("task_id"), str | int) and str(meta["task_id"]).strip():
        task_id = str(meta["task_id"]).strip()
    elif isinstance(meta.get("task_file"), str) and meta["task_file"].strip():
        task_id = PurePosixPath(meta["task_file"].replace("\\", "/")).stem
    else:
        task_id = path.name
    model = str(meta.get("model") or "").strip()
    return RunFolder(path, name, task_id, model, events, events_raw, answer, meta)


def read_run_folders(root: Path, progress: Callable[[int], None] | None = None) -> list[RunFolder]:
    if not root.is_dir():
        raise ValidationFailed(f"{root} is not a folder")
    folders = find_run_folders(root)
    if not folders:
        raise ValidationFailed(
            f"no run folders found in {root.name or root} (a run folder holds "
            f"{EVENTS_FILE} and {ANSWER_FILE})"
        )
    runs = []
    for n, folder in enumerate(folders, start=1):
        runs.append(read_run_folder(folder, root))
        if progress is not None:
            progress(n)
    return runs


def read_tasks(tasks_dir: Path) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Task configs by ``task_id`` (and by file stem, when it differs) from a folder of
    ``*.json`` task files, or from a dataset folder holding ``json/``."""
    if not tasks_dir.is_dir():
        raise ValidationFailed(f"{tasks_dir} is not a folder")
    files = sorted(p for p in tasks_dir.iterdir() if p.is_file() and p.suffix == ".json")
    if not files and (tasks_dir / "json").is_dir():
        return read_tasks(tasks_dir / "json")
    if not files:
        raise ValidationFailed(f"no task JSON files in {tasks_dir}")
    out: dict[str, tuple[Path, dict[str, Any]]] = {}
    stems: dict[str, tuple[Path, dict[str, Any]]] = {}
    for file in files:
        try:
            task = json.loads(file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValidationFailed(
                f"{file}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ValidationFailed(f"{file}: cannot be read ({exc})") from None
        if not isinstance(task, dict):
            raise ValidationFailed(f"{file}: expected a JSON object (one task)")
        task_id = task.get("task_id")
        if not isinstance(task_id, str | int) or not str(task_id).strip():
            raise ValidationFailed(f"{file}: task_id is missing")
        task_id = str(task_id).strip()
        if task_id in out:
            raise ValidationFailed(f"{file}: task_id {task_id!r} is also in {out[task_id][0]}")
        for key, where in (("meta", dict), ("process_evaluation", dict), ("golden_answer", dict)):
            if task.get(key) is not None and not isinstance(task[key], where):
                raise ValidationFailed(f"{file}: {key} must be a JSON object")
        out[task_id] = (file, task)
        stems[file.stem] = (file, task)
    for stem, entry in stems.items():
        out.setdefault(stem, entry)
    return out


def task_variants(task: Mapping[str, Any]) -> list[str]:
    """Accepted answer variants as Benchwright's task files hold them."""
    variants = (task.get("golden_answer") or {}).get("accepted_variants") or []
    return [str(v) for v in variants] if isinstance(variants, list) else [str(variants)]
