"""What an evaluation keeps besides its results: tool records (``RecordStore`` for the
``ToolLayer``), model calls (the cache a replay answers from) and files by content hash.

Worker threads never touch the database: before an item runs, its recorded calls and tool
records are loaded (``item_records_load``) into buffers; after it, the new ones are stored
(``item_records_store``), both on the runner's thread."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from benchmark.evaluation.base import ToolRecord
from benchmark.llm.cache import CachedAnswer
from review.evaluation.chat import ItemCalls
from review.evaluation.models import EvaluationCall, EvaluationRun, ToolCallRecord

FILES_PREFIX = "evaluation/files"


def file_path(digest: str) -> str:
    return f"{FILES_PREFIX}/{digest[:2]}/{digest}"


def file_store(data: bytes) -> str:
    """Store ``data`` once by its sha256 (through the project's storage); the hash."""
    digest = hashlib.sha256(data).hexdigest()
    path = file_path(digest)
    if not default_storage.exists(path):
        default_storage.save(path, ContentFile(data))
    return digest


def file_read(digest: str) -> bytes | None:
    try:
        with default_storage.open(file_path(digest), "rb") as handle:
            return handle.read()
    except (FileNotFoundError, OSError):
        return None


def files_store(files: Mapping[str, bytes]) -> dict[str, str]:
    return {name: file_store(data) for name, data in files.items()}


def files_read(stored: Mapping[str, str]) -> dict[str, bytes]:
    out = {}
    for name, digest in stored.items():
        data = file_read(digest)
        if data is not None:
            out[name] = data
    return out


@dataclass
class ItemTools:
    """A ``RecordStore`` for one item's tool calls: the records kept before, and the new ones."""

    known: dict[str, ToolRecord] = field(default_factory=dict)
    made: dict[str, ToolRecord] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: str) -> ToolRecord | None:
        with self._lock:
            return self.known.get(key)

    def put(self, key: str, record: ToolRecord) -> None:
        with self._lock:
            self.known[key] = record
            self.made[key] = record


def item_records_load(*, project_id: int, item_id: int) -> tuple[ItemCalls, ItemTools]:
    """The item's recorded model calls and tool records (two queries)."""
    return items_records_load(project_id=project_id, item_ids=[item_id])[item_id]


def items_records_load(
    *, project_id: int, item_ids: Sequence[int]
) -> dict[int, tuple[ItemCalls, ItemTools]]:
    """``{item id: (recorded model calls, tool records)}`` of the items: two queries for all
    of them (the runner loads a batch of items at a time, not one item a query)."""
    out = {pk: (ItemCalls(), ItemTools()) for pk in item_ids}
    for row in EvaluationCall.objects.filter(project_id=project_id, item_id__in=list(out)).values(
        "item_id",
        "request_key",
        "model",
        "answer",
        "tool_calls",
        "prompt_tokens",
        "completion_tokens",
        "latency_ms",
    ):
        out[row["item_id"]][0].known[row["request_key"]] = CachedAnswer(
            text=row["answer"],
            model=row["model"],
            prompt_tokens=row["prompt_tokens"],
            completion_tokens=row["completion_tokens"],
            latency_ms=row["latency_ms"],
            tool_calls=tuple(row["tool_calls"] or ()),
        )
    for rec in ToolCallRecord.objects.filter(project_id=project_id, item_id__in=list(out)):
        out[rec.item_id][1].known[rec.key] = ToolRecord(
            item=str(rec.request.get("item", "")),
            name=rec.name,
            arguments=dict(rec.request.get("arguments") or {}),
            output=rec.response,
            files=files_read(rec.files),
            error=rec.error,
            seconds=rec.seconds,
        )
    return out


def item_records_store(
    *,
    run: EvaluationRun,
    item_id: int,
    endpoint: str,
    calls: ItemCalls,
    tools: ItemTools,
) -> None:
    """Store the item's new model calls and tool records (cached answers are not stored
    again)."""
    items_records_store(run=run, endpoint=endpoint, items=[(item_id, calls, tools)])


