"""Tool records and model calls as files, so they travel with a release (pure: no Django).

A release holds the tool records of its items (every call an evaluation made to a retrieval
provider or another external tool: request, response, files, time) under ``tool_records/``:

- ``records.jsonl``: one record a line, ``{"item", "key", "name", "arguments", "output",
  "files", "error", "seconds"}``; ``item`` is the item's id in the benchmark's own format (the
  id the tool layer keys calls by), ``key`` the record key (``base.call_key`` of item, tool and
  arguments) and ``files`` ``{file name: sha256}``;
- ``files/<sha256>``: each file once, by content hash.

``records_write`` writes them; ``records_read`` reads them back, checking every line (a bad
one raises ``FormatError`` naming the file, the line and the field), so a project that
imports the release answers the same calls from the same records."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.evaluation.base import ToolRecord, call_key
from benchmark.formats.base import FormatError

RECORDS_DIR = "tool_records"
RECORDS_FILE = "records.jsonl"
FILES_DIR = "files"
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class RecordsWritten:
    records: int
    files: int


def records_write(root: Path, records: Iterable[ToolRecord]) -> RecordsWritten:
    """Write ``records`` (in the order given) under ``root/tool_records/``. Nothing is
    written when there are none."""
    folder = root / RECORDS_DIR
    lines: list[bytes] = []
    stored: set[str] = set()
    for rec in records:
        files = {}
        for name, data in sorted(rec.files.items()):
            digest = hashlib.sha256(data).hexdigest()
            files[name] = digest
            if digest not in stored:
                (folder / FILES_DIR).mkdir(parents=True, exist_ok=True)
                (folder / FILES_DIR / digest).write_bytes(data)
                stored.add(digest)
        line = {
            "item": rec.item,
            "key": call_key(rec.item, rec.name, rec.arguments),
            "name": rec.name,
            "arguments": rec.arguments,
            "output": rec.output,
            "files": files,
            "error": rec.error,
            "seconds": rec.seconds,
        }
        # Keys in the order the tool gave them: a model reads the output as text, so a replay
        # must give it back as it was first given (not sorted), or the model's call differs.
        lines.append(json.dumps(line, ensure_ascii=False, default=str).encode())
    if lines:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / RECORDS_FILE).write_bytes(b"\n".join(lines) + b"\n")
    return RecordsWritten(records=len(lines), files=len(stored))


def has_records(root: Path) -> bool:
    return (root / RECORDS_DIR / RECORDS_FILE).is_file()


def _file_lines(root: Path, name: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` for each non-blank line of the release file ``root/name`` (none
    when it is absent); FormatError when it cannot be read as UTF-8 text."""
    path = root / name
    if not path.is_file():
        return
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FormatError(f"cannot read the file ({exc})", file=name) from None
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            yield lineno, line


def records_read(root: Path) -> Iterator[tuple[int, str, ToolRecord]]:
    """``(line number, key, record)`` for each line of ``root/tool_records/records.jsonl`` (none when the
    file is absent), each checked: FormatError names the line and field of a bad one, a key
    that does not match its item, tool and arguments, and a file that is missing or whose
    bytes do not hash to its name."""
    name = f"{RECORDS_DIR}/{RECORDS_FILE}"
    for lineno, line in _file_lines(root, name):
        yield lineno, *_record(root, line, name, f"line {lineno}")


def _record(root: Path, line: str, name: str, where: str) -> tuple[str, ToolRecord]:
    def bad(message: str, field: str | None = None) -> FormatError:
        return FormatError(message, file=name, record=where, field=field)

    try:
        value = json.loads(line)
    except ValueError as exc:
        raise bad(f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise bad("expected a JSON object")
    for key in ("item", "name", "key"):
        if not isinstance(value.get(key), str) or not value[key]:
            raise bad("expected a non-empty string", key)
    arguments = value.get("arguments", {})
    if not isinstance(arguments, dict):
        raise bad("expected an object", "arguments")
    error = value.get("error") or ""
    if not isinstance(error, str):
        raise bad("expected a string", "error")
    seconds = value.get("seconds") or 0
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not math.isfinite(seconds)
        or seconds < 0
    ):
        raise bad("expected a number of seconds, 0 or more", "seconds")
    key = call_key(value["item"], value["name"], arguments)
    if key != value["key"]:
        raise bad(
            f"the key does not match the record's item, tool and arguments (they give {key})",
            "key",
        )
    return key, ToolRecord(
        item=value["item"],
        name=value["name"],
        arguments=arguments,
        output=value.get("output"),
        files=_files(root, value.get("files") or {}, bad),
        error=error,
        seconds=float(seconds),
    )


def _files(root: Path, listed: Any, bad: Any) -> dict[str, bytes]:
    if not isinstance(listed, dict):
        raise bad("expected an object {file name: sha256}", "files")
    out = {}
    for file_name, digest in listed.items():
        if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
            raise bad(f"{file_name!r}: expected a sha256 (64 lower-case hex digits)", "files")
        path = root / RECORDS_DIR / FILES_DIR / digest
        try:
            data = path.read_bytes()
        except OSError:
            raise bad(
                f"{file_name!r}: {RECORDS_DIR}/{FILES_DIR}/{digest} is missing", "files"
            ) from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise bad(f"{file_name!r}: {RECORDS_DIR}/{FILES_DIR}/{digest} has other bytes", "files")
        out[file_name] = data
    return out


