"""Issue 9, defect 8, and issue 22, item 3: login throttling (django-axes). After 10 failed logins
for a username from one address, further logins to it from there (even with the right password)
are refused for 15 minutes after the last counted failure, on the login page, the admin's login
page and the API's basic auth alike; failures on one count for the others. Attempts while
locked do not restart the wait. Other accounts from that address, and the same account from
elsewhere, log in. An address failing for many accounts is slowed down (one wrong password
locks an account from it), never shut for right passwords. The person locked out gets a page
(or, from the API, a JSON message) saying when to try again, with HTTP 429, never a 500.
Requests through a proxy that LOGIN_PROXY_COUNT does not count are logged and shown to staff.

Login throttling is off in the rest of the suite (tests/conftest.py); the ``throttled``
fixture turns it on with the project's settings."""

from __future__ import annotations

import base64
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
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


def test_settings_lock_out_the_pair_of_username_and_address(settings: Any) -> None:
    assert settings.LOGIN_FAILURE_LIMIT == LIMIT
    assert settings.AXES_FAILURE_LIMIT == "benchmark.login_throttle.failure_limit"
    cool_off: timedelta = settings.AXES_COOLOFF_TIME
    assert cool_off == timedelta(minutes=15)
    assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]
    assert settings.AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT is False
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
    assert "Too many failed login attempts for this account from your address" in page
    assert "Try again in 15" in page and "minutes" in page
    assert 'class="topbar"' in page and "app.css" in page  # the project's own page
    assert 15 * 60 - 60 < int(right["Retry-After"]) <= 15 * 60
    assert "registration/locked_out.html" in [t.name for t in right.templates]


def test_one_address_locks_only_the_account_it_guessed(throttled: None) -> None:
    """Issue 22, item 3: ten wrong passwords for A from one address lock A there; B logs in
    from the same address with the right password, and A from another address."""
    UserFactory(username="alice")
    UserFactory(username="bob")
    for _ in range(LIMIT):
        login(Client(), "alice", "wrong", ip="10.1.0.1")
    client = Client()
    assert login(client, "alice", PASSWORD, ip="10.1.0.1").status_code == 429
    assert not logged_in(client)
    neighbour = Client()
    assert login(neighbour, "bob", PASSWORD, ip="10.1.0.1").status_code == 302
    assert logged_in(neighbour)
    elsewhere = Client()
    assert login(elsewhere, "alice", PASSWORD, ip="10.2.0.1").status_code == 302
    assert logged_in(elsewhere)


def test_guessing_many_usernames_from_one_address_locks_no_one_else(throttled: None) -> None:
    UserFactory(username="carol")
    for n in range(LIMIT):
        login(Client(), f"guess{n}", "wrong", ip="10.3.0.1")
    client = Client()
    assert login(client, "carol", PASSWORD, ip="10.3.0.1").status_code == 302
    assert logged_in(client)


def test_an_address_failing_for_many_accounts_is_slowed_down_not_shut(
    throttled: None, settings: Any
) -> None:
    """Past LOGIN_ADDRESS_FAILURE_LIMIT failures from one address (any usernames), one wrong
    password locks an account from it, with a message saying why; the right password of an
    account not locked still logs in from there."""
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = 30
    UserFactory(username="carol")
    UserFactory(username="dora")
    for n in range(30):
        login(Client(), f"spray{n % 5}", "wrong", ip="10.3.1.1")  # 6 each: none locked
    first_guess = login(Client(), "carol", "wrong", ip="10.3.1.1")
    assert first_guess.status_code == 429
    message = first_guess.content.decode()
    assert "one wrong password locks an account" in message
    assert login(Client(), "carol", PASSWORD, ip="10.3.1.1").status_code == 429
    neighbour = Client()
    assert login(neighbour, "dora", PASSWORD, ip="10.3.1.1").status_code == 302
    assert logged_in(neighbour)
    # Below the limit, elsewhere: ten guesses as before.
    assert login(Client(), "carol", "wrong", ip="10.3.2.1").status_code == 200


def test_a_successful_login_clears_that_accounts_failures_from_that_address(
    throttled: None,
) -> None:
    UserFactory(username="alice")
    for _ in range(LIMIT - 1):
        login(Client(), "alice", "wrong")
    assert login(Client(), "alice", PASSWORD).status_code == 302
    for _ in range(LIMIT - 1):
        assert login(Client(), "alice", "wrong").status_code == 200  # counted from zero again