def items_records_store(
    *,
    run: EvaluationRun,
    endpoint: str,
    items: Sequence[tuple[int, ItemCalls, ItemTools]],
) -> None:
    """Store the new model calls and tool records of several items: two bulk inserts."""
    rows = [
        EvaluationCall(
            project_id=run.project_id,
            item_id=item_id,
            run=run,
            request_key=log.request_key,
            endpoint=endpoint[:500],
            model=log.answer.model[:200],
            messages=log.messages,
            tools=log.tools,
            params=log.params,
            answer=log.answer.text,
            tool_calls=list(log.answer.tool_calls),
            prompt_tokens=log.answer.prompt_tokens,
            completion_tokens=log.answer.completion_tokens,
            latency_ms=log.answer.latency_ms,
        )
        for item_id, calls, _ in items
        for log in calls.made
        if not log.cached
    ]
    if rows:
        EvaluationCall.objects.bulk_create(rows, ignore_conflicts=True)
    records = [
        ToolCallRecord(
            project_id=run.project_id,
            item_id=item_id,
            key=key,
            name=rec.name[:200],
            request={"item": rec.item, "name": rec.name, "arguments": rec.arguments},
            response=_jsonable(rec.output),
            files=files_store(rec.files),
            error=rec.error,
            seconds=rec.seconds,
        )
        for item_id, _, tools in items
        for key, rec in tools.made.items()
    ]
    if records:
        ToolCallRecord.objects.bulk_create(records, ignore_conflicts=True)


def _jsonable(value: Any) -> Any:
    import json

    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value


# --------------------------------------------------------------------------- in releases


def release_records_write(*, project_id: int, item_ids: Sequence[int], root: Any) -> Any:
    """Write the tool records of the items ``item_ids`` into the release folder ``root``
    (``benchmark.evaluation.record_files``), in item order; ``RecordsWritten``. The model
    calls stay with the project: a release carries the web as the tools saw it, not a
    model's answers."""
    from benchmark.evaluation.record_files import records_write

    def records() -> Iterable[ToolRecord]:
        rows = (
            ToolCallRecord.objects.filter(project_id=project_id, item_id__in=list(item_ids))
            .select_related(None)
            .values_list("item__external_id", "name", "request", "response", "files", "error",
                         "seconds")
            .order_by("item__position", "item_id", "id")
        )  # fmt: skip
        for external_id, name, request, response, files, error, seconds in rows.iterator(
            chunk_size=500
        ):
            yield ToolRecord(
                item=external_id,
                name=name,
                arguments=dict((request or {}).get("arguments") or {}),
                output=response,
                files=files_read(files or {}),
                error=error,
                seconds=seconds,
            )

    return records_write(root, records())


def _release_item(id_by_external: Mapping[str, int], item: str, file: str, line: int) -> int:
    """The project's id of a release record's item; FormatError naming the file and line when
    the item is not among the release's items."""
    from benchmark.formats import FormatError

    item_id = id_by_external.get(item)
    if item_id is None:
        raise FormatError(
            f"item {item!r} is not among the release's items",
            file=file,
            record=f"line {line}",
            field="item",
        )
    return item_id


def release_records_import(*, project: Any, root: Any, id_by_external: Mapping[str, int]) -> int:
    """Add the tool records of the release folder ``root`` to ``project``, each to the item
    with its id (``id_by_external``: external id -> item id); records the project already
    has are kept. How many were added. FormatError naming the line of a bad record or one
    whose item is not in the release."""
    from benchmark.evaluation.record_files import RECORDS_DIR, RECORDS_FILE, records_read

    rows = []
    for line, key, rec in records_read(root):
        item_id = _release_item(id_by_external, rec.item, f"{RECORDS_DIR}/{RECORDS_FILE}", line)
        rows.append(
            ToolCallRecord(
                project_id=project.pk,
                item_id=item_id,
                key=key,
                name=rec.name[:200],
                request={"item": rec.item, "name": rec.name, "arguments": rec.arguments},
                response=_jsonable(rec.output),
                files=files_store(rec.files),
                error=rec.error,
                seconds=rec.seconds,
            )
        )
    before = ToolCallRecord.objects.filter(project_id=project.pk).count()
    ToolCallRecord.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
    return ToolCallRecord.objects.filter(project_id=project.pk).count() - before


