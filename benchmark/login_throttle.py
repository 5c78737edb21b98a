"""Login throttling with django-axes (settings: AXES_*, LOGIN_*).

* A username is locked *from one address* (axes' lockout parameter is the pair): after
  LOGIN_FAILURE_LIMIT failures for it from that address, logins to it from there are refused
  for LOGIN_COOLOFF_MINUTES after the last counted failure. Failures while locked are not
  counted, so they do not push the end of the wait back. The same account from another
  address, and other accounts from the same address, are not held back.
* An address that fails for many accounts (LOGIN_ADDRESS_FAILURE_LIMIT failures within the
  cool-off, whatever the usernames) is slowed down, not shut: from then on one wrong password
  locks that account from that address (:func:`failure_limit`), so a password sprayer gets one
  guess per account; the right password of any account not locked still logs in.
* Password links (benchmark.people) are throttled the same way: opening one that is not valid
  counts as a failed login of the pseudo-account :data:`PASSWORD_LINK_USERNAME` from the
  visitor's address.

Here too: what a locked-out person is told, on the login pages (a page, HTTP 429) and through
the API's basic auth (JSON, HTTP 429), which address a request comes from behind proxies, and
the warning when requests come through a proxy that LOGIN_PROXY_COUNT does not count."""

from __future__ import annotations

import logging
import math
import time
from datetime import timedelta
from typing import Any

from axes.helpers import get_cool_off
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from rest_framework.exceptions import APIException
from rest_framework.request import Request

logger = logging.getLogger(__name__)

LOCKED_OUT_TEMPLATE = "registration/locked_out.html"

#: The name password-link failures are counted under. No account can have it: Django usernames
#: take letters, digits and @.+-_ only.
PASSWORD_LINK_USERNAME = "(password link)"
PASSWORD_LINK_CREDENTIALS = {"username": PASSWORD_LINK_USERNAME}


def _duration(delta: timedelta) -> str:
    minutes = max(1, math.ceil(delta.total_seconds() / 60))
    if minutes % 60 == 0:
        hours = minutes // 60
        return f"{hours} hour{'s' if hours != 1 else ''}"
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


def _is_password_link(credentials: Any) -> bool:
    return isinstance(credentials, dict) and credentials.get("username") == PASSWORD_LINK_USERNAME


# -- What is counted ---------------------------------------------------------------------------


def _axes_request(request: Any) -> Any:
    """``request`` with the attributes axes' handlers read (address, time of the attempt)."""
    from axes.handlers.proxy import AxesProxyHandler

    AxesProxyHandler.update_request(request)
    return request


def address_failures(request: Any) -> int:
    """Failed logins counted from ``request``'s address within the cool-off, for any
    username (password links included)."""
    from axes.attempts import get_cool_off_threshold
    from axes.models import AccessAttempt
    from django.db.models import Sum

    request = _axes_request(request)
    attempts = AccessAttempt.objects.filter(ip_address=request.axes_ip_address)
    if get_cool_off(request):
        attempts = attempts.filter(attempt_time__gte=get_cool_off_threshold(request))
    return attempts.aggregate(n=Sum("failures_since_start"))["n"] or 0


def address_slowed(request: Any) -> bool:
    return address_failures(request) >= settings.LOGIN_ADDRESS_FAILURE_LIMIT


def failure_limit(request: Any, credentials: Any = None) -> int:
    """AXES_FAILURE_LIMIT: failures of one username from one address that lock it there.
    LOGIN_FAILURE_LIMIT, or 1 while the address is slowed down (:func:`address_slowed`)."""
    return 1 if address_slowed(request) else settings.LOGIN_FAILURE_LIMIT


def lock_remaining(request: Any, credentials: Any = None) -> timedelta | None:
    """How long the lock of ``credentials`` from ``request``'s address still lasts: the
    cool-off from its last counted failure (failures while locked are not counted, so this
    only shrinks). None when locks never end by themselves (no cool-off)."""
    cool_off = get_cool_off(request)
    if not cool_off:
        return None
    from axes.handlers.proxy import AxesProxyHandler
    from django.db.models import Max

    handler = AxesProxyHandler.get_implementation()
    latest = None
    if hasattr(handler, "get_user_attempts"):  # the database handler (the default)
        for attempts in handler.get_user_attempts(_axes_request(request), credentials):
            last = attempts.aggregate(last=Max("attempt_time"))["last"]
            if last is not None and (latest is None or last > latest):
                latest = last
    if latest is None:
        return cool_off
    return max(latest + cool_off - timezone.now(), timedelta(seconds=1))


# -- What a locked-out person is told ---------------------------------------------------------