# --------------------------------------------------------------------------- model calls

#: A release of a project with evaluations also holds the model calls its evaluations made on
#: its items (the model-call cache ``--replay`` answers from) under ``model_calls/``:
#: ``calls.jsonl``, one call a line, ``{"item", "endpoint", "model", "messages", "tools",
#: "params", "answer", "answer_model", "tool_calls", "prompt_tokens", "completion_tokens",
#: "latency_ms"}``: ``model`` is the model the request named and ``messages`` are as keyed,
#: images as ``sha256:`` references (their bytes are the items' images, or made again by the
#: tools). A project that imports the release keys each call again for itself.
CALLS_DIR = "model_calls"
CALLS_FILE = "calls.jsonl"


@dataclass(frozen=True)
class CallRecord:
    item: str
    endpoint: str
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    params: dict[str, Any]
    answer: str
    answer_model: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: int = 0


def calls_write(root: Path, calls: Iterable[CallRecord]) -> int:
    """Write ``calls`` (in the order given) to ``root/model_calls/calls.jsonl``, a line at a
    time (a large evaluation's calls are never all in memory); how many. Nothing is written
    when there are none."""
    path = root / CALLS_DIR / CALLS_FILE
    count = 0
    handle = None
    try:
        for c in calls:
            if handle is None:
                path.parent.mkdir(parents=True, exist_ok=True)
                handle = path.open("wb")
            line = {
                "item": c.item,
                "endpoint": c.endpoint,
                "model": c.model,
                "messages": c.messages,
                "tools": c.tools,
                "params": c.params,
                "answer": c.answer,
                "answer_model": c.answer_model,
                "tool_calls": list(c.tool_calls or []),
                "prompt_tokens": c.prompt_tokens,
                "completion_tokens": c.completion_tokens,
                "latency_ms": c.latency_ms,
            }
            handle.write(json.dumps(line, ensure_ascii=False, default=str).encode() + b"\n")
            count += 1
    finally:
        if handle is not None:
            handle.close()
    return count


def has_calls(root: Path) -> bool:
    return (root / CALLS_DIR / CALLS_FILE).is_file()


def calls_read(root: Path) -> Iterator[tuple[int, CallRecord]]:
    """``(line number, call)`` for each line of ``root/model_calls/calls.jsonl`` (none when
    the file is absent), each checked: FormatError names the line and field of a bad one."""
    name = f"{CALLS_DIR}/{CALLS_FILE}"
    for lineno, line in _file_lines(root, name):
        yield lineno, _call(line, name, f"line {lineno}")


def _call(line: str, name: str, where: str) -> CallRecord:
    def bad(message: str, field: str | None = None) -> FormatError:
        return FormatError(message, file=name, record=where, field=field)

    try:
        value = json.loads(line)
    except ValueError as exc:
        raise bad(f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise bad("expected a JSON object")
    _call_texts(value, bad)
    counts = _call_counts(value, bad)
    return CallRecord(
        item=value["item"],
        endpoint=value["endpoint"],
        model=value["model"],
        messages=list(value["messages"]),
        tools=list(value.get("tools") or []),
        params=dict(value.get("params") or {}),
        answer=str(value.get("answer") or ""),
        answer_model=str(value.get("answer_model") or ""),
        tool_calls=list(value.get("tool_calls") or []),
        prompt_tokens=counts["prompt_tokens"],
        completion_tokens=counts["completion_tokens"],
        latency_ms=int(counts["latency_ms"] or 0),
    )


def _call_texts(value: dict[str, Any], bad: Any) -> None:
    for key in ("item", "endpoint", "model"):
        if not isinstance(value.get(key), str) or not value[key]:
            raise bad("expected a non-empty string", key)
    for key in ("answer", "answer_model"):
        if not isinstance(value.get(key, ""), str):
            raise bad("expected a string", key)
    for key in ("messages", "tools", "tool_calls"):
        listed = value.get(key) or []
        if not isinstance(listed, list) or not all(isinstance(m, dict) for m in listed):
            raise bad("expected a list of objects", key)
    if not value.get("messages"):
        raise bad("expected a list of objects", "messages")
    if not isinstance(value.get("params") or {}, dict):
        raise bad("expected an object", "params")


def _call_counts(value: dict[str, Any], bad: Any) -> dict[str, int | None]:
    counts: dict[str, int | None] = {}
    for key in ("prompt_tokens", "completion_tokens", "latency_ms"):
        number = value.get(key)
        if number is None and key != "latency_ms":
            counts[key] = None
            continue
        number = number or 0
        if isinstance(number, bool) or not isinstance(number, int) or number < 0:
            raise bad("expected a whole number, 0 or more", key)
        counts[key] = number
    return counts
