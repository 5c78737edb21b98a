"""LLM-I files.

* Benchmark rows (LLMI-Bench ``text_only.json``, ``mm_input.json``): a JSON array of
  ``{prompt, r1..r10[, images]}``. Image paths are relative to the file's folder.
* Training rows (verl ``train_sample.json``): ``{prompt, data_source, extra_info{image_num,
  tools, question, split}[, images]}``; ``prompt`` is a string or a chat message list.
* Model answers (``answers.json``, the evaluation-results item shape plus ``input_file``):
  ``{input_file, sample_index, prompt, answer, scores, justifications}``.

Item ids are ``<file stem>#<n>`` with ``n`` the 1-based row number, which is what the LLM-I
evaluation scripts write as ``sample_index`` (``i + 1`` over the input file). So an answer's
``(input_file, sample_index)`` names its row directly; the prompt text is used to check that,
and to find the row when ``input_file`` is absent or the index does not fit.

Image-number constraint (training rows): ``constraints["image_num"]`` keeps the raw value and
``constraints["image_count"]`` gives ``{"kind": "none"|"any"|"exact"|"at_least_one", "n"}``:
-1 none allowed, 0 unconstrained, n exactly n, 99 or "Inf" at least one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from ._jsonio import (
    MISSING,
    Overlay,
    SinkSet,
    Where,
    as_list,
    as_text,
    dataset_root,
    existing,
    expect_object,
    get_object,
    get_str,
    iter_rows,
    record_input,
    row_files,
    str_list,
)
from .base import AttachmentRecord, FormatError, ImageRef, ItemRecord, ResponseRecord

ROWS, TRAIN, ANSWERS = "rows", "train", "answers"
TEXT_FILE, IMAGE_FILE, TRAIN_FILE = "text_only.json", "mm_input.json", "train_sample.json"
AT_LEAST_ONE = 99
_CRITERION = re.compile(r"r([1-9][0-9]*)")
_IMAGE_TOKEN = "<image>"

__all__ = ["dataset_root", "image_count", "parse_record", "read", "write"]

Record = ItemRecord | ResponseRecord
Loaded = list[tuple[int, str, Any]]


def read(path: str | Path, *, benchmark_file: str | None = None) -> Iterator[Record]:
    """Records from one LLM-I file or a folder of them: benchmark and training rows first,
    then answers. ``benchmark_file`` names the rows file for answers that lack ``input_file``."""
    path = existing(path)
    wanted = row_files(path) if path.is_dir() else [path]
    files = [(f, *_load(f)) for f in wanted]
    index = _RowIndex()
    for file, kind, rows in files:
        if kind in (ROWS, TRAIN):
            for item in _items(rows, kind, file.name):
                index.add(item, kind)
                yield item
    answer_files = [(f, rows) for f, kind, rows in files if kind == ANSWERS]
    if answer_files and not path.is_dir():
        _index_siblings(index, path)
    for file, rows in answer_files:
        yield from _answers(rows, file, index, benchmark_file)


def _load(file: Path) -> tuple[str, Loaded]:
    name = file.name
    rows = list(iter_rows(file, name))
    if not rows:
        return ROWS, rows
    first = expect_object(rows[0][2], Where(name, 0))
    kind = _kind_of(first)
    if kind is None:
        raise FormatError(
            "not an LLM-I file: expected benchmark rows {prompt, r1..}, training rows "
            "{prompt, data_source, extra_info} or answers {sample_index, prompt, answer}",
            file=name,
            record=0,
        )
    return kind, rows


def parse_record(value: Any, *, source_file: str | None = None, position: int = 0) -> ItemRecord:
    """One benchmark row ``{prompt, r1..r10[, images]}`` or training row ``{prompt,
    data_source, extra_info[, images]}`` given on its own (the parsed object, or its JSON
    text), read as ``read`` reads row ``position`` (0-based) of ``source_file``; by default the
    file such a row belongs in (training rows ``train_sample.json``, rows with images
    ``mm_input.json``, others ``text_only.json``). Its id is ``<file stem>#<position + 1>``."""
    raw, record = record_input(value, Where(source_file or "row", "record"))
    record = expect_object(record, Where(source_file or "row", "record"))
    kind = _kind_of(record)
    if kind not in (ROWS, TRAIN):
        raise FormatError(
            "not an LLM-I row: expected a benchmark row {prompt, r1..} or a training row "
            "{prompt, data_source, extra_info}",
            file=source_file,
            record="record",
            field="answer" if kind == ANSWERS else "prompt",
        )
    if source_file is None:
        source_file = (
            TRAIN_FILE if kind == TRAIN else (IMAGE_FILE if record.get("images") else TEXT_FILE)
        )
    rows: Loaded = [(position, raw, record)]
    return next(_items(rows, kind, source_file))


