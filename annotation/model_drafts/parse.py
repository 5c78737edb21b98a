"""Reading what a model drafted: a JSON list of queries, ten rubric criteria, an answer with
tool tags. Pure Python (no Django). Models wrap JSON in code fences, put a sentence before
it, or return objects instead of strings; these readers accept that much and raise
:class:`DraftParseError`, with a message that says what was wrong, for anything else."""

from __future__ import annotations

import json
import re
from typing import Any

RUBRIC_SIZE = 10
MAX_QUERY_CHARS = 5_000
_FENCE = re.compile(r"^\s*```[A-Za-z0-9_+-]*[ \t]*\n(.*?)\n?```\s*$", re.DOTALL)
_NUMBERED = re.compile(r"^\s*(?:[-*•]|\(?(?:r\s*)?\d{1,2}[.):]|\d{1,2}\s*[-–])\s*(.+?)\s*$", re.I)
_QUERY_KEYS = ("query", "question", "text", "prompt")


class DraftParseError(ValueError):
    """The model's reply is not in the form asked for; the message says how."""


def strip_fence(text: str) -> str:
    """The reply without a surrounding Markdown code fence."""
    match = _FENCE.match(text or "")
    return match.group(1) if match else (text or "").strip()


def _first_json(text: str, opener: str) -> Any:
    """The first JSON value starting with ``opener`` ("[" or "{") in ``text``."""
    decoder = json.JSONDecoder()
    start = text.find(opener)
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find(opener, start + 1)
            continue
        return value
    return None


def _as_text(value: Any, keys: tuple[str, ...]) -> str | None:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        for key in keys:
            if isinstance(value.get(key), str):
                return str(value[key]).strip()
    return None


def parse_queries(text: str, *, n: int) -> list[str]:
    """The candidate queries of a reply that should be a JSON list of ``n`` strings (objects
    with a "query" are read too). Empty and repeated queries are dropped; more than ``n`` are
    cut to ``n``; none at all is an error."""
    body = strip_fence(text)
    value = _first_json(body, "[")
    if value is None:
        obj = _first_json(body, "{")
        if isinstance(obj, dict):
            value = next((v for v in obj.values() if isinstance(v, list)), None)
    if not isinstance(value, list):
        raise DraftParseError("the reply is not a JSON list of queries")
    out: list[str] = []
    for n_entry, entry in enumerate(value, start=1):
        query = _as_text(entry, _QUERY_KEYS)
        if query is None:
            raise DraftParseError(f"entry {n_entry} of the list is not a query (a string)")
        if query and query not in out:
            out.append(query[:MAX_QUERY_CHARS])
    if not out:
        raise DraftParseError("the reply's list holds no query")
    return out[:n]


def parse_rubric(text: str) -> list[str]:
    """Ten criteria: a JSON list of ten strings, an object with keys r1..r10, or ten
    numbered (or bulleted) lines."""
    body = strip_fence(text)
    criteria: list[str] | None = None
    value = _first_json(body, "[")
    if isinstance(value, list):
        texts = [_as_text(v, ("text", "criterion", "description")) for v in value]
        if any(t is None for t in texts):
            raise DraftParseError("the reply's list holds something other than criteria")
        criteria = [t for t in texts if t]
    else:
        obj = _first_json(body, "{")
        if isinstance(obj, dict):
            keyed = {str(k).lower(): v for k, v in obj.items()}
            found = [keyed.get(f"r{i}") for i in range(1, RUBRIC_SIZE + 1)]
            if all(isinstance(v, str) for v in found):
                criteria = [str(v).strip() for v in found]
        if criteria is None:
            lines = [m.group(1) for line in body.splitlines() if (m := _NUMBERED.match(line))]
            criteria = [line.strip() for line in lines if line.strip()]
    if len(criteria) != RUBRIC_SIZE or not all(criteria):
        raise DraftParseError(
            f"the reply holds {len(criteria)} criteria; the rubric needs exactly {RUBRIC_SIZE} "
            "(a JSON list of ten sentences)"
        )
    return criteria


def parse_answer(text: str) -> str:
    """The drafted answer: the reply without a code fence around all of it."""
    body = strip_fence(text).strip()
    if not body:
        raise DraftParseError("the reply is empty")
    return body
