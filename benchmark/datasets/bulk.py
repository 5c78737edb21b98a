"""Fast bulk inserts for imports: binary COPY on PostgreSQL, executemany on SQLite.

Django's bulk_create spends most of an import building SQL and adapting values one by one;
an import of 10,000 records must take about a second. Rows here are plain dicts keyed by field
name; JSON fields are encoded once with orjson and timestamps are filled in.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
from django.db import connection, models
from django.db.models import ForeignObjectRel
from django.utils import timezone

# PostgreSQL's type oids for jsonb, and for bytea, under which a ready-made jsonb value is sent.
_JSONB_OID = 3802
_BYTEA_OID = 17


def _columns(model: type[models.Model]) -> list[models.Field]:
    return [f for f in model._meta.concrete_fields if not f.primary_key]


def column_of(field: models.Field | ForeignObjectRel) -> str:
    """The database column of a concrete field (only those have one)."""
    if not isinstance(field, models.Field) or field.column is None:
        raise TypeError(f"{field!r} has no database column")
    return field.column


_LZ4: dict[str, bool] = {}
_OIDS: dict[tuple[str, str], list[int]] = {}


def _has_lz4(cursor: Any) -> bool:
    """Whether this PostgreSQL server was built with lz4 (asked once per database)."""
    key = connection.settings_dict.get("NAME") or ""
    if key not in _LZ4:
        cursor.execute(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
        )
        row = cursor.fetchone()
        _LZ4[key] = bool(row and row[0])
    return _LZ4[key]


def bulk_load_begin() -> None:
    """Settings for one bulk load, for the rest of the current transaction (PostgreSQL only).

    lz4 compresses long text several times faster than PostgreSQL's default pglz. The commit
    does not wait for its WAL to reach the disk: a crash just after it can lose the import,
    never corrupt the database, and any later synchronous commit (the job's status, say) waits
    for it. That is what SQLite's ``synchronous=NORMAL`` in WAL mode already does."""
    if connection.vendor != "postgresql" or not connection.in_atomic_block:
        return
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit = off")
        if _has_lz4(cursor):
            cursor.execute("SET LOCAL default_toast_compression = 'lz4'")


def _pg_types(cursor: Any, table: str, quoted: str, is_json: list[bool]) -> list[int]:
    """The type oid of each column for a binary COPY (asked once per table and database).
    JSON columns are declared bytea: their values arrive as ready-made jsonb bytes."""
    key = (connection.settings_dict.get("NAME") or "", table)
    if key not in _OIDS:
        cursor.execute(f"SELECT {quoted} FROM {connection.ops.quote_name(table)} LIMIT 0")
        _OIDS[key] = [d.type_code for d in cursor.description]
    return [_BYTEA_OID if js else oid for oid, js in zip(_OIDS[key], is_json, strict=True)]


def bulk_insert(model: type[models.Model], rows: Iterable[dict[str, Any]]) -> int:
    """Insert ``rows`` (dicts of field name to value; missing fields take their default)."""
    fields = _columns(model)
    postgres = connection.vendor == "postgresql"
    now = timezone.now()
    plan: list[tuple[str, Any]] = []
    for f in fields:
        if isinstance(f, models.DateTimeField) and (f.auto_now or f.auto_now_add):
            default = now if postgres else f.get_db_prep_value(now, connection)
        else:  # the field's default, or "" / None as Django would store for a blank field
            default = f.get_default()
        plan.append((f.attname, default))
    is_json = [isinstance(f, models.JSONField) for f in fields]
    # A JSON field's stored form, where it differs from its value (ImageRefsField's to_stored).
    json_at = [(i, getattr(fields[i], "to_stored", None)) for i, js in enumerate(is_json) if js]
    dumps = orjson.dumps
    # Each JSON column's last value and its encoding: rows often hold the very same object
    # (a default, or a list of image references that items share), encoded once then.
    last: dict[int, tuple[Any, Any]] = {}

    def convert(row: dict[str, Any]) -> list[Any]:
        get = row.get
        out = [get(name, default) for name, default in plan]
        for i, to_stored in json_at:
            value = out[i]
            if value is None:
                continue
            seen = last.get(i)
            if seen is not None and seen[0] is value:
                out[i] = seen[1]
                continue
            stored = value if to_stored is None else to_stored(value)
            # jsonb's binary form is a version byte and the text; SQLite stores the text.
            out[i] = b"\x01" + dumps(stored) if postgres else dumps(stored).decode()
            last[i] = (value, out[i])
        return out

    table = model._meta.db_table
    quoted = ", ".join(connection.ops.quote_name(column_of(f)) for f in fields)
    count = 0
    with connection.cursor() as cursor:
        if postgres:
            types = _pg_types(cursor, table, quoted, is_json)
            raw = cursor.cursor  # the psycopg cursor under Django's wrapper
            with raw.copy(
                f"COPY {connection.ops.quote_name(table)} ({quoted}) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(types)
                write_row = copy.write_row
                for row in rows:
                    write_row(convert(row))
                    count += 1
        else:
            marks = ", ".join(["%s"] * len(fields))
            batch = [convert(row) for row in rows]
            cursor.executemany(
                f"INSERT INTO {connection.ops.quote_name(table)} ({quoted}) VALUES ({marks})",
                batch,
            )
            count = len(batch)
    return count
