"""Saved answer versions (ResponseVersion.text) are plain text on every database again.

As benchmark 0019_unpack_response_text does for the answers: on SQLite, each version of 512
characters or more that annotation 0017's compressed field (PackedTextField, removed) stored as
zstd-compressed bytes is rewritten as its text, 200 rows at a time; text rows and PostgreSQL are
left as they are.

Old rows: a packed version becomes the same text, unpacked; every other row is unchanged.
Reversing it does nothing.
"""

from django.db import migrations

from benchmark.migrations._unpack_text import unpack_stored_text


def unpack(apps, schema_editor):
    unpack_stored_text(schema_editor.connection, "annotation_responseversion")


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0017_answer_versions_packed_on_sqlite"),
    ]

    operations = [
        migrations.RunPython(unpack, migrations.RunPython.noop),
    ]
