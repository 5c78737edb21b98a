"""JSON plumbing shared by the format modules: reading with located errors, typed field checks,
overlaying edited fields on a record's raw JSON, and streaming writers. No Django here."""

from __future__ import annotations

import ast
import json
import math
import os
import re
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from .base import FormatError

BOM = b"\xef\xbb\xbf"
_WS = re.compile(r"[ \t\n\r]*")


class _Missing:
    """Marks a key that is absent from a raw record (distinct from JSON null)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


# --------------------------------------------------------------------------------------------
# Where an error happened, and typed field access
# --------------------------------------------------------------------------------------------


class Where:
    """The file and record being read, so every check can raise a located FormatError."""

    __slots__ = ("file", "record")

    def __init__(self, file: str, record: str | int | None = None) -> None:
        self.file = file
        self.record = record

    def error(self, message: str, field: str | None = None) -> FormatError:
        return FormatError(message, file=self.file, record=self.record, field=field)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def expect_object(value: Any, where: Where, field: str | None = None) -> dict[str, Any]:
    if not isinstance(value, dict):
        what = "record" if field is None else "value"
        raise where.error(f"{what} must be a JSON object, got {_kind(value)}", field)
    return value


def get_str(
    obj: dict[str, Any],
    key: str,
    where: Where,
    *,
    required: bool = False,
    nonempty: bool = False,
    field: str | None = None,
) -> str | None:
    """A string field; None when absent or null (an error if ``required``). ``nonempty`` also
    rejects a blank string."""
    value = obj.get(key)
    name = field or key
    if value is None:
        if required:
            raise where.error(
                "required field is missing" if key not in obj else "must not be null", name
            )
        return None
    if not isinstance(value, str):
        raise where.error(f"must be a string, got {_kind(value)}", name)
    if nonempty and not value.strip():
        raise where.error("must not be empty", name)
    return value


def get_id(obj: dict[str, Any], key: str, where: Where, *, field: str | None = None) -> str:
    """A required identifier given as a non-empty string or an integer; returned as a string."""
    value = obj.get(key)
    name = field or key
    if value is None:
        raise where.error(
            "required field is missing" if key not in obj else "must not be null", name
        )
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise where.error(f"must be a string or an integer, got {_kind(value)}", name)
    text = str(value)
    if not text.strip():
        raise where.error("must not be empty", name)
    return text


def get_object(
    obj: dict[str, Any], key: str, where: Where, *, required: bool = False, field: str | None = None
) -> dict[str, Any] | None:
    value = obj.get(key)
    name = field or key
    if value is None:
        if required:
            raise where.error(
                "required field is missing" if key not in obj else "must not be null", name
            )
        return None
    if not isinstance(value, dict):
        raise where.error(f"must be an object, got {_kind(value)}", name)
    return value


def is_str_list(value: Any) -> bool:
    """True for a list of strings. (``str.join`` checks the entries in C, which matters when
    reading tens of thousands of records.)"""
    if type(value) is not list:
        return False
    try:
        "".join(value)
    except TypeError:
        return False
    return True


def str_list(value: Any, where: Where, field: str) -> list[str]:
    """A list of strings (null counts as empty)."""
    if value is None:
        return []
    if is_str_list(value):
        return value
    if not isinstance(value, list):
        raise where.error(f"must be a list of strings, got {_kind(value)}", field)
    for i, entry in enumerate(value):
        if not isinstance(entry, str):
            raise where.error(f"must be a string, got {_kind(entry)}", f"{field}[{i}]")
    return value


def object_list(value: Any, where: Where, field: str) -> list[dict[str, Any]]:
    """A list of JSON objects (null counts as empty)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise where.error(f"must be a list of objects, got {_kind(value)}", field)
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise where.error(f"must be an object, got {_kind(entry)}", f"{field}[{i}]")
    return value


class IdRegistry:
    """Rejects a second record with the same id in one read."""

    def __init__(self, field: str) -> None:
        self.field = field
        self._seen: set[str] = set()

    def add(self, ident: str, where: Where) -> None:
        if ident in self._seen:
            raise where.error(f"duplicate id {ident!r}", self.field)
        self._seen.add(ident)