def _kind_of(record: dict[str, Any]) -> str | None:
    if "answer" in record or "sample_index" in record or "input_file" in record:
        return ANSWERS
    if "extra_info" in record or "data_source" in record:
        return TRAIN
    if "prompt" in record:
        return ROWS
    return None


def _item_id(file_name: str, index: int) -> str:
    return f"{Path(file_name).stem}#{index + 1}"


# --------------------------------------------------------------------------------------------
# Benchmark and training rows
# --------------------------------------------------------------------------------------------


def _items(rows: Loaded, kind: str, name: str) -> Iterator[ItemRecord]:
    for index, raw, value in rows:
        external_id = _item_id(name, index)
        where = Where(name, external_id)
        record = expect_object(value, where)
        if kind == TRAIN:
            yield _train_item(record, raw, name, index, where)
        else:
            yield _row_item(record, raw, name, index, where)


def _row_item(record: dict[str, Any], raw: str, name: str, index: int, where: Where) -> ItemRecord:
    prompt = get_str(record, "prompt", where, required=True, nonempty=True) or ""
    images = str_list(record.get("images"), where, "images")
    return ItemRecord(
        external_id=str(where.record),
        source_file=name,
        raw=raw,
        position=index,
        query=prompt,
        modality="image" if images else "text",
        images=[ImageRef(path=p, role="input", position=i) for i, p in enumerate(images)],
        rubric=_rubric(record, where),
    )


def _rubric(record: dict[str, Any], where: Where | None) -> list[dict[str, Any]]:
    criteria = []
    for key, text in record.items():
        match = _CRITERION.fullmatch(key)
        if match is None:
            continue
        if not isinstance(text, str):
            if where is None:
                continue
            raise where.error("criterion must be a string", key)
        criteria.append((int(match.group(1)), key, text))
    criteria.sort()
    return [{"key": key, "text": text} for _, key, text in criteria]


def _train_item(
    record: dict[str, Any], raw: str, name: str, index: int, where: Where
) -> ItemRecord:
    prompt = record.get("prompt")
    if prompt is None:
        raise where.error("required field is missing", "prompt")
    if not isinstance(prompt, str | list):
        raise where.error("must be a string or a list of chat messages", "prompt")
    if isinstance(prompt, list):
        for i, message in enumerate(prompt):
            expect_object(message, where, f"prompt[{i}]")
    get_str(record, "data_source", where)
    extra = get_object(record, "extra_info", where) or {}
    question = get_str(extra, "question", where, field="extra_info.question")
    query = question if question is not None else _prompt_text(prompt)
    if not query.strip():
        raise where.error("no question text", "extra_info.question")

    constraints: dict[str, Any] = {}
    if "image_num" in extra:
        constraints["image_num"] = extra["image_num"]
        constraints["image_count"] = image_count(extra["image_num"], where)
    if "tools" in extra:
        constraints["tools"] = list(str_list(extra["tools"], where, "extra_info.tools"))
    get_str(extra, "split", where, field="extra_info.split")

    images = _train_images(record.get("images"), where)
    return ItemRecord(
        external_id=str(where.record),
        source_file=name,
        raw=raw,
        position=index,
        query=query,
        modality="image" if images else "text",
        images=[ImageRef(path=p, role="input", position=i) for i, p in enumerate(images)],
        constraints=constraints,
    )


