"""Answers (Response.text) are plain text on every database again.

On SQLite, benchmark 0017 and the compressed field (PackedTextField, removed) stored an answer of
512 characters or more as zstd-compressed bytes. This migration rewrites each such row as the
text it holds, 200 rows at a time; rows that are already text, and every row on PostgreSQL,
are left as they are.

Old rows: a packed answer becomes the same text, unpacked; every other row is unchanged. The
database file grows by about the space the compression had saved
(``VACUUM`` is not needed; SQLite reuses the pages). Reversing it does nothing: the rows stay
plain text, which the older code also reads.
"""

from django.db import migrations

from benchmark.migrations._unpack_text import unpack_stored_text


def unpack(apps, schema_editor):
    unpack_stored_text(schema_editor.connection, "benchmark_response")


class Migration(migrations.Migration):
    dependencies = [
        ("benchmark", "0018_api_tokens"),
    ]

    operations = [
        migrations.RunPython(unpack, migrations.RunPython.noop),
    ]
