"""ATP-Bench ``data.jsonl``: one JSON object per line with ``trace_id``, ``query``,
``image_query``, ``doc`` [{text, images}], ``images``, ``gt``, ``category`` and ``intent``.

The ground-truth answer ``gt`` becomes a ResponseRecord (key "gt") inside the item. Document
images keep their ``img_index`` as ImageRef.position; the VQA query image has role "query".
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

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
    get_id,
    get_str,
    is_str_list,
    iter_jsonl,
    record_input,
    rel,
    str_list,
)
from .base import AttachmentRecord, FormatError, ImageRef, ItemRecord, ResponseRecord

DATA_FILE = "data.jsonl"

__all__ = ["DATA_FILE", "dataset_root", "parse_record", "raw_fields", "read", "stream", "write"]


def read(path: str | Path) -> Iterator[ItemRecord]:
    """Items from a ``.jsonl`` file or a folder holding ``data.jsonl``, streamed line by line."""
    file = _locate(existing(path))
    root = file.parent
    name = rel(root, file)
    ids = IdRegistry("trace_id")
    for position, (lineno, raw, value) in enumerate(iter_jsonl(file, name)):
        yield _item(value, raw, name, position, lineno, ids)


def parse_record(value: Any, *, source_file: str = DATA_FILE, position: int = 0) -> ItemRecord:
    """One ``data.jsonl`` line given on its own (the parsed object, or the line's text), read
    exactly as ``read`` reads it in a file."""
    raw, record = record_input(value, Where(source_file, "record"))
    return _item(record, raw, source_file, position, position + 1, IdRegistry("trace_id"))


def _locate(path: Path) -> Path:
    if path.is_file():
        return path
    data = path / DATA_FILE
    if data.is_file():
        return data
    candidates = sorted(path.glob("*.jsonl"))
    if len(candidates) == 1:
        return candidates[0]
    raise FormatError(f"no {DATA_FILE} in folder {path}")


def _item(
    value: Any, raw: str, name: str, position: int, lineno: int, ids: IdRegistry
) -> ItemRecord:
    where = Where(name, f"line {lineno}")
    record = expect_object(value, where)
    trace_id = get_id(record, "trace_id", where)
    where.record = trace_id
    ids.add(trace_id, where)
    query = get_str(record, "query", where, required=True, nonempty=True) or ""

    query_images = _query_images(record.get("image_query"), where)
    documents = _documents(record.get("doc"), where)
    image_paths = str_list(record.get("images"), where, "images")
    images = [ImageRef(p, "document", i) for i, p in enumerate(image_paths)]
    images += [ImageRef(p, "query", i) for i, p in enumerate(query_images)]

    item = ItemRecord(
        external_id=trace_id,
        source_file=name,
        raw=raw,
        position=position,
        query=query,
        modality="image" if query_images else "text",
        documents=documents,
        images=images,
        category=get_str(record, "category", where) or "",
        intent=get_str(record, "intent", where) or "",
    )
    if "gt" in record:
        gt = get_str(record, "gt", where)
        item.responses.append(
            ResponseRecord(
                item_id=trace_id,
                key="gt",
                source_file=name,
                origin="ground_truth",
                text=gt or "",
            )
        )
    return item


def raw_fields(item: ItemRecord) -> list[tuple[tuple[str | int, ...], str, Any]]:
    """The long strings of an item's raw record that are also parsed into columns, as
    ``(path in the record, value, source)`` for storing them once (see ``punch_holes``): the
    query, each document's text and the ground-truth answer. A document given as a plain
    string has no such path; the check in ``punch_holes`` then leaves it in the raw text."""
    fields: list[tuple[tuple[str | int, ...], str, Any]] = [(("query",), item.query, ["query"])]
    for i, doc in enumerate(item.documents):
        fields.append((("doc", i, "text"), doc.get("text", ""), ["documents", i, "text"]))
    for response in item.responses:
        if response.key == "gt":
            fields.append((("gt",), response.text, ["response", "gt"]))
    return fields


def _query_images(value: Any, where: Where) -> list[str]:
    """``image_query``: null, one path, or (allowed, since unconfirmed) a list of paths."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    return str_list(value, where, "image_query")


def _documents(value: Any, where: Where) -> list[dict[str, Any]]:
    """``doc`` as [{"text", "images"}]. A plain string or a list of strings is also accepted,
    since the exact ATP-Bench shape is unconfirmed."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"text": value, "images": []}]
    if not isinstance(value, list):
        raise where.error("must be a list of {text, images} objects", "doc")
    documents = []
    for entry in value:
        if type(entry) is dict:
            text = entry.get("text")
            images = entry.get("images")
            if type(text) is str and is_str_list(images):
                documents.append({"text": text, "images": images})
                continue
        documents.append(_document(entry, len(documents), where))
    return documents


def _document(entry: Any, i: int, where: Where) -> dict[str, Any]:
    """One ``doc`` entry in any accepted shape (the slow, checking path)."""
    if isinstance(entry, str):
        return {"text": entry, "images": []}
    if not isinstance(entry, dict):
        raise where.error("must be an object or a string", f"doc[{i}]")
    text = entry.get("text")
    if text is not None and not isinstance(text, str):
        raise where.error("must be a string", f"doc[{i}].text")
    images = str_list(entry.get("images"), where, f"doc[{i}].images")
    return {"text": text or "", "images": list(images)}


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def write(
    out: str | Path,
    items: Iterable[ItemRecord],
    attachments: Iterable[AttachmentRecord] = (),
) -> list[Path]:
    """Write ``out`` itself when it names a ``.jsonl`` file, else ``out/<source_file>``
    (``out/data.jsonl`` by default). Unchanged records are written as their exact raw line.
    ATP-Bench has no separate attachment files, so ``attachments`` is ignored."""
    out = Path(out)
    single = out.suffix.lower() == ".jsonl"
    root = out.parent if single else out
    with SinkSet(root) as sinks:
        for item in items:
            where = Where(item.source_file or DATA_FILE, item.external_id)
            target = out.name if single else (item.source_file or DATA_FILE)
            ov = _overlaid(item, where)
            sinks.get(target, where).add(item.position, ov.value, where, line=ov.line())
    if not sinks.paths:  # an empty dataset still gets its (empty) data file
        empty = out if single else out / DATA_FILE
        empty.parent.mkdir(parents=True, exist_ok=True)
        empty.write_bytes(b"")
        return [empty]
    return sinks.paths


def stream(items: Iterable[ItemRecord], chunk_bytes: int = 1 << 18) -> Iterator[bytes]:
    """The ``data.jsonl`` that ``write`` writes for ``items`` given in position order, as
    chunks of about ``chunk_bytes`` (for sending while the records are still being read):
    byte for byte the same file, with nothing written to disk."""
    buffer: list[bytes] = []
    size = 0
    for item in items:
        line = _overlaid(item, Where(item.source_file or DATA_FILE, item.external_id)).line()
        buffer.append(line)
        buffer.append(b"\n")
        size += len(line) + 1
        if size >= chunk_bytes:
            yield b"".join(buffer)
            buffer.clear()
            size = 0
    if buffer:
        yield b"".join(buffer)


def _overlaid(item: ItemRecord, where: Where) -> Overlay:
    ov = Overlay(item.raw, where, partial(_skeleton, item))
    _overlay(ov, item)
    return ov


def _skeleton(item: ItemRecord) -> dict[str, Any]:
    query_images = [im.path for im in item.images if im.role == "query"]
    documents = sorted((im for im in item.images if im.role == "document"), key=_pos)
    return {
        "trace_id": item.external_id,
        "query": item.query,
        "image_query": query_images[0] if len(query_images) == 1 else (query_images or None),
        "doc": [],
        "images": [im.path for im in documents],
        "gt": "",
        "category": "",
        "intent": "",
    }


def _pos(image: ImageRef) -> int:
    return image.position


def _overlay(ov: Overlay, item: ItemRecord) -> None:
    ov.put(("trace_id",), item.external_id, as_text)
    ov.put(("query",), item.query, as_text)
    ov.put(("doc",), item.documents, _decode_doc, _encode_doc)
    ov.put(("category",), item.category, as_text)
    ov.put(("intent",), item.intent, as_text)
    for response in item.responses:
        if response.key == "gt":
            ov.put(("gt",), response.text, as_text)


def _decode_doc(value: Any) -> list[dict[str, Any]]:
    try:
        return _documents(None if value is MISSING else value, Where(""))
    except FormatError:
        return []


def _encode_doc(new: list[dict[str, Any]], old: Any) -> Any:
    plain = all(not d.get("images") for d in new)
    if isinstance(old, str) and plain and len(new) == 1:
        return new[0].get("text", "")
    if isinstance(old, list) and old and all(isinstance(d, str) for d in old) and plain:
        return [d.get("text", "") for d in new]
    previous = old if isinstance(old, list) else []
    encoded = []
    for i, doc in enumerate(new):
        base = dict(previous[i]) if i < len(previous) and isinstance(previous[i], dict) else {}
        base["text"] = doc.get("text", "")
        base["images"] = list(doc.get("images", []))
        encoded.append(base)
    return encoded