def _prompt_text(prompt: Any) -> str:
    """The user's words in a training prompt: the string itself, or the last user message with
    ``<image>`` placeholders removed."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        for message in reversed(prompt):
            if isinstance(message, dict) and message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, str):
                    return content.replace(_IMAGE_TOKEN, "").strip()
    return ""


def _train_images(value: Any, where: Where) -> list[str]:
    """``images`` as paths or ``{"image": path}`` dicts; entries holding bytes have no path."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise where.error("must be a list", "images")
    paths = []
    for i, entry in enumerate(value):
        if isinstance(entry, str):
            paths.append(entry)
        elif isinstance(entry, dict):
            path = entry.get("image", entry.get("path"))
            if isinstance(path, str):
                paths.append(path)
            elif path is not None:
                raise where.error("image path must be a string", f"images[{i}]")
        else:
            raise where.error("must be a path or an object", f"images[{i}]")
    return paths


def image_count(value: Any, where: Where | None = None) -> dict[str, Any]:
    """LLM-I's image-number constraint in plain words (see the module docstring)."""
    number: Any = value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("inf", "+inf", "infinity"):
            return {"kind": "at_least_one", "n": None}
        try:
            number = int(word)
        except ValueError:
            number = None
    elif isinstance(value, float):
        if value == math.inf:
            return {"kind": "at_least_one", "n": None}
        number = int(value) if value.is_integer() else None
    if isinstance(number, bool) or not isinstance(number, int) or number < -1:
        if where is None:
            raise ValueError(f"bad image_num {value!r}")
        raise where.error(
            "must be -1 (no images), 0 (any), a count n, or 99/'Inf' (at least one)",
            "extra_info.image_num",
        )
    if number == -1:
        return {"kind": "none", "n": None}
    if number == 0:
        return {"kind": "any", "n": None}
    if number == AT_LEAST_ONE:
        return {"kind": "at_least_one", "n": None}
    return {"kind": "exact", "n": number}


# --------------------------------------------------------------------------------------------
# Answers
# --------------------------------------------------------------------------------------------


class _RowIndex:
    """Benchmark rows by file name and row number, and by prompt text, to place answers."""

    def __init__(self) -> None:
        self.by_file: dict[str, dict[int, tuple[str, str]]] = {}
        self.by_prompt: dict[str, list[str]] = {}
        self.bench_files: list[str] = []

    def add(self, item: ItemRecord, kind: str) -> None:
        rows = self.by_file.setdefault(item.source_file, {})
        rows[item.position + 1] = (item.external_id, item.query)
        if kind == ROWS:  # answers are written for benchmark rows, not training rows
            self.by_prompt.setdefault(item.query, []).append(item.external_id)
            if item.source_file not in self.bench_files:
                self.bench_files.append(item.source_file)

    def resolve(
        self, input_file: str | None, number: int | None, prompt: str | None, where: Where
    ) -> str:
        if input_file:
            name = Path(input_file.replace("\\", "/")).name
            rows = self.by_file.get(name)
            if rows is None:
                if number is None:
                    raise where.error("needed to find the row", "sample_index")
                return f"{Path(name).stem}#{number}"
            row = rows.get(number) if number is not None else None
            if row is not None and (prompt is None or row[1] == prompt):
                return row[0]
            if prompt is not None:
                hits = [eid for eid, text in rows.values() if text == prompt]
                if len(hits) == 1:
                    return hits[0]
            if row is not None:
                return row[0]
            raise where.error(
                f"no row {number} in {name} ({len(rows)} rows) and no row with this prompt",
                "sample_index",
            )
        if prompt is not None:
            hits = self.by_prompt.get(prompt, [])
            if len(hits) == 1:
                return hits[0]
        if len(self.bench_files) == 1 and number is not None:
            row = self.by_file[self.bench_files[0]].get(number)
            if row is not None:
                return row[0]
        raise where.error(
            "cannot tell which benchmark row this answer belongs to; add input_file, or read "
            "the answers together with their benchmark file",
            "input_file",
        )


