"""What the OpenAPI schema says beyond drf-spectacular's defaults, so that it tells the truth
(issue 14, checked by schemathesis in tests/benchmark/test_api_schemathesis.py):

* every operation lists its error answers (400/401/403/404, and 409/415 for writes) with the body shapes of
  the one exception handler (benchmark.api.exceptions);
* ids are integers a database can hold: query filters use :func:`id_filter`, and integer path
  parameters and ``page`` get the same bounds, so 10**20 is a 400 (or 404), never a 500.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.pagination import PageNumberPagination

from benchmark.pagination import CountedPaginator

# The largest id a BigAutoField holds (SQLite's INTEGER and PostgreSQL's bigint alike).
ID_MAX = 2**63 - 1


class QueryIntegerField(serializers.IntegerField):
    """An integer query parameter. Given empty (``?project=``) it is a 400 like any other
    non-integer, rather than DRF's "not given" for form-like input: the schema says integer."""

    def get_value(self, dictionary: Any) -> Any:
        if self.field_name in dictionary:
            return dictionary[self.field_name]
        return empty


def id_filter(help_text: str = "") -> serializers.IntegerField:
    """A query parameter naming a row by id: 1..ID_MAX, anything else a 400 naming it (ids
    beyond 64 bits used to reach the database and fail there: OverflowError on SQLite)."""
    return QueryIntegerField(required=False, min_value=1, max_value=ID_MAX, help_text=help_text)


class BoundedPageNumberPagination(PageNumberPagination):
    """Page numbers as the schema states them: 1..ID_MAX (a page past the end is a 404)."""

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        params = super().get_schema_operation_parameters(view)
        for param in params:
            if param["name"] == self.page_query_param:
                param["schema"] = {"type": "integer", "minimum": 1, "maximum": ID_MAX}
        return params


class CountedPagination(BoundedPageNumberPagination):
    """For a view whose ``known_count()`` can tell how many rows it lists (the kept item
    tallies) without ``COUNT(*)`` over them, which grows with the project (about 0.9 s at
    a million items on SQLite); the view answers None where it cannot."""

    def paginate_queryset(self, queryset: Any, request: Any, view: Any = None) -> Any:
        known = view.known_count() if view is not None and hasattr(view, "known_count") else None
        if known is not None:
            self.django_paginator_class = partial(CountedPaginator, count=known)  # type: ignore[assignment]
        return super().paginate_queryset(queryset, request, view)


ERROR = {
    "type": "object",
    "description": "An error the client can act on, with a message naming what is wrong.",
    "properties": {
        "detail": {"type": "string"},
        # Only for a record that cannot be read (benchmark.formats.FormatError).
        "file": {"type": "string", "nullable": True},
        "record": {"nullable": True},
        "field": {"type": "string", "nullable": True},
    },
    "required": ["detail"],
}
VALIDATION_ERROR = {
    "type": "object",
    "description": (
        "Bad input: either `detail` (with `file`, `record` and `field` for a record that "
        "cannot be read), or one key per rejected parameter or field, each with its messages "
        "(`non_field_errors` for the input as a whole)."
    ),
    "additionalProperties": {},
}

_DESCRIPTIONS = {
    "400": "Bad input: a parameter or field, named in the body",
    "401": (
        "No credentials, or ones that authenticate nobody (a wrong password; an unknown, "
        "revoked or expired token): the body says which"
    ),
    "403": "Your role in the project does not allow this (or a session request without CSRF)",
    "404": "No such object, or it belongs to a project you are not a member of",
    "409": "Conflicts with what is there (e.g. an id the project has already)",
    "415": "Unsupported media type",
}
_WRITES = {"post", "put", "patch", "delete"}


#: A string without NUL characters (which PostgreSQL text cannot hold).
NO_NUL = "^[^\\u0000]*$"


def _bound_integer_path_parameters(operation: dict[str, Any]) -> None:
    for param in operation.get("parameters", []):
        schema = param.get("schema", {})
        if param.get("in") == "path" and schema.get("type") == "integer":
            schema.setdefault("minimum", 1)
            schema.setdefault("maximum", ID_MAX)


def _no_null_characters(operation: dict[str, Any]) -> None:
    """Free-text query parameters say what DRF's CharField enforces: no NUL characters (which
    PostgreSQL text cannot hold); one answers 400 naming the parameter."""
    for param in operation.get("parameters", []):
        schema = param.get("schema", {})
        if param.get("in") == "query" and schema.get("type") == "string" and "enum" not in schema:
            schema.setdefault("pattern", NO_NUL)


def _no_null_characters_in_bodies(schemas: dict[str, Any]) -> None:
    """Every text field says what the API enforces (benchmark.limits): no NUL characters."""
    for component in schemas.values():
        for prop in (component.get("properties") or {}).values():
            if prop.get("type") == "string" and not ({"enum", "format"} & set(prop)):
                prop.setdefault("pattern", NO_NUL)


def _bodies_required(operation: dict[str, Any]) -> None:
    """A write that takes a body needs one (every such serializer has a required field)."""
    body = operation.get("requestBody")
    if body is not None:
        body["required"] = True


def error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> Any:
    """drf-spectacular postprocessing hook: error answers for every operation, and what the
    API enforces beyond the serializers' fields (a body, no NUL characters)."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    _no_null_characters_in_bodies(schemas)
    schemas["Error"] = ERROR
    schemas["ValidationError"] = VALIDATION_ERROR
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            _bound_integer_path_parameters(operation)
            _no_null_characters(operation)
            _bodies_required(operation)
            codes = ["400", "401", "403", "404"]
            if method in _WRITES:
                codes += ["409", "415"]
            responses = operation.setdefault("responses", {})
            for code in codes:
                ref = "ValidationError" if code == "400" else "Error"
                responses.setdefault(
                    code,
                    {
                        "description": _DESCRIPTIONS[code],
                        "content": {
                            "application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}
                        },
                    },
                )
    return result