def lockout_message(
    remaining: timedelta | None, credentials: Any = None, *, slowed: bool = False
) -> str:
    """What the person is told, with the time left of the lock."""
    if _is_password_link(credentials):
        text = "Too many password links that are not valid were opened from your address."
    else:
        text = "Too many failed login attempts for this account from your address."
    if not remaining:
        return f"{text} Ask an administrator to unlock it."
    until = timezone.localtime(timezone.now() + remaining)
    text = f"{text} Try again in {_duration(remaining)} (after {until:%H:%M} {until.tzname()})."
    if slowed and not _is_password_link(credentials):
        text += (
            " Logins for many different accounts have failed from your address lately, so "
            "until then one wrong password locks an account from it; the right password of "
            "any other account still works."
        )
    return text


def _retry_after(remaining: timedelta | None) -> int | None:
    return math.ceil(remaining.total_seconds()) if remaining else None


def _locked_out(request: Any, credentials: Any) -> tuple[str, int | None]:
    remaining = lock_remaining(request, credentials)
    slowed = address_slowed(request)
    return lockout_message(remaining, credentials, slowed=slowed), _retry_after(remaining)


def _wants_json(request: HttpRequest) -> bool:
    if request.path.startswith("/api/"):
        return True
    return request.accepts("application/json") and not request.accepts("text/html")


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: Any = None
) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: the answer to a login attempt while locked out."""
    message, wait = _locked_out(request, credentials)
    response: HttpResponse
    if _wants_json(request):
        response = JsonResponse({"detail": message}, status=429)
    else:
        response = render(request, LOCKED_OUT_TEMPLATE, {"message": message}, status=429)
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
        message, wait = _locked_out(request, getattr(request, "axes_credentials", None))
        raise LoginLockedOut(message, wait=wait)


# -- Password links ----------------------------------------------------------------------------


def password_link_refused(request: HttpRequest) -> bool:
    """Whether ``request``'s address has opened too many bad password links lately (always
    False with AXES_ENABLED off). Asked before the link is looked at, so the answer is the
    same whatever the link names."""
    if not getattr(settings, "AXES_ENABLED", True):  # (axes' own default)
        return False
    from axes.handlers.proxy import AxesProxyHandler

    return not AxesProxyHandler.is_allowed(request, PASSWORD_LINK_CREDENTIALS)


def password_link_failed(request: HttpRequest) -> None:
    """Count a bad password link against ``request``'s address, as axes counts a failed
    login; the one that reaches the limit is answered by :func:`lockout_response` (axes'
    middleware)."""
    from django.contrib.auth.signals import user_login_failed

    user_login_failed.send(sender=__name__, credentials=PASSWORD_LINK_CREDENTIALS, request=request)


# -- Which address a request comes from ------------------------------------------------------


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


PROXY_WARNING = (
    "Requests reach Benchwright through a proxy (they carry X-Forwarded-For), but "
    "LOGIN_PROXY_COUNT is 0, so login throttling takes the proxy's address for every "
    "client's: one person's failed logins slow down everyone behind it. Set LOGIN_PROXY_COUNT "
    "to the number of proxies in front of the app (1 for one nginx or Caddy) in the "
    "environment or .env, and restart."
)
#: At most one log line about it per process in this many seconds.
PROXY_WARNING_EVERY = 600.0
_proxy_warned_at: float | None = None


def proxy_uncounted(request: HttpRequest) -> bool:
    """Whether ``request`` came through a proxy that LOGIN_PROXY_COUNT does not count."""
    return settings.LOGIN_PROXY_COUNT <= 0 and bool(request.META.get("HTTP_X_FORWARDED_FOR"))


class ProxySettingCheckMiddleware:
    """Logs :data:`PROXY_WARNING` (at most once per PROXY_WARNING_EVERY seconds per process)
    when requests carry X-Forwarded-For while LOGIN_PROXY_COUNT is 0; the staff's pages show
    it too (:func:`proxy_warning`)."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        global _proxy_warned_at
        if proxy_uncounted(request):
            now = time.monotonic()
            if _proxy_warned_at is None or now - _proxy_warned_at >= PROXY_WARNING_EVERY:
                _proxy_warned_at = now
                logger.warning(PROXY_WARNING)
        return self.get_response(request)


def proxy_warning(request: HttpRequest) -> dict[str, str]:
    """Context processor: ``proxy_warning``, :data:`PROXY_WARNING` for a request that came
    through an uncounted proxy, else empty (base.html and the admin's index show it to
    staff)."""
    return {"proxy_warning": PROXY_WARNING if proxy_uncounted(request) else ""}


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
