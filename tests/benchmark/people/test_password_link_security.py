"""Issue 22, item 2: password links must not list usernames. A link that is not valid (a made-up
or missing account id, a deactivated account, a used or expired token) answers one page naming
nobody, whatever the id in it; only a valid link shows the form (and names its account). Opening
bad links is throttled like the login (django-axes): after LOGIN_FAILURE_LIMIT of them from one
address, that address is refused for the cool-off, with 429 and the wait."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.tokens import default_token_generator
from django.test import Client
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

LIMIT = 10


def link(user_id: Any, token: str) -> str:
    uidb64 = user_id if isinstance(user_id, str) else urlsafe_base64_encode(force_bytes(user_id))
    return reverse("benchmark:password_link_open", args=[uidb64, token])


def valid_link(user: Any) -> str:
    return link(user.pk, default_token_generator.make_token(user))


def without_csrf(body: bytes) -> str:
    text = body.decode()
    text = re.sub(r'"X-CSRFToken": "[^"]*"', '"X-CSRFToken": ""', text)
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", text)


@pytest.fixture
def accounts(db: None) -> dict[str, Any]:
    admin = UserFactory(username="admin-person", is_staff=True, is_superuser=True)
    used = UserFactory(username="used-person")
    used_link = valid_link(used)
    used.set_password("a-new-long-pass-77")  # the token signs the password: now it is used
    used.save()
    gone = UserFactory(username="gone-person", is_active=False)
    return {"admin": admin, "used": used, "used_link": used_link, "gone": gone}


def bad_links(accounts: dict[str, Any]) -> dict[str, str]:
    admin = accounts["admin"]
    return {
        "an existing account, a wrong token": link(admin.pk, "aaaa-bbbbbbbb"),
        "a missing account": link(admin.pk + 1000, "aaaa-bbbbbbbb"),
        "an id that is not a number": link("MQ-x", "aaaa-bbbbbbbb"),
        "an id that is not base64": link("@@", "aaaa-bbbbbbbb"),
        "a used link": accounts["used_link"],
        "a deactivated account's link": valid_link(accounts["gone"]),
    }


@pytest.mark.parametrize("method", ["get", "post"])
def test_every_bad_link_answers_the_same_page_naming_nobody(
    accounts: dict[str, Any], method: str
) -> None:
    answers = {}
    data = {"password": "a-long-pass-42", "password_again": "a-long-pass-42"}
    for label, url in bad_links(accounts).items():
        response = getattr(Client(), method)(url, data if method == "post" else None)
        answers[label] = (response.status_code, without_csrf(response.content))
    first = next(iter(answers.values()))
    assert first[0] == 410
    assert "This password link is not valid" in first[1]
    for label, answer in answers.items():
        assert answer == first, f"{label} answers differently"
    for name in ("admin-person", "used-person", "gone-person"):
        assert name not in first[1]
    # Nothing was changed through them.
    accounts["used"].refresh_from_db()
    assert accounts["used"].check_password("a-new-long-pass-77")


def test_only_a_valid_link_shows_the_form_and_names_its_account(accounts: dict[str, Any]) -> None:
    response = Client().get(valid_link(accounts["admin"]))
    assert response.status_code == 200
    body = response.content.decode()
    assert "Set the password of admin-person" in body and 'id="password-form"' in body


@pytest.fixture
def throttled(settings: Any) -> None:
    settings.AXES_ENABLED = True


def test_bad_links_from_one_address_are_throttled_like_logins(
    accounts: dict[str, Any], throttled: None
) -> None:
    guesses = [link(accounts["admin"].pk, f"aaaa-{n:08d}") for n in range(LIMIT)]
    for url in guesses[:-1]:
        assert Client().get(url, REMOTE_ADDR="10.20.0.1").status_code == 410
    last = Client().get(guesses[-1], REMOTE_ADDR="10.20.0.1")
    assert last.status_code == 429
    # Refused for a while, even a valid link, whatever the id: nothing is looked up.
    valid = valid_link(accounts["admin"])
    refused = Client().get(valid, REMOTE_ADDR="10.20.0.1")
    assert refused.status_code == 429
    body = refused.content.decode()
    assert "Too many password links that are not valid" in body and "Try again in" in body
    assert "admin-person" not in body
    assert 0 < int(refused["Retry-After"]) <= 15 * 60
    missing = Client().get(link(99999, "aaaa-bbbbbbbb"), REMOTE_ADDR="10.20.0.1")
    assert (missing.status_code, without_csrf(missing.content)) == (
        429,
        without_csrf(refused.content),
    )
    # Another address is not held back.
    assert Client().get(valid, REMOTE_ADDR="10.20.0.2").status_code == 200


def test_the_link_throttle_ends_after_the_cool_off(
    accounts: dict[str, Any], throttled: None
) -> None:
    from axes.models import AccessAttempt

    for n in range(LIMIT):
        Client().get(link(accounts["admin"].pk, f"aaaa-{n:08d}"), REMOTE_ADDR="10.21.0.1")
    valid = valid_link(accounts["admin"])
    assert Client().get(valid, REMOTE_ADDR="10.21.0.1").status_code == 429
    AccessAttempt.objects.update(
        attempt_time=AccessAttempt.objects.get().attempt_time - timedelta(minutes=16)
    )
    assert Client().get(valid, REMOTE_ADDR="10.21.0.1").status_code == 200