def test_attempts_while_locked_do_not_restart_the_wait(throttled: None) -> None:
    from axes.models import AccessAttempt

    UserFactory(username="alice")
    for _ in range(LIMIT):
        login(Client(), "alice", "wrong")
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=10))
    for _ in range(5):  # more guesses while locked: refused, not counted
        assert login(Client(), "alice", "wrong").status_code == 429
    waiting = login(Client(), "alice", PASSWORD)
    assert waiting.status_code == 429
    assert "Try again in 5 minutes" in waiting.content.decode()
    assert 4 * 60 < int(waiting["Retry-After"]) <= 5 * 60
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    client = Client()
    assert login(client, "alice", PASSWORD).status_code == 302
    assert logged_in(client)


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
    assert 15 * 60 - 60 < int(right["Retry-After"]) <= 15 * 60


def test_api_failures_count_for_the_login_page_and_the_reverse(throttled: None) -> None:
    UserFactory(username="alice")
    UserFactory(username="dave")
    for _ in range(LIMIT // 2):
        api(Client(), "alice", "wrong", ip="10.5.0.1")
        login(Client(), "alice", "wrong", ip="10.5.0.1")
    assert login(Client(), "alice", PASSWORD, ip="10.5.0.1").status_code == 429
    # Locked out on the login page: the API refuses the right password as well.
    for _ in range(LIMIT):
        login(Client(), "dave", "wrong", ip="10.8.0.1")
    response = api(Client(), "dave", PASSWORD, ip="10.8.0.1")
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
        REMOTE_ADDR="10.10.0.1",
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
        through_proxy(Client(), "erin", "wrong", forwarded=f"192.0.2.{n}, 198.51.100.7")
    neighbour = Client()
    assert through_proxy(neighbour, "erin", PASSWORD, forwarded="198.51.100.8").status_code == 302
    guesser = Client()
    forged = "203.0.113.99, 198.51.100.7"
    assert through_proxy(guesser, "erin", PASSWORD, forwarded=forged).status_code == 429


# --------------------------------------------------------------------------- the proxy warning


@pytest.fixture
def staff_client() -> Client:
    client = Client()
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    return client


def test_an_uncounted_proxy_is_logged_and_shown_to_staff(
    staff_client: Client, settings: Any, caplog: pytest.LogCaptureFixture, monkeypatch: Any
) -> None:
    """Issue 22, item 3: requests with X-Forwarded-For while LOGIN_PROXY_COUNT=0 (every
    client would count as the proxy) are logged, at most once per interval per process, and
    the people page and the admin's index say what to set."""
    from benchmark import login_throttle

    monkeypatch.setattr(login_throttle, "_proxy_warned_at", None)
    settings.LOGIN_PROXY_COUNT = 0
    forwarded = {"HTTP_X_FORWARDED_FOR": "198.51.100.7", "REMOTE_ADDR": "127.0.0.1"}
    with caplog.at_level("WARNING", logger="benchmark.login_throttle"):
        Client().get(LOGIN, **forwarded)
        Client().get(LOGIN, **forwarded)
    logged = [r for r in caplog.records if "LOGIN_PROXY_COUNT is 0" in r.getMessage()]
    assert len(logged) == 1
    for url in ("/people/", "/admin/"):
        page = staff_client.get(url, **forwarded)
        assert page.status_code == 200
        body = page.content.decode()
        assert 'id="proxy-warning"' in body, url
        assert "Set LOGIN_PROXY_COUNT" in body
    # Counted right, or no proxy at all: no banner.
    assert 'id="proxy-warning"' not in staff_client.get("/people/").content.decode()
    settings.LOGIN_PROXY_COUNT = 1
    assert 'id="proxy-warning"' not in staff_client.get("/admin/", **forwarded).content.decode()


def test_the_proxy_warning_is_for_staff_only(settings: Any, users: dict[str, Any]) -> None:
    settings.LOGIN_PROXY_COUNT = 0
    client = Client()
    client.force_login(users["admin"])  # a project's admin, not staff
    page = client.get(reverse("benchmark:project_list"), HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert page.status_code == 200
    assert 'id="proxy-warning"' not in page.content.decode()
