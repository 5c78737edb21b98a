"""Request keys and response caches for model calls. Pure Python: no Django.

A request's key is the sha256 of a canonical JSON of what decides the answer: the endpoint (base
URL), the model name, the messages (with each image replaced by the sha256 of its bytes), the
sampling parameters, and a scope the caller names (the app uses its project), so an answer
recorded for one endpoint or project never answers for another. The same question with the
same images to the same model at the same endpoint gives the same key on every machine, so a
cache filled by one run can answer (or replay) another."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

# Which values orjson writes as json does: with the other JSON plumbing (the run files of
# an agent's evaluation use it too), named here as before.
from benchmark.formats._jsonio import plain_json as plain_json


def _orjson_canonical(value: Any) -> bytes | None:
    """:func:`canonical_json`'s text as UTF-8 bytes written by orjson, where it gives the
    same text (string keys, sorted by code point as Python sorts them; integers within 64
    bits; ``plain_json`` floats): ~10 times faster on a conversation with its tool specs.
    None elsewhere."""
    import orjson

    if not plain_json(value):
        return None
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError: a key that is not a string, a big int...
        return None


def _json_canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    """One spelling per value: sorted keys, no spaces, UTF-8 kept as is."""
    fast = _orjson_canonical(value)
    return fast.decode("utf-8") if fast is not None else _json_canonical(value)


def request_key(
    *,
    model: str,
    messages: list[dict[str, Any]],
    params: dict[str, Any],
    endpoint: str = "",
    scope: str = "",
    tools: list[dict[str, Any]] | None = None,
) -> str:
    """The cache key of a request. ``messages`` must already carry image hashes, not bytes;
    ``endpoint`` is the base URL (a trailing slash does not count). ``tools`` (OpenAI function
    specs) count only when there are some, so a request without tools keys as it always
    did."""
    payload: dict[str, Any] = {
        "endpoint": endpoint.rstrip("/"),
        "scope": scope,
        "model": model,
        "messages": messages,
        "params": params,
    }
    if tools:
        payload["tools"] = tools
    text = _orjson_canonical(payload)
    if text is None:
        text = _json_canonical(payload).encode("utf-8")
    return hashlib.sha256(text).hexdigest()


@dataclass(frozen=True)
class CachedAnswer:
    """What a cache keeps of a successful call."""

    text: str
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: int = 0
    #: The reply's tool calls, each ``{"id", "name", "arguments"}`` (arguments as written).
    tool_calls: tuple[dict[str, str], ...] | list[dict[str, str]] = ()


class ResponseCache(Protocol):
    """Where answers are kept by request key. ``put`` may do nothing when the caller records
    calls elsewhere (the database cache reads the calls the job task records)."""

    def get(self, key: str) -> CachedAnswer | None: ...

    def put(self, key: str, answer: CachedAnswer) -> None: ...


class MemoryCache:
    """A process-local cache, for scripts and tests."""

    def __init__(self) -> None:
        self._data: dict[str, CachedAnswer] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> CachedAnswer | None:
        with self._lock:
            return self._data.get(key)

    def put(self, key: str, answer: CachedAnswer) -> None:
        with self._lock:
            self._data[key] = answer

    def __len__(self) -> int:
        return len(self._data)


class DiskCache:
    """One JSON file per key under ``root`` (``ab/abcdef....json``), written atomically, so
    several processes may share the folder."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedAnswer | None:
        try:
            data = json.loads(self._path(key).read_text("utf-8"))
        except (FileNotFoundError, ValueError):
            return None
        try:
            return CachedAnswer(**data)
        except TypeError:
            return None

    def put(self, key: str, answer: CachedAnswer) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(canonical_json(asdict(answer)))
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
