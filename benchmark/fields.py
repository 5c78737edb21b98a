"""Model fields that store what imports write in bulk more cheaply than Django's own.

- :class:`JSONField` decodes with orjson: the same values, several times faster, which matters
  when an export reads tens of megabytes of JSON. (Imports encode with orjson in bulk.py.)
- :class:`ImageRefsField` stores a list of image references as positional arrays.
- :class:`PackedTextField` stores long text compressed on SQLite.
"""

from __future__ import annotations

import threading
from typing import Any

import orjson
from django.db import NotSupportedError, models


class JSONField(models.JSONField):
    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if isinstance(value, str) and self.decoder is None:
            try:
                return orjson.loads(value)
            except orjson.JSONDecodeError:
                return value
        return super().from_db_value(value, expression, connection)


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


# Long text as SQLite stores it in a PackedTextField: this tag, then a zstd frame of its UTF-8.
# PostgreSQL compresses such values itself (TOAST; lz4 during imports, see bulk.py); SQLite does
# not, and an interleaved answer of 2,800 characters then takes a whole 4 KB page of its own.
# zstd at level 3 keeps about half of real prose, at some 250 MB/s of it.
_PACK_TAG = b"Z"
_PACK_LEVEL = 3
PACK_FROM = 512  # characters; shorter text stays text (and "" or a short value stays searchable)
_codecs = threading.local()  # a zstd (de)compressor serves one thread at a time


def _codec() -> Any:
    codec = getattr(_codecs, "pair", None)
    if codec is None:
        import zstandard  # imported where used: about 9 ms that a start-up need not pay

        codec = _codecs.pair = (
            zstandard.ZstdCompressor(level=_PACK_LEVEL),
            zstandard.ZstdDecompressor(),
        )
    return codec


def pack_text(value: Any) -> Any:
    """``value`` as a PackedTextField keeps it on SQLite: a str of PACK_FROM characters or more
    becomes bytes (the tag and its zstd-compressed UTF-8) when that is at least a tenth smaller;
    anything else is returned as it is. The same text gives the same bytes (with one version of
    the zstd library), so equality lookups still match."""
    if type(value) is not str or len(value) < PACK_FROM:
        return value
    data = value.encode()
    packed = _PACK_TAG + _codec()[0].compress(data)
    return packed if len(packed) * 10 < len(data) * 9 else value


def unpack_text(value: Any) -> Any:
    """The text :func:`pack_text` packed; any other value (text, None) as it is."""
    if type(value) is bytes and value[:1] == _PACK_TAG:
        return _codec()[1].decompress(value[1:]).decode()
    return value


def pack_stored_text(connection: Any, table: str, column: str = "text", batch: int = 2000) -> int:
    """On SQLite, packs the long values a table already holds in ``column`` as a
    PackedTextField would write them (for the migration that makes a column packed: reading works
    either way, this only gives back the space, which a VACUUM returns to the disk). Returns how
    many values it packed; does nothing on PostgreSQL."""
    if connection.vendor != "sqlite":
        return 0
    quote = connection.ops.quote_name
    done, last = 0, 0
    with connection.cursor() as cursor:
        while True:
            cursor.execute(
                f"SELECT id, {quote(column)} FROM {quote(table)} WHERE id > %s "
                f"AND typeof({quote(column)}) = 'text' AND length({quote(column)}) >= %s "
                "ORDER BY id LIMIT %s",
                [last, PACK_FROM, batch],
            )
            rows = cursor.fetchall()
            if not rows:
                return done
            last = rows[-1][0]
            packed = [(value, pk) for pk, text in rows if type(value := pack_text(text)) is bytes]
            cursor.executemany(
                f"UPDATE {quote(table)} SET {quote(column)} = %s WHERE id = %s", packed
            )
            done += len(packed)


class _NotOnPackedText:
    """A text-pattern lookup that SQLite cannot answer on compressed values: it says so instead
    of silently matching nothing."""

    lookup_name: str

    def as_sqlite(self, compiler: Any, connection: Any) -> Any:
        raise NotSupportedError(
            f"'{self.lookup_name}' cannot search a PackedTextField on SQLite: long values are "
            "stored compressed there. Filter in Python, or on PostgreSQL."
        )


class PackedTextField(models.TextField):
    """Text that SQLite stores compressed when it is long (:func:`pack_text`); PostgreSQL gets
    plain text and compresses it itself. Reading gives the same str either way, and rows
    written before the field packed anything read as they were. Equality lookups work on both
    databases; pattern lookups (``contains``, ``startswith``, ``regex``, ...) raise
    NotSupportedError on SQLite rather than miss the compressed rows. Code that writes or reads
    the column without the ORM (bulk.py, the export's plain SQL) calls :func:`pack_text` on
    SQLite and :func:`unpack_text`."""

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        value = super().get_db_prep_value(value, connection, prepared)
        return pack_text(value) if connection.vendor == "sqlite" else value

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return unpack_text(value)


for _lookup in (
    models.lookups.IExact,
    models.lookups.Contains,
    models.lookups.IContains,
    models.lookups.StartsWith,
    models.lookups.IStartsWith,
    models.lookups.EndsWith,
    models.lookups.IEndsWith,
    models.lookups.Regex,
    models.lookups.IRegex,
):
    PackedTextField.register_lookup(
        type(f"Packed{_lookup.__name__}", (_NotOnPackedText, _lookup), {}),
    )


class UTCDay(models.Func):
    """The UTC calendar day of a datetime column, computed by the database (SQLite keeps UTC
    datetimes as text, so the day is its first ten characters). Immutable on both databases,
    so it can make a generated column or an index."""

    template = "substr(%(expressions)s, 1, 10)"
    output_field = models.DateField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        template = "((%(expressions)s AT TIME ZONE 'UTC')::date)"
        return self.as_sql(compiler, connection, template=template, **extra)
