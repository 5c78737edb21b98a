"""Model fields that store what imports write in bulk more cheaply than Django's own, and JSON
that must read back exactly as written.

- :class:`JSONField` decodes with orjson: the same values, several times faster, which matters
  when an export reads tens of megabytes of JSON. (Imports encode with orjson in bulk.py.)
- :class:`ImageRefsField` stores a list of image references as positional arrays.
- :class:`JSONTextField` keeps a JSON value as its text on every database, so its keys come
  back in the order they were written (PostgreSQL's ``jsonb`` sorts them).
- :class:`NulTextField` is a text column that also keeps a NUL character (``\x00``), which
  PostgreSQL's text columns refuse: a model's reply is kept exactly as it came.
- :class:`NulJSONField` is a JSON column whose strings (and keys) may hold a NUL character,
  which PostgreSQL's ``jsonb`` refuses: a job's result that quotes a model's reply.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from django.db import models


class JSONField(models.JSONField):
    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if isinstance(value, str) and self.decoder is None:
            try:
                return orjson.loads(value)
            except orjson.JSONDecodeError:
                return value
        return super().from_db_value(value, expression, connection)


class JSONTextField(models.Field):
    """A JSON value stored as its JSON text in a text column, on SQLite and PostgreSQL alike,
    and read back exactly as written: the keys of every object in their order, ``NaN`` and
    ``"\\u0000"`` included. ``models.JSONField`` is ``jsonb`` on PostgreSQL, which sorts an
    object's keys (shorter first), keeps one of duplicate keys and refuses ``\\u0000`` and
    ``NaN``; where the text a value is printed as matters (a tool's output shown to a model,
    whose request is keyed by that text), that changed what a replay sent. Python ``None`` is
    SQL NULL. No JSON lookups (``field__key``): the column is plain text."""

    description = "A JSON value kept as its text (key order preserved)"

    def get_internal_type(self) -> str:
        return "TextField"

    def get_prep_value(self, value: Any) -> Any:
        if value is None:
            return None
        return json.dumps(value, ensure_ascii=False)

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if value is None:
            return None
        try:
            return orjson.loads(value)  # keeps the keys' order, as json does, faster
        except orjson.JSONDecodeError:  # NaN, Infinity: what json.dumps writes for them
            return json.loads(value)

    def to_python(self, value: Any) -> Any:
        return value

    def value_to_string(self, obj: Any) -> Any:
        return self.value_from_object(obj)

    def get_placeholder(self, value: Any, compiler: Any, connection: Any) -> str:
        """One plain parameter per value. A field with this method keeps a bulk insert of its
        model's rows as ``INSERT ... VALUES`` on PostgreSQL too (Django's compiler uses its
        ``UNNEST`` arrays there only for fields without it): in an array every double quote
        of a JSON text is escaped again in Python, ~1.5 ms of CPU per evaluated model call's
        row. The rows and their texts are the same either way; SQLite always inserts with
        VALUES."""
        return "%s"


#: What starts a stored text that carried a NUL character (or began with this mark itself):
#: the rest is the text as a JSON string literal, which writes NUL as ``\u0000``.
NUL_MARK = "\x01json:"


def nul_escape(text: str) -> str:
    """``text`` as a text column on any database can store it: unchanged unless it holds a
    NUL character or starts with ``NUL_MARK``, else the mark and its JSON string literal.
    ``nul_unescape`` gives ``text`` back exactly."""
    if "\x00" not in text and not text.startswith(NUL_MARK):
        return text
    return NUL_MARK + json.dumps(text, ensure_ascii=False)


def nul_unescape(stored: str) -> str:
    """The text ``nul_escape`` stored."""
    if not stored.startswith(NUL_MARK):
        return stored
    try:
        value = json.loads(stored[len(NUL_MARK) :])
    except ValueError:  # not written by nul_escape: kept as it is
        return stored
    return value if isinstance(value, str) else stored


class NulTextField(models.TextField):
    """A text column that keeps any text exactly, NUL characters included, on SQLite and
    PostgreSQL alike (PostgreSQL refuses NUL in text; a model's reply may carry one): such a
    text is stored escaped (``nul_escape``) and read back as it was. Every other text is
    stored as it is, so lookups, ordering and old rows are unchanged."""

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        return nul_escape(value) if isinstance(value, str) else value

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return nul_unescape(value) if isinstance(value, str) else value


# An image reference as imports write it, in this key order: ``{"sha256", "role", "path",
# "position"}``. Ten thousand items with nine images each spend 12 MB on the keys and the
# defaults alone, so such a reference is stored as a positional array instead.
_REF_KEYS = ("sha256", "role", "path", "position")
_DEFAULT_ROLE = "document"


def image_refs_compact(value: Any) -> Any:
    """``image_refs`` as stored: each reference with exactly the keys above, in that order, and
    a string path and role, becomes ``[sha256, path]`` when its role is "document" and its
    position is its index among the references of its role so far, else ``[sha256, path,
    role]`` (position as counted) or ``[sha256, path, role, position]``. Any other element
    (another shape, other keys) is kept as it is. :func:`image_refs_expand` undoes it."""
    if type(value) is not list:
        return value
    out: list[Any] = []
    counts: dict[str, int] = {}
    for ref in value:
        if type(ref) is not dict or tuple(ref) != _REF_KEYS:
            out.append(ref)
            continue
        sha, role, path, position = ref["sha256"], ref["role"], ref["path"], ref["position"]
        if type(role) is not str or type(path) is not str or type(position) is not int:
            out.append(ref)
            continue
        n = counts.get(role, 0)
        counts[role] = n + 1
        if position != n:
            out.append([sha, path, role, position])
        elif role != _DEFAULT_ROLE:
            out.append([sha, path, role])
        else:
            out.append([sha, path])
    return out


def image_refs_expand(value: Any) -> Any:
    """The references :func:`image_refs_compact` stored, as dicts again (the same values, keys
    and key order); elements that are not arrays are returned as they are."""
    if type(value) is not list:
        return value
    out: list[Any] = []
    counts: dict[str, int] = {}
    for ref in value:
        if type(ref) is not list or not 2 <= len(ref) <= 4:
            out.append(ref)
            continue
        role = ref[2] if len(ref) > 2 else _DEFAULT_ROLE
        n = counts.get(role, 0)
        counts[role] = n + 1
        position = ref[3] if len(ref) > 3 else n
        out.append({"sha256": ref[0], "role": role, "path": ref[1], "position": position})
    return out


class ImageRefsField(JSONField):
    """A list of image references (``{"sha256", "role", "path", "position"}``), stored compactly
    (see :func:`image_refs_compact`) and read back as the same list of dicts. Code that reads
    or writes the column without the ORM (bulk inserts, exports) calls ``to_stored`` and
    ``from_stored``. Lookups on the text (``icontains`` of a path) still work: the paths and
    hashes are in it."""

    to_stored = staticmethod(image_refs_compact)
    from_stored = staticmethod(image_refs_expand)

    def get_prep_value(self, value: Any) -> Any:
        return super().get_prep_value(image_refs_compact(value))

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return image_refs_expand(super().from_db_value(value, expression, connection))


class UTCDay(models.Func):
    """The UTC calendar day of a datetime column, computed by the database (SQLite keeps UTC
    datetimes as text, so the day is its first ten characters). Immutable on both databases,
    so it can make a generated column or an index."""

    template = "substr(%(expressions)s, 1, 10)"
    output_field = models.DateField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        template = "((%(expressions)s AT TIME ZONE 'UTC')::date)"
        return self.as_sql(compiler, connection, template=template, **extra)


class JSONArrayLength(models.Func):
    """How many elements a JSON array column holds (0 for anything else), counted by the
    database: a list page that shows only the count need not read and decode the array."""

    template = "coalesce(json_array_length(%(expressions)s), 0)"
    output_field = models.IntegerField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        template = (
            "(CASE WHEN jsonb_typeof(%(expressions)s) = 'array' "
            "THEN jsonb_array_length(%(expressions)s) ELSE 0 END)"
        )
        return self.as_sql(compiler, connection, template=template, **extra)


def json_strings_map(value: Any, text: Any) -> Any:
    """``value`` with ``text`` applied to every string in it, keys included."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, list):
        return [json_strings_map(v, text) for v in value]
    if isinstance(value, dict):
        return {
            text(k) if isinstance(k, str) else k: json_strings_map(v, text)
            for k, v in value.items()
        }
    return value


class NulJSONField(JSONField):
    """A JSON column on SQLite and PostgreSQL alike whose strings may hold a NUL character:
    each string that does (or starts with ``NUL_MARK``) is stored as ``nul_escape`` writes it
    and read back as it was. Any other value is stored as it is, so lookups and old rows are
    unchanged."""

    def get_prep_value(self, value: Any) -> Any:
        return super().get_prep_value(json_strings_map(value, nul_escape))

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        value = super().from_db_value(value, expression, connection)
        return json_strings_map(value, nul_unescape)
