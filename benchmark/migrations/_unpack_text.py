"""Unpacking long text that Benchwright once stored compressed on SQLite (PackedTextField,
removed): shared by benchmark 0019_unpack_response_text and annotation
0018_unpack_response_version_text. Not a migration itself (its name starts with "_").

From benchmark 0017 on, SQLite kept an answer of 512 characters or more as bytes: the tag
``b"Z"`` and then a zstd frame of its UTF-8 text. PostgreSQL always kept plain text.
"""

from __future__ import annotations

from typing import Any

TAG = b"Z"
BATCH = 200  # rows per round: answers may be up to 1,000,000 characters each


def unpack_stored_text(connection: Any, table: str, column: str = "text") -> int:
    """On SQLite, rewrite every packed value of ``table.column`` as the text it holds, in
    batches of :data:`BATCH` rows by id; returns how many rows it rewrote. Values that are
    already text are not touched; does nothing on PostgreSQL."""
    if connection.vendor != "sqlite":
        return 0
    quote = connection.ops.quote_name
    done, last = 0, 0
    decompress = None
    with connection.cursor() as cursor:
        while True:
            cursor.execute(
                f"SELECT id, {quote(column)} FROM {quote(table)} "
                f"WHERE id > %s AND typeof({quote(column)}) = 'blob' ORDER BY id LIMIT %s",
                [last, BATCH],
            )
            rows = cursor.fetchall()
            if not rows:
                return done
            last = rows[-1][0]
            if decompress is None:
                decompress = _decompressor()
            texts = [
                (decompress(value[1:]).decode(), pk)
                for pk, value in rows
                if bytes(value[:1]) == TAG
            ]
            cursor.executemany(
                f"UPDATE {quote(table)} SET {quote(column)} = %s WHERE id = %s", texts
            )
            done += len(texts)


def _decompressor() -> Any:
    try:
        import zstandard
    except ImportError:  # pragma: no cover - zstandard is a dependency
        raise RuntimeError(
            "This database holds answers that an earlier Benchwright stored compressed; "
            "reading them back needs the zstandard package: pip install zstandard, then run "
            "manage.py migrate again."
        ) from None
    return zstandard.ZstdDecompressor().decompress
