"""A JSONField that decodes with orjson: the same values, several times faster, which matters
when an export reads tens of megabytes of JSON. (Imports encode with orjson in bulk.py.)"""

from __future__ import annotations

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


class UTCDay(models.Func):
    """The UTC calendar day of a datetime column, computed by the database (SQLite keeps UTC
    datetimes as text, so the day is its first ten characters). Immutable on both databases,
    so it can make a generated column or an index."""

    template = "substr(%(expressions)s, 1, 10)"
    output_field = models.DateField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        template = "((%(expressions)s AT TIME ZONE 'UTC')::date)"
        return self.as_sql(compiler, connection, template=template, **extra)