# --------------------------------------------------------------------------------------------
# Python literals (m&m's plan strings, LLM-I tags)
# --------------------------------------------------------------------------------------------


def literal(text: str, where: Where, field: str) -> Any:
    """Parse a Python literal and make sure the result can round-trip through JSON."""
    try:
        value = ast.literal_eval(text)
    except Exception as exc:  # SyntaxError, ValueError, MemoryError, RecursionError, ...
        detail = exc.msg if isinstance(exc, SyntaxError) and exc.msg else type(exc).__name__
        raise where.error(f"not a valid Python literal ({detail})", field) from None
    try:
        return _jsonable(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise where.error(f"Python literal holds a value JSON cannot carry: {exc}", field) from None


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if not -(2**63) <= value < 2**64:
            raise ValueError(f"integer {value} is too large")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} is not a finite number")
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"object key {k!r} is not a string")
            out[k] = _jsonable(v)
        return out
    raise TypeError(f"{type(value).__name__} value {value!r}")


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


def existing(path: str | os.PathLike[str]) -> Path:
    try:
        p = Path(path)
        found = p.exists()
    except (OSError, TypeError, ValueError):
        found = False
    if not found:
        raise FormatError(f"no such file or folder: {path}")
    return p


def dataset_root(path: str | os.PathLike[str]) -> Path:
    """The folder that record paths (``source_file``, ImageRef.path) are relative to, for the
    single-folder formats: the folder given, or the folder holding the file given."""
    p = Path(path)
    return p if p.is_dir() else p.parent


def rel(root: Path, path: Path) -> str:
    """``path`` relative to ``root``, with forward slashes."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def read_bytes(path: Path, name: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read file ({exc.strerror or exc})", file=name) from None


def read_text(path: Path, name: str) -> str:
    data = read_bytes(path, name)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FormatError(f"not UTF-8 text (byte {exc.start})", file=name) from None


def _loads(data: bytes | str, where: Where, prefix: str = "") -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise where.error(f"{prefix}not valid JSON: {exc}") from None


def record_input(value: Any, where: Where, *, pretty: bool = False) -> tuple[str, Any]:
    """One record given on its own (not read from a file), as (raw text, value): JSON text is
    kept as given (a JSON Lines line without its line break; a whole JSON file, ``pretty``,
    exactly); any other value is the parsed record, written as the format's files hold it
    (compact for a JSON Lines line, indented for a whole JSON file)."""
    if isinstance(value, bytes | str):
        text = value.decode("utf-8") if isinstance(value, bytes) else value
        text = text.removeprefix("\ufeff")
        if not pretty:  # a line of JSON Lines: its text without the line break
            text = text.strip()
        return text, _loads(text, where)
    if pretty:
        return (dumps(value, where, pretty=True) + b"\n").decode(), value
    return dumps(value, where).decode(), value


def load_json(path: Path, name: str) -> tuple[str, Any]:
    """A whole JSON document: (exact text, value)."""
    data = read_bytes(path, name)
    if data.startswith(BOM):
        data = data[len(BOM) :]
    value = _loads(data, Where(name))
    return data.decode("utf-8"), value


def iter_jsonl(path: Path, name: str) -> Iterator[tuple[int, str, Any]]:
    """JSON Lines, streamed: (line number, exact line text, value) for each non-blank line."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise FormatError(f"cannot read file ({exc.strerror or exc})", file=name) from None
    with fh:
        lineno = 0
        try:
            for line in fh:
                lineno += 1
                if lineno == 1 and line.startswith(BOM):
                    line = line[len(BOM) :]
                text = line.strip()
                if not text:
                    continue
                try:
                    value = orjson.loads(text)
                except orjson.JSONDecodeError as exc:
                    raise FormatError(
                        f"line {lineno}: not valid JSON: {exc}", file=name, record=f"line {lineno}"
                    ) from None
                yield lineno, text.decode("utf-8"), value
        except OSError as exc:
            raise FormatError(
                f"cannot read file after line {lineno} ({exc.strerror or exc})", file=name
            ) from None


