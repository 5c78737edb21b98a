"""Issue 9, defect 8: login throttling (django-axes). After 10 failed logins for a username, or
from an address, further logins (even with the right password) are refused for 15 minutes, on
the login page, the admin's login page and the API's basic auth alike; failures on one count
for the others. The person locked out gets a page (or, from the API, a JSON message) saying
when to try again, with HTTP 429, never a 500.

Login throttling is off in the rest of the suite (tests/conftest.py); the ``throttled``
fixture turns it on with the project's settings."""

from __future__ import annotations

import base64
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"
API = "/api/projects/"
LIMIT = 10


@pytest.fixture
def throttled(settings: Any) -> None:
    settings.AXES_ENABLED = True


def login(client: Client, username: str, password: str, ip: str = "10.0.0.1") -> Any:
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=ip)


def api(client: Client, username: str, password: str, ip: str = "10.0.0.1") -> Any:
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return client.get(API, HTTP_AUTHORIZATION=f"Basic {token}", REMOTE_ADDR=ip)


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_settings_lock_out_per_username_and_per_address_independently(settings: Any) -> None:
    assert settings.AXES_FAILURE_LIMIT == LIMIT
    cool_off: timedelta = settings.AXES_COOLOFF_TIME
    assert cool_off == timedelta(minutes=15)
    assert settings.AXES_LOCKOUT_PARAMETERS == ["username", "ip_address"]
    assert "axes.middleware.AxesMiddleware" in settings.MIDDLEWARE
    assert settings.AUTHENTICATION_BACKENDS[0] == "axes.backends.AxesStandaloneBackend"


def test_wrong_passwords_lock_the_account_and_the_right_one_is_then_refused(
    throttled: None,
) -> None:
    UserFactory(username="alice")
    client = Client()
    for _ in range(LIMIT - 1):
        assert login(client, "alice", "wrong").status_code == 200  # the form, with its error
    locked = login(client, "alice", "wrong")
    assert locked.status_code == 429
    right = login(client, "alice", PASSWORD)
    assert right.status_code == 429
    assert not logged_in(client)
    page = right.content.decode()
    assert "Too many failed login attempts" in page
    assert "Try again in 15" in page and "minutes" in page
    assert 'class="topbar"' in page and "app.css" in page  # the project's own page
    assert right["Retry-After"] == str(15 * 60)
    assert "registration/locked_out.html" in [t.name for t in right.templates]


def test_a_username_is_locked_whatever_the_address(throttled: None) -> None:
    UserFactory(username="alice")
    UserFactory(username="bob")
    for n in range(LIMIT):
        login(Client(), "alice", "wrong", ip=f"10.1.0.{n}")
    client = Client()
    assert login(client, "alice", PASSWORD, ip="10.2.0.1").status_code == 429
    assert not logged_in(client)
    # Someone else, from one of those addresses, is not locked out.
    other = Client()
    assert login(other, "bob", PASSWORD, ip="10.1.0.3").status_code == 302
    assert logged_in(other)


def test_an_address_is_locked_whatever_the_username(throttled: None) -> None:
    UserFactory(username="carol")
    for n in range(LIMIT):
        login(Client(), f"guess{n}", "wrong", ip="10.3.0.1")
    client = Client()
    assert login(client, "carol", PASSWORD, ip="10.3.0.1").status_code == 429
    assert not logged_in(client)
    elsewhere = Client()
    assert login(elsewhere, "carol", PASSWORD, ip="10.4.0.1").status_code == 302
    assert logged_in(elsewhere)


def test_the_lock_ends_after_the_cool_off(throttled: None) -> None:
    UserFactory(username="alice")
    for _ in range(LIMIT):
        login(Client(), "alice", "wrong")
    assert login(Client(), "alice", PASSWORD).status_code == 429
    from axes.models import AccessAttempt

    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    client = Client()
    assert login(client, "alice", PASSWORD).status_code == 302
    assert logged_in(client)


def test_api_basic_auth_is_throttled_and_answers_json(throttled: None) -> None:
    UserFactory(username="alice")
    client = Client()
    for _ in range(LIMIT - 1):
        assert api(client, "alice", "wrong").status_code in (401, 403)
    assert api(client, "alice", "wrong").status_code == 429
    right = api(client, "alice", PASSWORD)
    assert right.status_code == 429
    assert right["Content-Type"].startswith("application/json")
    detail = right.json()["detail"]
    assert "Too many failed login attempts" in detail and "15 minutes" in detail
    assert right["Retry-After"] == str(15 * 60)


def test_api_failures_count_for_the_login_page_and_the_reverse(throttled: None) -> None:
    UserFactory(username="alice")
    UserFactory(username="dave")
    for n in range(LIMIT // 2):
        api(Client(), "alice", "wrong", ip=f"10.5.0.{n}")
        login(Client(), "alice", "wrong", ip=f"10.6.0.{n}")
    assert login(Client(), "alice", PASSWORD, ip="10.7.0.1").status_code == 429
    # Locked out on the login page: the API refuses the right password as well.
    for _ in range(LIMIT):
        login(Client(), "dave", "wrong", ip="10.8.0.1")
    response = api(Client(), "dave", PASSWORD, ip="10.9.0.1")
    assert response.status_code == 429
    assert "Too many failed login attempts" in response.json()["detail"]


def test_the_admin_login_is_throttled_too(throttled: None) -> None:
    UserFactory(username="root", is_staff=True, is_superuser=True)
    client = Client()
    for _ in range(LIMIT):
        client.post(
            "/admin/login/?next=/admin/",
            {"username": "root", "password": "wrong"},
            REMOTE_ADDR="10.10.0.1",
        )
    response = client.post(
        "/admin/login/?next=/admin/",
        {"username": "root", "password": PASSWORD},
        REMOTE_ADDR="10.10.0.2",
    )
    assert response.status_code == 429
    assert "Too many failed login attempts" in response.content.decode()
    assert not logged_in(client)


def test_behind_a_proxy_the_forwarded_address_counts(throttled: None, settings: Any) -> None:
    """With LOGIN_PROXY_COUNT=1 every request comes from the proxy's address: failures count
    against the address the proxy saw (the right-most X-Forwarded-For entry), so one guesser
    does not lock everyone out, and a forged entry on the left does not escape the count."""
    settings.LOGIN_PROXY_COUNT = 1
    proxy = "10.12.0.1"
    UserFactory(username="erin")

    def through_proxy(client: Client, username: str, password: str, forwarded: str) -> Any:
        return client.post(
            LOGIN,
            {"username": username, "password": password},
            REMOTE_ADDR=proxy,
            HTTP_X_FORWARDED_FOR=forwarded,
        )

    for n in range(LIMIT):
        through_proxy(Client(), f"guess{n}", "wrong", forwarded=f"192.0.2.{n}, 198.51.100.7")
    neighbour = Client()
    assert through_proxy(neighbour, "erin", PASSWORD, forwarded="198.51.100.8").status_code == 302
    guesser = Client()
    forged = "203.0.113.99, 198.51.100.7"
    assert through_proxy(guesser, "erin", PASSWORD, forwarded=forged).status_code == 429
