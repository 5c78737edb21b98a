"""Which cache the processes use: CACHE_URL when set; else, with a Redis broker, that Redis
server's next database (shared by every web process, so the agreement page's figures are
computed once, not once per worker); else each process's own memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark.cache_settings import cache_describe, cache_url_resolve

ROOT = Path(__file__).resolve().parents[2]


def _caches(**env: str) -> tuple[dict[str, object], str]:
    """(CACHES["default"], CACHE_SOURCE) as a fresh process configured with ``env`` (and
    neither CACHE_URL nor CELERY_BROKER_URL from this one) sees them."""
    code = (
        "import django, json; django.setup(); from django.conf import settings as s;"
        "print(json.dumps([s.CACHES['default'], s.CACHE_SOURCE]))"
    )
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"CACHE_URL", "CELERY_BROKER_URL", "DATABASE_URL"}
    }
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "benchmark.settings", **env},
        capture_output=True,
        text=True,
        check=True,
    )
    config, source = json.loads(out.stdout)
    return config, source


def test_a_redis_broker_gives_a_shared_redis_cache_on_its_next_database() -> None:
    config, source = _caches(CELERY_BROKER_URL="redis://127.0.0.1:6379/0")
    assert config["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert config["LOCATION"] == "redis://127.0.0.1:6379/1"
    assert source == "CELERY_BROKER_URL"


def test_nothing_configured_keeps_each_process_s_own_memory() -> None:
    config, source = _caches()
    assert config["BACKEND"] == "django.core.cache.backends.locmem.LocMemCache"
    assert source == "default"


@pytest.mark.parametrize(
    ("cache_url", "backend", "location"),
    [
        ("redis://cache.internal:6379/5", "django.core.cache.backends.redis.RedisCache",
         "redis://cache.internal:6379/5"),
        ("locmemcache://", "django.core.cache.backends.locmem.LocMemCache", ""),
    ],
)  # fmt: skip
def test_an_explicit_cache_url_wins_over_the_broker(
    cache_url: str, backend: str, location: str
) -> None:
    config, source = _caches(CELERY_BROKER_URL="redis://127.0.0.1:6379/0", CACHE_URL=cache_url)
    assert (config["BACKEND"], config["LOCATION"], source) == (backend, location, "CACHE_URL")


@pytest.mark.parametrize(
    ("broker", "cache"),
    [
        ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379/1"),  # no number: database 0
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/1"),
        ("redis://:pw@redis.internal:6380/3", "redis://:pw@redis.internal:6380/4"),
        ("redis://127.0.0.1:6379/15", "redis://127.0.0.1:6379/14"),  # the last one: before
        ("rediss://u:p@h:6380/2?ssl_cert_reqs=required", "rediss://u:p@h:6380/3?ssl_cert_reqs=required"),
    ],
)  # fmt: skip
def test_the_cache_database_follows_the_broker_s(broker: str, cache: str) -> None:
    assert cache_url_resolve(cache_url="", broker_url=broker) == (cache, "CELERY_BROKER_URL")


@pytest.mark.parametrize(
    "broker", ["", "memory://", "amqp://guest@127.0.0.1//", "redis://127.0.0.1:6379/queue"]
)
def test_a_broker_that_is_not_a_plain_redis_database_leaves_the_memory_cache(broker: str) -> None:
    assert cache_url_resolve(cache_url="", broker_url=broker) == ("locmemcache://", "default")


def test_the_description_never_shows_a_password() -> None:
    line = cache_describe(
        config={
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://user:hunter2@10.0.0.5:6379/1",
        },
        source="CACHE_URL",
    )
    assert (
        line
        == "Redis at redis://10.0.0.5:6379, database 1 (from CACHE_URL), shared by every web process"
    )
    assert "hunter2" not in line