def iter_json_array(path: Path, name: str) -> Iterator[tuple[int, str, Any]]:
    """A JSON array of records: (index, exact text of the element, value)."""
    data = read_bytes(path, name)
    if data.startswith(BOM):
        data = data[len(BOM) :]
    values = _loads(data, Where(name))
    if not isinstance(values, list):
        raise FormatError(f"expected a JSON array of records, got {_kind(values)}", file=name)
    spans = _element_texts(data.decode("utf-8"), len(values))
    for i, value in enumerate(values):
        raw = spans[i] if spans is not None else orjson.dumps(value).decode()
        yield i, raw, value


def _element_texts(text: str, count: int) -> list[str] | None:
    """Exact source text of each element of a top-level JSON array (already known valid).
    Returns None if the spans cannot be recovered, in which case callers re-serialize."""
    decoder = json.JSONDecoder()
    out: list[str] = []
    try:
        pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
        if text[pos] != "[":
            return None
        pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
        while len(out) < count:
            _, end = decoder.raw_decode(text, pos)
            out.append(text[pos:end])
            pos = _WS.match(text, end).end()  # type: ignore[union-attr]
            if text[pos] == ",":
                pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    except (ValueError, IndexError, RecursionError):
        return None
    return out


def iter_rows(path: Path, name: str) -> Iterator[tuple[int, str, Any]]:
    """Records from a ``.jsonl`` file (streamed) or a JSON array file; index is 0-based."""
    if path.suffix.lower() == ".jsonl":
        for index, (_, raw, value) in enumerate(iter_jsonl(path, name)):
            yield index, raw, value
    else:
        yield from iter_json_array(path, name)


def first_record(path: Path, name: str) -> Any:
    """The first record of a rows file (or MISSING if it has none), for telling files apart."""
    for _, _, value in iter_rows(path, name):
        return value
    return MISSING


def row_files(folder: Path) -> list[Path]:
    """``*.json`` and ``*.jsonl`` files directly inside ``folder``, by name."""
    try:
        entries = sorted(folder.iterdir())
    except OSError as exc:
        raise FormatError(f"cannot list folder ({exc.strerror or exc})", file=str(folder)) from None
    return [p for p in entries if p.is_file() and p.suffix.lower() in (".json", ".jsonl")]


# --------------------------------------------------------------------------------------------
# Overlaying parsed fields on the raw record
# --------------------------------------------------------------------------------------------


def as_text(value: Any) -> str:
    """How a raw scalar shows up in a parsed text field."""
    if value is MISSING or value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return orjson.dumps(value).decode()


def as_list(value: Any) -> Any:
    return [] if value is MISSING or value is None else value


def as_dict(value: Any) -> Any:
    return {} if value is MISSING or value is None else value


def as_value(value: Any) -> Any:
    return None if value is MISSING else value


def keep_type(new: Any, old: Any) -> Any:
    """Write ``new`` in the JSON type ``old`` had, when the text allows it (an int id stays an
    int, a numeric answer stays a number)."""
    if not isinstance(new, str) or isinstance(old, bool):
        return new
    try:
        if isinstance(old, int) and str(int(new)) == new:
            return int(new)
        if isinstance(old, float):
            number = float(new)
            if math.isfinite(number):
                return number
    except ValueError:
        pass
    return new


class Overlay:
    """A record's raw JSON with the app's current field values laid over it. A key is only
    rewritten when the current value differs from what reading the raw record gives, so unknown
    keys, key order, nulls and exact types survive an unchanged round trip."""

    def __init__(
        self,
        raw: str,
        where: Where,
        skeleton: Callable[[], dict[str, Any]],
    ) -> None:
        self.raw = raw
        self.where = where
        if raw:
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise where.error(f"stored raw record is not valid JSON: {exc}") from None
            if not isinstance(value, dict):
                raise where.error("stored raw record is not a JSON object")
            self.value: dict[str, Any] = value
            self.changed = False
        else:
            self.value = skeleton()
            self.changed = True

    def get(self, *path: str) -> Any:
        node: Any = self.value
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return MISSING
            node = node[key]
        return node

    def put(
        self,
        path: tuple[str, ...],
        current: Any,
        decode: Callable[[Any], Any] = as_value,
        encode: Callable[[Any, Any], Any] = keep_type,
    ) -> None:
        old = self.get(*path)
        if decode(old) == current:
            return
        self.set(path, encode(current, old))

    def set(self, path: tuple[str, ...], value: Any) -> None:
        node = self.value
        for key in path[:-1]:
            child = node.get(key)
            if not isinstance(child, dict):
                child = node[key] = {}
            node = child
        node[path[-1]] = value
        self.changed = True

    def line(self) -> bytes:
        """Compact JSON for a JSONL line; the raw text itself when nothing changed (and it is
        one line: raw text from a pretty JSON array is not)."""
        if not self.changed and "\n" not in self.raw and "\r" not in self.raw:
            return self.raw.encode()
        return dumps(self.value, self.where)

    def document(self) -> bytes:
        """A whole pretty JSON file; the raw text itself when nothing changed."""
        if not self.changed:
            return self.raw.encode()
        return dumps(self.value, self.where, pretty=True) + b"\n"


