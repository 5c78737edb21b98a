"""Issue 9, defect 9: production must not run on the public default SECRET_KEY, `check --deploy`
names the default key and DEBUG, and every page carries a strict Content-Security-Policy (no
inline scripts or styles anywhere in the templates, so none needs to be allowed)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
GOOD_KEY = "k" * 20 + "-production-secret-with-enough-variety-0123456789"
PRODUCTION = {"ALLOWED_HOSTS": "bench.example.org", "SECURE_SSL_REDIRECT": "true"}


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    dropped = {"DATABASE_URL", "DEBUG", "SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    clean = {k: v for k, v in os.environ.items() if k not in dropped}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=False,
    )


# --------------------------------------------------------------------------- SECRET_KEY


@pytest.mark.parametrize(
    "key",
    [
        None,  # unset: the built-in development key
        "dev-insecure-benchwright-key-change-me-in-production-0123456789",
        "short-but-not-empty-0123456789",  # fewer than 50 characters
        "a" * 60,  # long, but not random
    ],
)
def test_production_refuses_to_start_without_a_real_secret_key(key: str | None) -> None:
    env = {"DEBUG": "false", **PRODUCTION}
    if key is not None:
        env["SECRET_KEY"] = key
    out = _manage("check", **env)
    assert out.returncode != 0
    assert "ImproperlyConfigured" in out.stderr
    assert "SECRET_KEY" in out.stderr and "DEBUG" in out.stderr
    assert "50" in out.stderr  # says what a real key is


def test_a_key_beginning_with_a_dollar_sign_is_taken_as_written() -> None:
    """README's recipe (Django's get_random_secret_key) begins one key in 50 with "$", which
    django-environ took for the name of another variable: the app fell back to the development
    key and refused to start, blaming it (issue 22, item 14)."""
    key = "$" + GOOD_KEY
    probe = f"from django.conf import settings; print(settings.SECRET_KEY == {key!r})"
    out = _manage("shell", "-c", probe, DEBUG="false", SECRET_KEY=key, **PRODUCTION)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "True"


def test_check_deploy_names_the_default_key_and_debug() -> None:
    """The development set-up (bin/run) keeps DEBUG on and the built-in key; `check --deploy`
    must say both are not for production."""
    out = _manage("check", "--deploy")
    assert out.returncode != 0
    assert "benchwright.E001" in out.stderr and "SECRET_KEY" in out.stderr
    assert "security.W018" in out.stderr  # Django's own: DEBUG is on
    # A real key (with DEBUG still on) silences our check but not DEBUG's.
    out = _manage("check", "--deploy", SECRET_KEY=GOOD_KEY)
    assert "benchwright.E001" not in out.stderr
    assert "security.W018" in out.stderr


# --------------------------------------------------------------------------- CSP


def _policy(response: object) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]  # type: ignore[index]
    directives = {}
    for part in header.split(";"):
        name, *values = part.split()
        directives[name] = values
    return directives


@pytest.mark.django_db
def test_every_page_has_a_strict_content_security_policy(clients: dict[str, Client]) -> None:
    for client, url in [
        (Client(), "/accounts/login/"),
        (clients["admin"], "/"),
        (clients["admin"], "/api/docs/"),
        (clients["admin"], "/api/projects/"),
    ]:
        response = client.get(url)
        assert response.status_code == 200, url
        policy = _policy(response)
        assert policy["default-src"] == ["'self'"]
        assert policy["script-src"] == ["'self'"], url
        assert policy["style-src"] == ["'self'"], url
        assert "'unsafe-inline'" not in response["Content-Security-Policy"]
        assert "'unsafe-eval'" not in response["Content-Security-Policy"]
        assert policy["object-src"] == ["'none'"]
        assert policy["base-uri"] == ["'self'"]
        assert policy["frame-ancestors"] == ["'none'"]
        assert policy["form-action"] == ["'self'"]
        assert policy["img-src"] == ["'self'", "data:", "blob:"]


@pytest.mark.django_db
def test_htmx_injects_no_indicator_styles(clients: dict[str, Client]) -> None:
    """htmx would add a <style> element for its indicators, which the policy refuses; the
    page turns that off (before htmx loads) and app.css has the rules instead."""
    html = clients["admin"].get("/").content.decode()
    meta = html.index('<meta name="htmx-config"')
    assert '"includeIndicatorStyles": false' in html[meta : html.index(">", meta)]
    assert meta < html.index("htmx-2")
    css = (ROOT / "static" / "css" / "app.css").read_text()
    assert ".htmx-indicator" in css and ".htmx-request .htmx-indicator" in css


INLINE = [
    (re.compile(r"\sstyle\s*=", re.I), "a style attribute"),
    (re.compile(r"<style[\s>]", re.I), "a <style> block"),
    (re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I), "an inline <script>"),
    (re.compile(r"\son[a-z]+\s*=", re.I), "an inline event handler"),
    (re.compile(r"javascript:", re.I), "a javascript: URL"),
]


def test_templates_have_no_inline_styles_or_scripts() -> None:
    """What the policy would block, found before a browser does."""
    found = []
    for path in sorted((ROOT / "templates").rglob("*.html")):
        text = path.read_text()
        for pattern, what in INLINE:
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    assert found == []


@pytest.mark.django_db
def test_the_csrf_failure_page_is_the_projects_own() -> None:
    """Django's built-in CSRF failure page styles itself inline, which the policy blocks."""
    response = Client(enforce_csrf_checks=True).post(
        "/accounts/login/", {"username": "a", "password": "b"}
    )
    assert response.status_code == 403
    page = response.content.decode()
    assert "app.css" in page and "CSRF verification failed" in page
    assert "<style" not in page
