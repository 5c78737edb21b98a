"""The drafts endpoint, called by ``static/js/drafts.js``: JSON in, JSON out.

``GET`` answers ``{"version", "payload", "updated_at", "updated_ms", "csrf_token"}`` (404 when
the user has no draft there); ``POST`` a JSON body ``{"version", "payload"}`` keeps it; ``DELETE`` drops it
(204). Every answer checks that the user may edit the object the key names (403/404), and an
error answers ``{"error": message}``. The CSRF token in the GET answer lets a page whose session
was renewed in another tab (logging in again rotates the token) save again without a reload."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from benchmark.exceptions import DomainError, ValidationFailed
from benchmark.input_drafts import selectors, services
from benchmark.input_drafts.scopes import scope_check
from benchmark.typing import request_user


def _error(message: str, status: int) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _body(request: HttpRequest) -> dict[str, Any]:
    try:
        size = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        size = 0
    services.payload_size_check(size)
    try:
        data = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise ValidationFailed("The draft is not JSON.") from None
    if not isinstance(data, dict):
        raise ValidationFailed('A draft is a JSON object: {"version", "payload"}.')
    return data


@login_required
@never_cache
@require_http_methods(["GET", "POST", "DELETE"])
def input_draft(request: HttpRequest, key: str) -> HttpResponse:
    user = request_user(request)
    try:
        if request.method == "DELETE":
            scope_check(user=user, key=key)
            services.input_draft_delete(user=user, key=key)
            return HttpResponse(status=204)
        if request.method == "POST":
            data = _body(request)
            draft = services.input_draft_save(
                user=user, key=key, version=data.get("version", ""), payload=data.get("payload")
            )
            return JsonResponse({"updated_at": draft.updated_at.isoformat()})
        draft = selectors.input_draft_get(user=user, key=key)
    except DomainError as exc:
        answer = _error(exc.message, exc.status_code)
        if request.method == "GET":  # "no draft" still renews the page's token
            answer = JsonResponse(
                {"error": exc.message, "csrf_token": get_token(request)}, status=exc.status_code
            )
        return answer
    except Http404 as exc:
        return _error(str(exc) or "Not found, or not in a project of yours.", 404)
    except PermissionDenied as exc:
        return _error(str(exc) or "You may not edit this.", 403)
    return JsonResponse(
        {
            "version": draft.version,
            "payload": draft.payload,
            "updated_at": draft.updated_at.isoformat(),
            "updated_ms": int(draft.updated_at.timestamp() * 1000),  # for the browser's clock
            "csrf_token": get_token(request),
        }
    )
