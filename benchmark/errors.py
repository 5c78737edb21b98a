"""Error pages: under /api/ a 404 for a path no route matches answers JSON in the API's error
shape (``{"detail": ...}``, as documented in the schema), elsewhere the HTML page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)