def dumps(value: Any, where: Where, *, pretty: bool = False) -> bytes:
    option = orjson.OPT_NON_STR_KEYS | (orjson.OPT_INDENT_2 if pretty else 0)
    try:
        return orjson.dumps(value, option=option)
    except (orjson.JSONEncodeError, TypeError) as exc:
        raise where.error(f"cannot write record as JSON: {exc}") from None


def _plain_float(value: float) -> bool:
    return math.isfinite(value) and "e" not in repr(value)


def plain_json(value: Any) -> bool:
    """No float anywhere in ``value`` (dicts, lists and tuples walked) that orjson writes
    otherwise than ``json``: NaN, infinity, or one written with an exponent (``1e-05``,
    which orjson writes ``0.00001``). Every other float both write as ``repr`` does, and
    strings, integers, booleans and null alike (every code point, escapes included).
    Anything but those, dicts, lists and tuples (a date, a dataclass, which orjson writes and
    ``json`` refuses) is not plain either. Walked with a stack, exact types first: a
    request's ~500 values in ~0.04 ms."""
    stack = [value]
    while stack:
        v = stack.pop()
        kind = type(v)
        if kind is str or kind is int or kind is bool or v is None:
            continue
        if kind is dict or (kind is not list and kind is not tuple and isinstance(v, dict)):
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            stack.extend(v)
        elif isinstance(v, float):
            if not _plain_float(v):
                return False
        elif not isinstance(v, str | int):
            return False
    return True


def indented_json(value: Any) -> bytes:
    """``json.dumps(value, ensure_ascii=False, indent=2)`` as UTF-8 bytes, the same bytes
    exactly: written by orjson where it writes them too (``plain_json`` values with string
    keys and integers within 64 bits), ~50 times faster than ``json``'s indenting encoder,
    which is pure Python (~0.3 ms for an agent run's tool list); by ``json`` elsewhere."""
    if plain_json(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_INDENT_2)
        except TypeError:  # orjson.JSONEncodeError: a key that is not a string, a big int...
            pass
    return json.dumps(value, ensure_ascii=False, indent=2).encode("utf-8")


def parse_raw(raw: str, where: Where) -> Any:
    """The value of an attachment's stored raw JSON (any JSON type)."""
    return _loads(raw, where, "stored raw record is ")


# --------------------------------------------------------------------------------------------
# Storing long strings once: a raw record with holes
# --------------------------------------------------------------------------------------------
#
# An imported record's long strings (an ATP-Bench document's text, its ground-truth answer)
# are also parsed into columns of their own. Rather than keep those bytes twice, the raw text
# can be stored with holes where such strings were: each hole is [offset, source, style], the
# place in the remaining text, where the value now lives (opaque here; the caller looks it
# up), and how the string was written ("u": UTF-8 with JSON's minimal escapes, as orjson and
# most writers do; "a": ASCII with \uXXXX escapes, as Python's json.dumps does by default).
# Filling the holes with unchanged values gives the raw text back byte for byte; filling them
# with edited values puts each edit exactly where the old value was.

HOLE_MIN_CHARS = 128  # shorter strings cost more to track than they save
_PREFIX = 32  # how much of a string's JSON text to search for before comparing all of it


def _json_string(value: str, style: str) -> str:
    if style == "a":
        return json.dumps(value)
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:  # a lone surrogate, which only json can write (escaped)
        return json.dumps(value, ensure_ascii=False)


