"""The API's JSON parser: DRF's, with the limits of ``benchmark.limits`` applied to every JSON
body, so bad input answers 400 naming what and where instead of a server error."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.utils import json as drf_json

from benchmark import limits


class LimitedJSONParser(JSONParser):
    """JSON bodies within ``limits``: no deeper than JSON_DEPTH (checked by a bracket scan only
    when the body has more opening brackets than that), no larger than RECORD_BYTES, and no NUL
    character in any string (looked for only when the body has the escape ``\\u0000``)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        raw = stream.read(limits.RECORD_BYTES.limit + 1) if stream is not None else b""
        if len(raw) > limits.RECORD_BYTES.limit:
            raise ParseError(
                f"request body: larger than {limits.RECORD_BYTES.limit:,} bytes (the limit)"
            )
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        utf8 = encoding.lower().replace("-", "") == "utf8"
        try:
            text = raw.decode(encoding)
            limits.json_check_depth(raw if utf8 else text)
            parse_constant = drf_json.strict_constant if self.strict else None
            data = drf_json.loads(text, parse_constant=parse_constant)
        except ValueError as exc:  # UnicodeDecodeError, JSONDecodeError, JsonTooDeep
            raise ParseError(f"request body: JSON parse error - {exc}") from None
        except RecursionError:  # not reached after the depth check; kept as a last guard
            raise ParseError(
                f"request body: JSON nested deeper than {limits.JSON_DEPTH.limit} levels"
            ) from None
        where = limits.json_text_nul_path(raw if utf8 else text, data)
        if where is not None:
            raise ParseError({where: [limits.NUL_MESSAGE]})
        return data
