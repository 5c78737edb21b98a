"""Issue 22, item 13: personal API tokens, as scripts expect them. Made and revoked on the user's
own page (/api-tokens/, the key shown once) and by `manage.py api_token`, stored hashed,
with an optional expiry; sent as `Authorization: Token <key>`; every use counted. A request
without credentials answers 401 with `WWW-Authenticate`; unknown, revoked and expired tokens
401 with a message saying which; basic auth keeps working and stays throttled."""

from __future__ import annotations

import base64
import hashlib
import io
import re
from datetime import timedelta
from typing import Any

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.db.models import Sum
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from benchmark.api_tokens import services
from benchmark.models import ApiToken, ApiTokenUse, AuditAction, AuditEvent
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

API = "/api/projects/"
TOKENS = "/api-tokens/"


def token_get(key: str, path: str = API, **extra: Any) -> Any:
    return Client().get(path, HTTP_AUTHORIZATION=f"Token {key}", **extra)


@pytest.fixture
def alice(db: None) -> Any:
    return UserFactory(username="alice")


# --------------------------------------------------------------------------- the API


def test_no_credentials_answer_401_with_www_authenticate(db: None) -> None:
    response = Client().get(API)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Token")
    assert "credentials were not provided" in response.json()["detail"]


def test_a_token_authenticates_as_its_user_and_each_use_is_counted(
    alice: Any, users: dict[str, Any], project: Any
) -> None:
    token, key = services.api_token_create(
        user=users["annotator"], actor=users["annotator"], name="laptop"
    )
    assert key.startswith("bw_") and len(key) > 40
    assert token.prefix == key[:11]
    # Stored hashed: the key itself is nowhere in the row.
    row = ApiToken.objects.values().get(pk=token.pk)
    assert key not in repr(row)
    assert row["key_hash"] == hashlib.sha256(key.encode()).hexdigest()

    first = token_get(key, REMOTE_ADDR="10.30.0.1")
    assert first.status_code == 200
    assert [p["id"] for p in first.json()["results"]] == [project.pk]  # the annotator's projects
    for _ in range(3):
        assert token_get(key, REMOTE_ADDR="10.30.0.1").status_code == 200
    assert token_get(key, REMOTE_ADDR="10.30.0.2").status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None
    uses = ApiTokenUse.objects.filter(token=token).values("address").annotate(n=Sum("requests"))
    assert {u["address"]: u["n"] for u in uses} == {"10.30.0.1": 4, "10.30.0.2": 1}
    # "Bearer" works too (clients generated from the schema send it by default).
    bearer = Client().get(API, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert bearer.status_code == 200


def test_token_requests_need_no_csrf_and_write(users: dict[str, Any], project: Any) -> None:
    _, key = services.api_token_create(user=users["admin"], actor=users["admin"], name="script")
    client = Client(enforce_csrf_checks=True)
    response = client.post(
        f"/api/projects/{project.pk}/items/",
        {"query": "What is on the plaque?"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    assert response.status_code == 201, response.content
    assert project.items.get().query == "What is on the plaque?"


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (lambda token, key: key[:-2] + "xx", "not known"),
        (lambda token, key: "bw_00000000_" + "a" * 43, "not known"),
        (lambda token, key: "x", "not known"),
        (lambda token, key: key[:11] + "_\x00" + key[13:], "not known"),  # (PostgreSQL: no 500)
        (lambda token, key: key.upper(), "not known"),
    ],
)
def test_unknown_tokens_answer_401_saying_so(alice: Any, spoil: Any, message: str) -> None:
    token, key = services.api_token_create(user=alice, actor=alice, name="n")
    response = token_get(spoil(token, key))
    assert response.status_code == 401
    assert message in response.json()["detail"]
    assert response["WWW-Authenticate"].startswith("Token")
    assert not ApiTokenUse.objects.exists()


def test_revoked_expired_and_deactivated_tokens_answer_401_saying_which(alice: Any) -> None:
    revoked, revoked_key = services.api_token_create(user=alice, actor=alice, name="old")
    services.api_token_revoke(token=revoked, actor=alice)
    response = token_get(revoked_key)
    assert response.status_code == 401 and "was revoked" in response.json()["detail"]

    expiring, expiring_key = services.api_token_create(
        user=alice, actor=alice, name="short", expires_days=1
    )
    assert token_get(expiring_key).status_code == 200
    ApiToken.objects.filter(pk=expiring.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = token_get(expiring_key)
    assert response.status_code == 401 and "expired on" in response.json()["detail"]

    _, key = services.api_token_create(user=alice, actor=alice, name="live")
    alice.is_active = False
    alice.save()
    response = token_get(key)
    assert response.status_code == 401 and "deactivated" in response.json()["detail"]


def test_malformed_authorization_headers_answer_401(alice: Any) -> None:
    for header in ["Token", "Token a b", "Token \u00e9t\u00e9"]:
        response = Client().get(API, HTTP_AUTHORIZATION=header)
        assert response.status_code == 401, header
        assert "Token <key>" in response.json()["detail"]


def test_basic_auth_keeps_working_and_stays_throttled(alice: Any, settings: Any) -> None:
    basic = "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert Client().get(API, HTTP_AUTHORIZATION=basic).status_code == 200
    settings.AXES_ENABLED = True
    wrong = "Basic " + base64.b64encode(b"alice:wrong").decode()
    for _ in range(settings.LOGIN_FAILURE_LIMIT - 1):
        assert Client().get(API, HTTP_AUTHORIZATION=wrong).status_code == 401
    assert Client().get(API, HTTP_AUTHORIZATION=wrong).status_code == 429
    assert Client().get(API, HTTP_AUTHORIZATION=basic).status_code == 429
    # A token is not a password: it is not held back by the lockout.
    _, key = services.api_token_create(user=alice, actor=alice, name="ci")
    assert token_get(key).status_code == 200


def test_the_schema_declares_the_token_scheme(clients: dict[str, Client]) -> None:
    schema = yaml.safe_load(clients["annotator"].get("/api/schema/").content)
    schemes = schema["components"]["securitySchemes"]
    token_schemes = [
        name
        for name, scheme in schemes.items()
        if scheme.get("type") == "apiKey" and scheme.get("name") == "Authorization"
    ]
    assert len(token_schemes) == 1
    assert "Token" in schemes[token_schemes[0]]["description"]
    operation = schema["paths"]["/api/projects/"]["get"]
    assert {token_schemes[0]: []} in operation["security"]
    assert "401" in operation["responses"]


# --------------------------------------------------------------------------- the page


def test_the_tokens_page_makes_a_token_shown_once_and_revokes_it(alice: Any) -> None:
    client = Client()
    client.force_login(alice)
    page = client.get(TOKENS)
    assert page.status_code == 200 and "API tokens" in page.content.decode()
    made = client.post(TOKENS, {"name": "notebook", "expires_days": "30"})
    assert made.status_code == 200
    match = re.search(r'id="new-token-key" value="(bw_[^"]+)"', made.content.decode())
    assert match, made.content.decode()
    key = match.group(1)
    token = ApiToken.objects.get(user=alice, name="notebook")
    assert token.expires_at is not None
    assert timedelta(days=29) < token.expires_at - timezone.now() <= timedelta(days=30)
    assert token_get(key).status_code == 200
    # Shown once: the list names it by prefix only.
    again = client.get(TOKENS).content.decode()
    assert key not in again and token.prefix in again and "notebook" in again
    assert "1 request" in again or ">1<" in again
    revoked = client.post(reverse("benchmark:api_token_revoke", args=[token.pk]))
    assert revoked.status_code == 302
    assert token_get(key).status_code == 401
    actions = list(AuditEvent.objects.order_by("id").values_list("action", flat=True))
    assert actions == [AuditAction.API_TOKEN_CREATED, AuditAction.API_TOKEN_REVOKED]


def test_the_tokens_page_reports_bad_input(alice: Any) -> None:
    client = Client()
    client.force_login(alice)
    assert client.post(TOKENS, {"name": ""}).status_code == 400
    response = client.post(TOKENS, {"name": "n", "expires_days": "0"})
    assert response.status_code == 400
    client.post(TOKENS, {"name": "twice"})
    response = client.post(TOKENS, {"name": "twice"})
    assert response.status_code == 400
    assert "name: you have an API token called &#x27;twice&#x27; already" in (
        response.content.decode()
    )
    assert ApiToken.objects.filter(user=alice).count() == 1


def test_nobody_sees_or_revokes_another_users_tokens(alice: Any) -> None:
    token, key = services.api_token_create(user=alice, actor=alice, name="mine")
    other = Client()
    other.force_login(UserFactory(username="mallory", is_staff=True))
    assert "mine" not in other.get(TOKENS).content.decode()
    assert other.post(reverse("benchmark:api_token_revoke", args=[token.pk])).status_code == 404
    assert token_get(key).status_code == 200
    assert Client().get(TOKENS).status_code == 302  # anonymous: to the login page


def test_the_tokens_page_in_bounded_queries(alice: Any, django_assert_max_num_queries: Any) -> None:
    for n in range(15):
        token, key = services.api_token_create(user=alice, actor=alice, name=f"t{n}")
        token_get(key)
    client = Client()
    client.force_login(alice)
    with django_assert_max_num_queries(6):
        body = client.get(TOKENS).content.decode()
    assert body.count('data-token="') == 15


# --------------------------------------------------------------------------- the command


def test_the_command_creates_lists_and_revokes(alice: Any) -> None:
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "api_token",
        "create",
        "--user",
        "alice",
        "--name",
        "ci",
        "--expires-days",
        "7",
        stdout=out,
        stderr=err,
    )
    key = out.getvalue().strip()
    assert re.fullmatch(r"bw_[0-9a-f]{8}_[A-Za-z0-9_-]{43}", key)
    assert "shown only now" in err.getvalue()
    assert token_get(key).status_code == 200
    listed = io.StringIO()
    call_command("api_token", "list", "--user", "alice", stdout=listed)
    assert (
        "ci" in listed.getvalue() and key[:11] in listed.getvalue() and key not in listed.getvalue()
    )
    call_command("api_token", "revoke", "--user", "alice", "--name", "ci", stdout=io.StringIO())
    assert token_get(key).status_code == 401
    with pytest.raises(CommandError, match="no active API token"):
        call_command("api_token", "revoke", "--user", "alice", "--name", "ci")
    with pytest.raises(CommandError, match="nobody is called 'zed'"):
        call_command("api_token", "create", "--user", "zed", "--name", "x")


def test_staff_see_and_revoke_tokens_in_the_admin(alice: Any) -> None:
    token, key = services.api_token_create(user=alice, actor=alice, name="in-admin")
    staff = Client()
    staff.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    listing = staff.get("/admin/benchmark/apitoken/")
    assert listing.status_code == 200
    body = listing.content.decode()
    assert token.prefix in body and key not in body
    response = staff.post(
        "/admin/benchmark/apitoken/",
        {"action": "revoke", "_selected_action": [token.pk]},
    )
    assert response.status_code == 302
    assert token_get(key).status_code == 401


def test_a_token_costs_one_read_and_one_counter_update(
    alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The token and its user in one query, the use counted with one UPDATE (a minute's first
    request from an address also inserts its row and sets last_used_at)."""
    from types import SimpleNamespace

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    moment = timezone.now()  # both requests in the same minute, whenever the test runs
    clock = SimpleNamespace(now=lambda: moment, localtime=timezone.localtime)
    monkeypatch.setattr(services, "timezone", clock)
    _, key = services.api_token_create(user=alice, actor=alice, name="cost")
    assert token_get(key).status_code == 200  # the minute's row exists now
    session = Client()
    session.force_login(alice)
    with CaptureQueriesContext(connection) as by_session:
        assert session.get(API).status_code == 200
    with CaptureQueriesContext(connection) as by_token:
        assert token_get(key).status_code == 200
    token_queries = [q["sql"] for q in by_token.captured_queries]
    assert sum('"benchmark_apitoken"' in q and q.startswith("SELECT") for q in token_queries) == 1
    assert sum(q.startswith("UPDATE") for q in token_queries) == 1
    # The session costs its own row and the user's: no more than the token.
    assert len(by_token) <= len(by_session)