def _find(raw: str, needle: str, start: int) -> int:
    """Where ``needle`` occurs in ``raw`` from ``start`` on (-1 if nowhere): a short prefix is
    searched for, then the whole compared, which is several times faster than finding a long
    needle outright."""
    prefix = needle[:_PREFIX]
    at = raw.find(prefix, start)
    while at >= 0 and not raw.startswith(needle, at):
        at = raw.find(prefix, at + 1)
    return at


def _find_spans(
    raw: str, fields: list[tuple[tuple[str | int, ...], str, Any]], skip: set[int]
) -> list[tuple[int, int, int, str]]:
    spans: list[tuple[int, int, int, str]] = []
    after = 0  # fields usually come in the record's order: look after the last match first
    for k, (_, value, _) in enumerate(fields):
        if k in skip or type(value) is not str or len(value) < HOLE_MIN_CHARS:
            continue
        for style in ("u",) if value.isascii() else ("u", "a"):
            needle = _json_string(value, style)
            at = _find(raw, needle, after)
            if at < 0 and after:
                at = _find(raw, needle, 0)
            if at >= 0:
                spans.append((at, at + len(needle), k, style))
                after = at + len(needle)
                break
    spans.sort()
    # Matches cannot overlap in valid JSON unless a string was found in an odd place; keep
    # the first of any that do (the check below then decides).
    kept: list[tuple[int, int, int, str]] = []
    for span in spans:
        if not kept or span[0] >= kept[-1][1]:
            kept.append(span)
    return kept


def _misplaced(
    raw: str,
    fields: list[tuple[tuple[str | int, ...], str, Any]],
    spans: list[tuple[int, int, int, str]],
) -> set[int] | None:
    """The fields whose match is not at their path (None when the probe is not JSON): parse
    ``raw`` with a marker in each hole and look for each marker at its field's path."""
    probe: list[str] = []
    pos = 0
    for start, end, k, _ in spans:
        probe.append(raw[pos:start])
        probe.append(f'"\\u0000{k}"')
        pos = end
    probe.append(raw[pos:])
    try:
        value: Any = orjson.loads("".join(probe))
    except orjson.JSONDecodeError:
        return None
    wrong = set()
    for _, _, k, _ in spans:
        node = value
        for key in fields[k][0]:
            try:
                node = node[key]
            except (KeyError, IndexError, TypeError):
                node = None
                break
        if node != f"\x00{k}":
            wrong.add(k)
    return wrong


def punch_holes(
    raw: str, fields: list[tuple[tuple[str | int, ...], str, Any]]
) -> tuple[str, list[list[Any]]]:
    """Cut long string values out of ``raw``. ``fields`` lists ``(path in the record, the
    string found there, source)``; each string at least HOLE_MIN_CHARS long whose JSON text is
    found in ``raw`` becomes a hole. Returns ``(rest, holes)``, or ``(raw, [])`` when nothing
    can be cut safely. A hole is only kept when parsing the rest, with a marker in the hole,
    puts the marker exactly at the field's path, so an edit can never land in another field
    that happens to hold the same text."""
    skip: set[int] = set()
    for _ in range(2):
        spans = _find_spans(raw, fields, skip)
        if not spans:
            return raw, []
        wrong = _misplaced(raw, fields, spans)
        if wrong is None:
            return raw, []
        if not wrong:
            break
        skip |= wrong
    else:
        return raw, []
    rest: list[str] = []
    holes: list[list[Any]] = []
    pos = size = 0
    for start, end, k, style in spans:
        rest.append(raw[pos:start])
        size += start - pos
        holes.append([size, fields[k][2], style])
        pos = end
    rest.append(raw[pos:])
    return "".join(rest), holes


def fill_holes(rest: str, holes: list[list[Any]], lookup: Callable[[Any], Any]) -> str:
    """The raw text back: ``rest`` with each hole filled by ``lookup(source)`` written in the
    hole's style. A value that is gone or no longer a string fills its hole with an empty
    string, so the text stays valid JSON (the format's overlay then writes the current value).
    Holes that do not fit ``rest`` (it was replaced without them) leave ``rest`` as it is."""
    if not holes or holes[-1][0] > len(rest):
        return rest
    out: list[str] = []
    pos = 0
    for offset, source, style in holes:
        out.append(rest[pos:offset])
        value = lookup(source)
        out.append(_json_string(value if type(value) is str else "", style))
        pos = offset
    out.append(rest[pos:])
    return "".join(out)


