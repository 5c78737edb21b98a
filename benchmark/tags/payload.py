"""Reading tag payloads: strict JSON for ATP-Bench, Python dict literals for LLM-I.

ATP-Bench payloads are JSON (paper §3: tool calls "strictly follow the JSON schema"); they are
read with orjson, and with the standard library only when orjson refuses (it reports the error
position and accepts a few inputs orjson does not, such as lone surrogate escapes).

LLM-I models write Python dict literals, and LLM-I reads them with ``ast.literal_eval``
(``verl/utils/reward_score/llmi_rm.py``, ``parse_image_tag``). ``ast.literal_eval`` costs about
50 µs per tag, so payloads go first through ``read_literal_fast``, a small reader for the
common subset (dicts, lists, plain strings, ints, True/False/None). It gives up on anything
else, and the caller then uses ``ast.literal_eval``; wherever it does return a value, that
value equals ``ast.literal_eval``'s (a property test checks this).

When ``ast.literal_eval`` fails on a code-source payload, LLM-I falls back on a regex that
takes the code between the first ``'code': '`` and the final ``'}}`` verbatim; that is what
lets code containing unescaped single quotes through. ``read_code_fallback`` is the same
regex (with any whitespace around the punctuation) and, like LLM-I's ``sanitize_code``, it
decodes backslash escapes in the code.
"""

from __future__ import annotations

import ast
import codecs
import json
import re
import warnings
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = [
    "PayloadError",
    "read_code_fallback",
    "read_json_object",
    "read_literal",
    "read_literal_fast",
    "recover",
]

_MAX_DEPTH = 64


@dataclass(slots=True)
class PayloadError:
    """Why a payload could not be read; ``pos`` is an offset into the payload text."""

    message: str
    pos: int


def _literal_eval_quiet(source: str) -> Any:
    """``ast.literal_eval`` with its invalid-escape warnings silenced, so that the result
    does not depend on the warning filters in force (``-W error`` turns them into errors)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.literal_eval(source)


# One token per iteration of the reader. A value token also takes the comma after it, and a
# string the colon after it, which halves the number of tokens in a typical payload.
_WS = r"[ \t\n\r\f]*"
_WS_CHARS = " \t\n\r\f\v"
_TOKEN = re.compile(
    _WS
    + r"(?:"
    + r"([{\[])"  # 1 opening bracket
    + r"|(?:([}\]])"  # 2 closing bracket
    + r"|(-?(?:0|[1-9][0-9]*))(?![0-9A-Za-z_.])"  # 3 decimal int
    + r"|(True|False|None)(?![0-9A-Za-z_]))"  # 4 constant
    + _WS
    + r"(,)?"  # 5 comma after 2-4
    + r"""|('(?:[^'\\\n\r]++|\\[\s\S])*+'|"(?:[^"\\\n\r]++|\\[\s\S])*+")"""  # 6 string
    + _WS
    + r"([:,])?"  # 7 colon or comma after the string
    + r"|([:,])"  # 8 lone colon or comma
    + r"|([^ \t\n\r\f])"  # 9 anything else: give up
    + r")"
)
# Escapes that Python string literals and the unicode_escape codec read identically (the
# same decoder), minus octal and CR, which differ or warn. Anything else goes to literal_eval.
_UNUSUAL_ESCAPE = re.compile(r"\\[^ntr'\"abfvxuUN\n]")
_WORDS: dict[str, Any] = {"True": True, "False": False, "None": None}

# reader states
_VALUE, _KEY, _ITEM, _COLON, _SEP, _END = range(6)


class _NoValue:
    __slots__ = ()


_NO_VALUE: Any = _NoValue()


def _string(token: str) -> Any:
    body = token[1:-1]
    if "\\" not in body:
        return body
    if body.isascii() and _UNUSUAL_ESCAPE.search(body.replace("\\\\", "")) is None:
        try:
            return codecs.decode(body, "unicode_escape")
        except Exception:
            return _NO_VALUE
    try:
        value = _literal_eval_quiet(token)
    except Exception:
        return _NO_VALUE
    return value if isinstance(value, str) else _NO_VALUE


