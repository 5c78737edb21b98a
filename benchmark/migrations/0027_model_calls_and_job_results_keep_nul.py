"""A model call's texts (``ModelCall.system``, ``prompt``, ``answer``, ``error``) and a job's
result (``Job.result``, which quotes a model's answer) keep a NUL character on PostgreSQL
(whose text and ``jsonb`` columns refuse it) as on SQLite: ``benchmark.fields.NulTextField``
and ``NulJSONField`` store such a text escaped and read it back exactly. The columns stay as
they are; no SQL runs (a change of the model's state only, so SQLite does not rebuild the
tables).

Old rows: kept as they are and read as before (none can hold a NUL on PostgreSQL; on SQLite a
stored NUL reads back unchanged, and only a text beginning with the escape mark ``\\x01json:``
would read differently, which nothing writes).
"""

import benchmark.fields
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("benchmark", "0026_response_text_keeps_nul"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="job",
                    name="result",
                    field=benchmark.fields.NulJSONField(blank=True, default=dict),
                ),
                *[
                    migrations.AlterField(
                        model_name="modelcall",
                        name=name,
                        field=benchmark.fields.NulTextField(blank=True),
                    )
                    for name in ("answer", "error", "prompt", "system")
                ],
            ],
        ),
    ]