# --------------------------------------------------------------------------------------------
# Streaming writers
# --------------------------------------------------------------------------------------------


def safe_path(out: Path, relative: str, where: Where) -> Path:
    """``out / relative``, refusing names that would escape ``out``."""
    parts = Path(relative.replace("\\", "/")).parts
    if not parts or Path(relative).is_absolute() or ".." in parts:
        raise where.error(f"unsafe output file name {relative!r}", "source_file")
    return out.joinpath(*parts)


class RecordSink:
    """Writes records to one file as they arrive: JSON Lines (``.jsonl``) or a pretty JSON array
    (anything else). Records are ordered by ``position``; if they arrive out of order, the file
    is reassembled at close from a spool, keeping only three integers per record in memory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.jsonl = path.suffix.lower() == ".jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        self._spool_path = path.with_name(f".{path.name}.part")
        # A large buffer: records are a few kilobytes each, and one write call per record
        # would cost more than writing them.
        self._fh: IO[bytes] = self._spool_path.open("wb", buffering=1 << 20)
        self._size = 0
        self._positions = array("q")
        self._offsets = array("q")
        self._lengths = array("q")
        self._sorted = True
        if not self.jsonl:
            self._write(b"[\n")

    def _write(self, data: bytes) -> None:
        self._fh.write(data)
        self._size += len(data)

    def _frame(self, body: bytes) -> bytes:
        if self.jsonl:
            return body + b"\n"
        return b"  " + body.replace(b"\n", b"\n  ")

    def add(self, position: int, value: Any, where: Where, line: bytes | None = None) -> None:
        """Add one record: ``line`` is ready-made compact JSON (JSON Lines only); otherwise
        ``value`` is serialized."""
        if self.jsonl:
            body = line if line is not None else dumps(value, where)
        else:
            body = dumps(value, where, pretty=True)
        position = int(position or 0)
        if self._positions and position < self._positions[-1]:
            self._sorted = False
        if not self.jsonl and self._positions:
            self._write(b",\n")
        framed = self._frame(body)
        self._positions.append(position)
        self._offsets.append(self._size)
        self._lengths.append(len(framed))
        self._write(framed)

    def close(self) -> Path:
        fh = self._fh
        if self._sorted:
            if not self.jsonl:
                fh.write(b"\n]\n")
            fh.close()
            os.replace(self._spool_path, self.path)
            return self.path
        fh.close()
        order = sorted(range(len(self._positions)), key=self._positions.__getitem__)
        with self._spool_path.open("rb") as src, self.path.open("wb") as dst:
            if not self.jsonl:
                dst.write(b"[\n")
            for n, i in enumerate(order):
                if n and not self.jsonl:
                    dst.write(b",\n")
                src.seek(self._offsets[i])
                dst.write(src.read(self._lengths[i]))
            if not self.jsonl:
                dst.write(b"\n]\n")
        self._spool_path.unlink()
        return self.path

    def abort(self) -> None:
        self._fh.close()
        self._spool_path.unlink(missing_ok=True)


class SinkSet:
    """One RecordSink per output file, opened on first use. Use as a context manager; ``paths``
    lists the files written, in the order they were started."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self._sinks: dict[Path, RecordSink] = {}
        self._by_name: dict[str, RecordSink] = {}
        self.paths: list[Path] = []

    def get(self, relative: str, where: Where) -> RecordSink:
        sink = self._by_name.get(relative)
        if sink is None:
            path = safe_path(self.out, relative, where)
            sink = self._sinks.get(path)
            if sink is None:
                sink = self._sinks[path] = RecordSink(path)
            self._by_name[relative] = sink
        return sink

    def __enter__(self) -> SinkSet:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            for sink in self._sinks.values():
                sink.abort()
            return
        for sink in self._sinks.values():
            self.paths.append(sink.close())


def write_file(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path
