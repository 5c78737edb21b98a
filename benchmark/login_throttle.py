"""Login throttling with django-axes (settings: AXES_*): what a locked-out person is told, on
the login pages (a page, HTTP 429) and through the API's basic auth (JSON, HTTP 429), and
which address a request comes from when the server sits behind proxies."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from axes.helpers import get_cool_off
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from rest_framework.exceptions import APIException
from rest_framework.request import Request

LOCKED_OUT_TEMPLATE = "registration/locked_out.html"


def _duration(delta: timedelta) -> str:
    minutes = max(1, math.ceil(delta.total_seconds() / 60))
    if minutes % 60 == 0:
        hours = minutes // 60
        return f"{hours} hour{'s' if hours != 1 else ''}"
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


def lockout_message(cool_off: timedelta | None) -> str:
    """What the person is told. Every further attempt restarts the cool-off (axes'
    AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT), so "from now" is right."""
    text = "Too many failed login attempts for this account or from your address."
    if not cool_off:
        return f"{text} Ask an administrator to unlock it."
    until = timezone.localtime(timezone.now() + cool_off)
    return (
        f"{text} Try again in {_duration(cool_off)} (after {until:%H:%M} {until.tzname()}); "
        "each new attempt before then starts the wait again."
    )


def _retry_after(cool_off: timedelta | None) -> int | None:
    return int(cool_off.total_seconds()) if cool_off else None


def _wants_json(request: HttpRequest) -> bool:
    if request.path.startswith("/api/"):
        return True
    return request.accepts("application/json") and not request.accepts("text/html")


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: Any = None
) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: the answer to a login attempt while locked out."""
    cool_off = get_cool_off(request)
    message = lockout_message(cool_off)
    response: HttpResponse
    if _wants_json(request):
        response = JsonResponse({"detail": message}, status=429)
    else:
        response = render(request, LOCKED_OUT_TEMPLATE, {"message": message}, status=429)
    wait = _retry_after(cool_off)
    if wait:
        response["Retry-After"] = str(wait)
    return response


class LoginLockedOut(APIException):
    status_code = 429
    default_code = "locked_out"

    def __init__(self, message: str, wait: int | None) -> None:
        super().__init__(message)
        self.wait = wait  # DRF's exception handler turns it into Retry-After


def api_locked_out(sender: Any, request: Any = None, **kwargs: Any) -> None:
    """Receiver of axes' ``user_locked_out``. DRF's basic auth calls ``authenticate()`` with
    its own Request, which axes' middleware never sees; raising here stops the API call with
    429 and the message (the project's exception handler answers it as JSON)."""
    if isinstance(request, Request):
        cool_off = get_cool_off(request)
        raise LoginLockedOut(lockout_message(cool_off), wait=_retry_after(cool_off))


def client_ip(request: HttpRequest) -> str | None:
    """AXES_CLIENT_IP_CALLABLE: the address to count failures against. REMOTE_ADDR, or behind
    LOGIN_PROXY_COUNT trusted proxies, the address the outermost of them saw: that many
    entries from the right of X-Forwarded-For (what a client writes itself stays on the left
    and is not believed)."""
    remote = request.META.get("REMOTE_ADDR")
    count = settings.LOGIN_PROXY_COUNT
    if count <= 0:
        return remote
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    if len(hops) < count:
        return remote
    return hops[-count]


# -- A burst of logins must not starve the rest ----------------------------------------------
# Checking a password costs about 0.4 s of CPU (PBKDF2, kept on purpose). With gunicorn's
# threaded workers, fifty people signing in at once would hold every thread of every worker and
# both cores, and the judging pages would wait behind them. So each process lets at most
# LOGIN_CONCURRENCY password checks run at once (default 1: with two threads per worker, the
# other thread is always free for everything else); a check beyond that is answered at once with
# 503 and Retry-After, and the login page says to press "Log in" again.

BUSY_TEMPLATE = "registration/login_busy.html"
BUSY_MESSAGE = "Many people are signing in right now. Please try again in a few seconds."


def _checks_password(request: HttpRequest) -> bool:
    if request.META.get("HTTP_AUTHORIZATION", "").startswith("Basic "):
        return True
    return request.method == "POST" and request.path in _login_paths()


def _login_paths() -> frozenset[str]:
    from django.urls import reverse

    return frozenset({reverse("login"), reverse("admin:login")})


class LoginConcurrencyMiddleware:
    """Admits at most ``settings.LOGIN_CONCURRENCY`` password checks per process at a time."""

    def __init__(self, get_response: Any) -> None:
        import threading

        self.get_response = get_response
        self.slots = threading.BoundedSemaphore(max(1, settings.LOGIN_CONCURRENCY))

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not _checks_password(request):
            return self.get_response(request)
        if not self.slots.acquire(blocking=False):
            return busy_response(request)
        try:
            return self.get_response(request)
        finally:
            self.slots.release()


def busy_response(request: HttpRequest) -> HttpResponse:
    response: HttpResponse
    if _wants_json(request) or request.META.get("HTTP_AUTHORIZATION", "").startswith("Basic "):
        response = JsonResponse({"detail": BUSY_MESSAGE}, status=503)
    else:
        response = render(request, BUSY_TEMPLATE, {"message": BUSY_MESSAGE}, status=503)
    response["Retry-After"] = "2"
    return response
