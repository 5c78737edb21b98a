"""A burst of logins cannot take every thread: password checks beyond LOGIN_CONCURRENCY per
process are answered at once with 503 and Retry-After, everything else goes through."""

from __future__ import annotations

import base64
import json
import threading

import pytest
from django.http import HttpResponse
from django.test import RequestFactory, override_settings

from benchmark.login_throttle import BUSY_MESSAGE, LoginConcurrencyMiddleware

pytestmark = pytest.mark.django_db


class _Gate:
    """A view that holds its thread until released, like a password check in progress."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.calls = 0

    def __call__(self, request):
        self.calls += 1
        if request.method == "POST":
            self.entered.set()
            self.release.wait(5)
        return HttpResponse("ok")


def _login_post(rf: RequestFactory):
    return rf.post("/accounts/login/", {"username": "a", "password": "b"})


def _hold_one_login(middleware, gate, rf):
    results = []
    thread = threading.Thread(target=lambda: results.append(middleware(_login_post(rf))))
    thread.start()
    assert gate.entered.wait(5)
    return thread, results


def test_second_login_at_once_is_refused_with_retry_after_and_the_rest_goes_through():
    rf = RequestFactory()
    gate = _Gate()
    middleware = LoginConcurrencyMiddleware(gate)
    thread, results = _hold_one_login(middleware, gate, rf)
    try:
        busy = middleware(_login_post(rf))
        assert busy.status_code == 503
        assert busy["Retry-After"] == "2"
        assert BUSY_MESSAGE in busy.content.decode()
        # Judging and every other page are not held back by the login in progress.
        assert middleware(rf.get("/projects/")).status_code == 200
        assert middleware(rf.post("/judgment-tasks/1/items/1/")).status_code == 200
        assert middleware(rf.get("/accounts/login/")).status_code == 200
    finally:
        gate.release.set()
        thread.join()
    assert results[0].status_code == 200
    # The slot is free again.
    assert middleware(_login_post(rf)).status_code == 200


def test_basic_auth_counts_as_a_password_check_and_gets_json():
    rf = RequestFactory()
    gate = _Gate()
    middleware = LoginConcurrencyMiddleware(gate)
    thread, _ = _hold_one_login(middleware, gate, rf)
    try:
        token = base64.b64encode(b"u:p").decode()
        busy = middleware(rf.get("/api/items/", HTTP_AUTHORIZATION=f"Basic {token}"))
        assert busy.status_code == 503
        assert json.loads(busy.content) == {"detail": BUSY_MESSAGE}
        # A session-authenticated API call checks no password and goes through.
        assert middleware(rf.get("/api/items/")).status_code == 200
    finally:
        gate.release.set()
        thread.join()


@override_settings(LOGIN_CONCURRENCY=2)
def test_the_limit_is_a_setting():
    rf = RequestFactory()
    gate = _Gate()
    middleware = LoginConcurrencyMiddleware(gate)
    thread, _ = _hold_one_login(middleware, gate, rf)
    try:
        second_gate_passes = middleware.slots.acquire(blocking=False)
        assert second_gate_passes
        middleware.slots.release()
    finally:
        gate.release.set()
        thread.join()


def test_the_middleware_is_installed_before_the_session(client, django_user_model):
    from django.conf import settings

    names = settings.MIDDLEWARE
    assert names.index("benchmark.login_throttle.LoginConcurrencyMiddleware") < names.index(
        "django.contrib.sessions.middleware.SessionMiddleware"
    )
    django_user_model.objects.create_user("ann", password="pw-long-enough-123")
    response = client.post(
        "/accounts/login/", {"username": "ann", "password": "pw-long-enough-123"}
    )
    assert response.status_code == 302
