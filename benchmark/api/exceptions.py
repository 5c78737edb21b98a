from typing import Any

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from benchmark.exceptions import DomainError
from benchmark.formats import FormatError


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DomainError):
        return Response({"detail": exc.message}, status=exc.status_code)
    if isinstance(exc, FormatError):
        return Response(
            {"detail": str(exc), "file": exc.file, "record": exc.record, "field": exc.field},
            status=400,
        )
    return drf_exception_handler(exc, context)