def call_scope(project_id: int) -> str:
    """The scope an evaluation's model calls are keyed in: the project's (a cached answer
    is never shared across projects; a release's calls are keyed again where imported)."""
    return f"project:{project_id}"


def _call_key(project_id: int, call: Any) -> str:
    from benchmark.llm.cache import request_key

    return request_key(
        model=call.model,
        messages=call.messages,
        params=call.params,
        endpoint=call.endpoint,
        scope=call_scope(project_id),
        tools=call.tools,
    )


def release_calls_write(*, project_id: int, item_ids: Sequence[int], root: Any) -> int:
    """Write the model calls the project's evaluations made on the items ``item_ids`` (the
    model-call cache a ``--replay`` answers from: messages as keyed, images by hash) into
    the release folder ``root`` (``benchmark.evaluation.record_files``), in item order; how
    many. A call whose stored key its request does not give (with the run's model or the
    answering model named) is left out: no replay could find it."""
    from benchmark.evaluation.record_files import CallRecord, calls_write

    def calls() -> Iterable[CallRecord]:
        rows = (
            EvaluationCall.objects.filter(project_id=project_id, item_id__in=list(item_ids))
            .values_list("item__external_id", "request_key", "endpoint", "model", "run__model",
                         "messages", "tools", "params", "answer", "tool_calls", "prompt_tokens",
                         "completion_tokens", "latency_ms")
            .order_by("item__position", "item_id", "id")
        )  # fmt: skip
        for row in rows.iterator(chunk_size=500):
            (external_id, key, endpoint, answer_model, run_model, messages, tools, params,
             answer, tool_calls, prompt_tokens, completion_tokens, latency_ms) = row  # fmt: skip
            for model in dict.fromkeys(m for m in (run_model, answer_model) if m):
                call = CallRecord(
                    item=external_id, endpoint=endpoint, model=model,
                    messages=list(messages or []), tools=list(tools or []),
                    params=dict(params or {}), answer=answer, answer_model=answer_model,
                    tool_calls=list(tool_calls or []), prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens, latency_ms=latency_ms,
                )  # fmt: skip
                if _call_key(project_id, call) == key:
                    yield call
                    break

    return calls_write(root, calls())


def release_calls_import(*, project: Any, root: Any, id_by_external: Mapping[str, int]) -> int:
    """Add the model calls of the release folder ``root`` to ``project``, each to the item
    with its id and keyed in this project's scope, so ``evaluate --replay`` here answers
    them; calls the project already has are kept. How many were added. FormatError naming
    the line of a bad call or one whose item is not in the release."""
    from benchmark.evaluation.record_files import CALLS_DIR, CALLS_FILE, calls_read

    before = EvaluationCall.objects.filter(project_id=project.pk).count()
    rows: list[EvaluationCall] = []
    for line, call in calls_read(root):
        item_id = _release_item(id_by_external, call.item, f"{CALLS_DIR}/{CALLS_FILE}", line)
        rows.append(
            EvaluationCall(
                project_id=project.pk,
                item_id=item_id,
                run=None,
                request_key=_call_key(project.pk, call),
                endpoint=call.endpoint[:500],
                model=(call.answer_model or call.model)[:200],
                messages=call.messages,
                tools=call.tools,
                params=call.params,
                answer=call.answer,
                tool_calls=list(call.tool_calls or []),
                prompt_tokens=call.prompt_tokens,
                completion_tokens=call.completion_tokens,
                latency_ms=call.latency_ms,
            )
        )
        if len(rows) >= 500:  # a chunk at a time: a large release's calls are never all held
            EvaluationCall.objects.bulk_create(rows, ignore_conflicts=True)
            rows = []
    EvaluationCall.objects.bulk_create(rows, ignore_conflicts=True)
    return EvaluationCall.objects.filter(project_id=project.pk).count() - before