def _index_siblings(index: _RowIndex, answers_path: Path) -> None:
    """When an answers file is read alone, learn the benchmark rows next to it (not yielded)."""
    try:
        siblings = [f for f in row_files(answers_path.parent) if f != answers_path]
    except FormatError:
        return
    for file in siblings:
        try:
            kind, rows = _load(file)
            if kind == ROWS:
                for item in _items(rows, kind, file.name):
                    index.add(item, kind)
        except FormatError:
            continue


def _model_name(file: Path) -> str:
    if file.stem == "evaluation_results" and file.parent.name == "json_results":
        return file.parent.parent.name or file.stem
    return file.stem


def _sample_index(record: dict[str, Any], where: Where) -> int | None:
    value = record.get("sample_index")
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise where.error("must be a row number", "sample_index") from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise where.error("must be a row number (integer >= 0)", "sample_index")
    return value


def _answers(
    rows: Loaded, file: Path, index: _RowIndex, benchmark_file: str | None
) -> Iterator[ResponseRecord]:
    name = file.name
    model = _model_name(file)
    checked = []
    for i, raw, value in rows:
        where = Where(name, i)
        record = expect_object(value, where)
        answer = get_str(record, "answer", where, required=True) or ""
        input_file = get_str(record, "input_file", where) or benchmark_file
        prompt = get_str(record, "prompt", where)
        number = _sample_index(record, where)
        for key in ("scores", "justifications"):
            get_object(record, key, where)
        checked.append((i, raw, record, answer, input_file, prompt, number, where))
    # LLM-I numbers rows from 1; a file that uses 0 is taken to count from 0.
    shift = 1 if any(c[6] == 0 for c in checked) else 0
    for i, raw, record, answer, input_file, prompt, number, where in checked:
        row_number = None if number is None else number + shift
        item_id = index.resolve(input_file, row_number, prompt, where)
        yield ResponseRecord(
            item_id=item_id,
            key=f"{name}#{i}",
            source_file=name,
            raw=raw,
            origin="model",
            model_name=model,
            position=i,
            text=answer,
            extra={k: v for k, v in record.items() if k != "answer"},
        )


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def write(
    out: str | Path,
    items: Iterable[ItemRecord],
    attachments: Iterable[AttachmentRecord] = (),
) -> list[Path]:
    """Rows go to ``out/<source_file>``, answers (ResponseRecords other than "gt") to
    ``out/<source_file>`` (``answers.json`` by default), as pretty JSON arrays."""
    out = Path(out)
    with SinkSet(out) as sinks:
        for item in items:
            where = Where(item.source_file or "rows", item.external_id)
            ov = Overlay(item.raw, where, partial(_row_skeleton, item))
            if _is_training(ov.value):
                _overlay_train(ov, item)
            else:
                _overlay_row(ov, item)
            target = item.source_file or _default_file(item)
            sinks.get(target, where).add(item.position, ov.value, where)
        for att in attachments:
            if not isinstance(att, ResponseRecord) or att.key == "gt":
                continue
            where = Where(att.source_file or "answers.json", att.key)
            ov = Overlay(att.raw, where, partial(_answer_skeleton, att))
            ov.put(("answer",), att.text, as_text)
            for key, value in att.extra.items():
                ov.put((key,), value)
            sinks.get(att.source_file or "answers.json", where).add(att.position, ov.value, where)
    return sinks.paths


def _is_training(record: dict[str, Any]) -> bool:
    return "extra_info" in record or "data_source" in record


def _default_file(item: ItemRecord) -> str:
    if "image_num" in item.constraints:
        return TRAIN_FILE
    return IMAGE_FILE if item.modality == "image" else TEXT_FILE


