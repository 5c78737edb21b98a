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