def read_literal_fast(text: str) -> Any:  # noqa: PLR0915
    """Read ``text`` as a Python literal if it is in the simple subset (dicts, lists, strings
    without prefixes, decimal ints, True/False/None), else return ``_NO_VALUE`` (compare with
    ``is``). One regex tokenizes the text; a small state machine builds the value. Never
    raises."""
    if not text or "\x00" in text or text[0] in _WS_CHARS or text[-1] in _WS_CHARS:
        return _NO_VALUE  # whitespace outside brackets has rules of its own ("0\n " fails)
    if not text.isascii():
        try:
            text.encode("utf-8")  # compile() refuses lone surrogates; so must we
        except UnicodeEncodeError:
            return _NO_VALUE
    stack: list[tuple[Any, bool, Any, int]] = []
    container: Any = None
    is_dict = False
    key: Any = None
    state = _VALUE
    result: Any = _NO_VALUE
    value: Any
    for opening, closing, number, word, comma, string, after, punct, _ in _TOKEN.findall(text):
        if string:
            value = _string(string)
            if value is _NO_VALUE:
                return _NO_VALUE
            if after == ":":
                if state != _KEY:
                    return _NO_VALUE
                key, state = value, _VALUE
                continue
            comma = after
        elif opening:
            if (state != _VALUE and state != _ITEM) or len(stack) >= _MAX_DEPTH:
                return _NO_VALUE
            stack.append((container, is_dict, key, state))
            if opening == "{":
                container, is_dict, key, state = {}, True, None, _KEY
            else:
                container, is_dict, key, state = [], False, None, _ITEM
            continue
        elif closing:
            if container is None or is_dict != (closing == "}"):
                return _NO_VALUE
            if state != _SEP and state != (_KEY if is_dict else _ITEM):
                return _NO_VALUE
            value = container
            container, is_dict, key, state = stack.pop()
        elif number:
            if len(number) > 18:  # keep clear of int()'s digit limit; literal_eval decides
                return _NO_VALUE
            value = int(number)
        elif word:
            value = _WORDS[word]
        elif punct == ":" and state == _COLON:  # after a key that is not a string
            state = _VALUE
            continue
        else:  # a lone comma is never valid here: value tokens take their commas
            return _NO_VALUE
        # a value is complete: put it where the current state says
        if state == _VALUE:
            if container is None:
                if comma:  # "x," is a tuple
                    return _NO_VALUE
                result, state = value, _END
                continue
            container[key] = value
        elif state == _ITEM:
            container.append(value)
        elif state == _KEY:  # a non-string key; its colon comes as a lone token
            if comma or isinstance(value, (dict, list)):
                return _NO_VALUE
            key, state = value, _COLON
            continue
        else:
            return _NO_VALUE
        state = (_KEY if is_dict else _ITEM) if comma else _SEP
    return result if state == _END else _NO_VALUE


def read_literal(text: str) -> tuple[Any, PayloadError | None]:
    """Read a Python literal the way ``ast.literal_eval`` does. Returns (value, None) or
    (None, error). Never raises."""
    value = read_literal_fast(text)
    if value is not _NO_VALUE:
        return value, None
    try:
        return _literal_eval_quiet(text), None
    except SyntaxError as exc:
        return None, PayloadError(
            f"not a Python literal: {exc.msg}", _line_col_to_pos(text, exc.lineno, exc.offset)
        )
    except Exception as exc:  # ValueError, TypeError, RecursionError, MemoryError, ...
        return None, PayloadError(f"not a Python literal: {_short(exc)}", 0)


def _short(exc: BaseException) -> str:
    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return message[:200]


def _line_col_to_pos(text: str, lineno: int | None, offset: int | None) -> int:
    if not lineno:
        return 0
    pos = 0
    for _ in range(lineno - 1):
        nl = text.find("\n", pos)
        if nl < 0:
            return len(text)
        pos = nl + 1
    return min(len(text), pos + max(0, (offset or 1) - 1))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def read_json_object(text: str) -> tuple[Any, PayloadError | None]:
    """Read strict JSON. Returns (value, None) or (None, error). Never raises."""
    try:
        return orjson.loads(text), None
    except orjson.JSONDecodeError as exc:
        first = PayloadError(f"not valid JSON: {exc.msg}", exc.pos) if exc.msg else None
    try:
        return json.loads(text, parse_constant=_reject_constant), None
    except json.JSONDecodeError as exc:
        # orjson's message and position (a character offset) are the more precise ones
        return None, first or PayloadError(f"not valid JSON: {exc.msg}", exc.pos)
    except Exception as exc:
        return None, PayloadError(f"not valid JSON: {_short(exc)}", 0)


_CODE_FALLBACK = re.compile(
    r"\A\s*\{\s*'source'\s*:\s*'code'\s*,\s*'description'\s*:\s*'([^']*)'\s*,"
    r"\s*'params'\s*:\s*\{\s*'code'\s*:\s*'(.*)'\s*\}\s*\}\s*\Z",
    re.DOTALL,
)


def _decode_escapes(code: str) -> str:
    """Decode backslash escapes as LLM-I's ``sanitize_code`` does, without its latin-1
    mangling of non-ASCII characters."""
    if "\\" not in code:
        return code
    try:
        return code.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except Exception:
        return (
            code.replace("\\n", "\n").replace("\\t", "\t").replace('\\"', '"').replace("\\'", "'")
        )


def read_code_fallback(text: str) -> dict[str, Any] | None:
    """LLM-I's code-source regex: ``{'source': 'code', 'description': '…', 'params':
    {'code': '…'}}`` with the code taken verbatim (greedy) and its escapes decoded."""
    if "'code'" not in text:
        return None
    m = _CODE_FALLBACK.match(text)
    if m is None:
        return None
    description, code = m.groups()
    return {"source": "code", "description": description, "params": {"code": _decode_escapes(code)}}


_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def recover(text: str, syntax: str) -> dict[str, Any] | None:
    """Best-effort reading of a payload that failed the strict reader: drop trailing commas
    and try both JSON and Python-literal syntax. Only used to keep validating parameters of a
    tag that already has a ``malformed_payload`` finding."""
    candidates = [text]
    fixed = _TRAILING_COMMA.sub(r"\1", text)
    if fixed != text:
        candidates.insert(0, fixed)
    for candidate in candidates:
        readers = (read_json_object, read_literal)
        if syntax == "llmi":
            readers = (read_literal, read_json_object)
        for reader in readers:
            value, error = reader(candidate)
            if error is None and isinstance(value, dict):
                return value
    return None