def _row_skeleton(item: ItemRecord) -> dict[str, Any]:
    images = [im.path for im in sorted(item.images, key=lambda im: im.position)]
    constraints = item.constraints
    if "image_num" in constraints or "image_count" in constraints:
        # Keys in the order of verl's training rows: prompt, images, data_source, extra_info
        # {image_num, tools, split, question}.
        record: dict[str, Any] = {"prompt": item.query}
        if images:
            record["images"] = [{"image": p} for p in images]
        record["data_source"] = "interleaved_mm" if images else "interleaved"
        extra: dict[str, Any] = {}
        image_num = _image_num(constraints, MISSING)
        if image_num is not MISSING:
            extra["image_num"] = image_num
        extra["tools"] = list(constraints.get("tools", []))
        extra["split"] = "train"
        extra["question"] = item.query
        record["extra_info"] = extra
        return record
    record = {"prompt": item.query}
    if images:
        record["images"] = images
    return record


def _overlay_row(ov: Overlay, item: ItemRecord) -> None:
    ov.put(("prompt",), item.query, as_text)
    current = [{"key": str(c.get("key", "")), "text": c.get("text", "")} for c in item.rubric]
    if current == _rubric(ov.value, None):
        return
    keep = {c["key"] for c in current}
    for key in [k for k in ov.value if _CRITERION.fullmatch(k) and k not in keep]:
        del ov.value[key]
    for criterion in current:
        ov.set((criterion["key"],), criterion["text"])


def _overlay_train(ov: Overlay, item: ItemRecord) -> None:
    prompt = ov.get("prompt")
    question = ov.get("extra_info", "question")
    old_query = question if isinstance(question, str) else _prompt_text(prompt)
    if item.query != old_query:
        if isinstance(question, str) or not isinstance(prompt, str | list):
            ov.set(("extra_info", "question"), item.query)
        new_prompt = _replace_question(prompt, old_query, item.query)
        if new_prompt is not MISSING:
            ov.set(("prompt",), new_prompt)
    constraints = item.constraints
    if "image_num" in constraints or "image_count" in constraints:
        old = ov.get("extra_info", "image_num")
        wanted = _image_num(constraints, old)
        if wanted is not MISSING and wanted != old:
            ov.set(("extra_info", "image_num"), wanted)
    if "tools" in constraints:
        ov.put(("extra_info", "tools"), constraints["tools"], as_list)


def _replace_question(prompt: Any, old: str, new: str) -> Any:
    """The prompt with the question text swapped, or MISSING if it cannot be located."""
    if isinstance(prompt, str):
        if prompt == old:
            return new
        return prompt.replace(old, new, 1) if old and old in prompt else MISSING
    if isinstance(prompt, list):
        for i in range(len(prompt) - 1, -1, -1):
            message = prompt[i]
            if isinstance(message, dict) and message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, str) and old and old in content:
                    updated = list(prompt)
                    updated[i] = {**message, "content": content.replace(old, new, 1)}
                    return updated
                return MISSING
    return MISSING


def _image_num(constraints: dict[str, Any], old: Any) -> Any:
    """The raw image_num to write: an edited ``image_num`` wins, else an edited
    ``image_count``, else the old value."""
    raw = constraints.get("image_num", MISSING)
    if raw is not MISSING and raw != (None if old is MISSING else old):
        return raw
    count = constraints.get("image_count")
    if not isinstance(count, dict):
        return old
    try:
        previous = image_count(old) if old is not MISSING else None
    except ValueError:
        previous = None
    if count == previous:
        return old
    kind = count.get("kind")
    if kind == "none":
        return -1
    if kind == "any":
        return 0
    if kind == "at_least_one":
        return old if previous and previous["kind"] == "at_least_one" else AT_LEAST_ONE
    if kind == "exact" and isinstance(count.get("n"), int):
        return count["n"]
    return old


def _answer_skeleton(att: ResponseRecord) -> dict[str, Any]:
    stem, _, number = att.item_id.rpartition("#")
    record: dict[str, Any] = {
        "input_file": f"{stem}.json" if stem else "",
        "sample_index": int(number) if number.isdigit() else number,
        "prompt": att.extra.get("prompt", ""),
        "answer": att.text,
        "scores": {},
        "justifications": {},
    }
    return record
