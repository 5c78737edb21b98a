"""With a Redis broker configured and CACHE_URL not set, every process shares one cache (the
broker's Redis, next database): what one web process cached, another reads. So the agreement
page's figures, computed by one worker, are shown by the others without computing them again.

Each process here is configured only as ``bin/serve`` would configure it (CELERY_BROKER_URL,
DATABASE_URL); the cache's Redis database is emptied before and after each test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.db import connection

from benchmark.cache_settings import cache_url_resolve
from tests.factories import (
    ItemFactory,
    JudgmentFactory,
    JudgmentTaskFactory,
    MembershipFactory,
    UserFactory,
)
from tests.integration.conftest import _db_url, _redis_up, _require, redis_turn

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
#: The broker the processes are told about; their cache is the next database (13).
BROKER = os.environ.get("BENCHWRIGHT_TEST_CACHE_BROKER", "redis://127.0.0.1:6379/12")


@pytest.fixture
def shared_cache() -> Iterator[str]:
    """The derived cache's Redis database, emptied before and after the test; its URL."""
    if not _redis_up():
        _require("Redis is not answering on 127.0.0.1:6379")
    import redis

    url, _ = cache_url_resolve(cache_url="", broker_url=BROKER)
    assert urlsplit(url).path != urlsplit(BROKER).path  # never the broker's own database
    with redis_turn("the shared cache test"):
        client = redis.Redis.from_url(url)
        client.flushdb()
        try:
            yield url
        finally:
            client.flushdb()
            client.close()


def _process(code: str, *, database_url: str = "") -> Any:
    """Runs ``code`` (after Django is set up) in a new process configured with the broker only,
    as each web process is; returns the JSON it prints last."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"CACHE_URL", "CELERY_BROKER_URL", "DATABASE_URL"}
        and not k.startswith("BENCHWRIGHT_MODEL_")
    }
    env.update({"DJANGO_SETTINGS_MODULE": "benchmark.settings", "CELERY_BROKER_URL": BROKER})
    if database_url:
        env["DATABASE_URL"] = database_url
    done = subprocess.run(
        [sys.executable, "-c", "import django\ndjango.setup()\n" + code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_what_one_process_caches_another_reads(shared_cache: str) -> None:
    key = f"bw-test-{uuid.uuid4().hex}"
    written = _process(
        "import json\nfrom django.conf import settings\nfrom django.core.cache import cache\n"
        f"cache.set({key!r}, {{'figure': 0.75}}, 60)\n"
        "print(json.dumps(settings.CACHES['default']['BACKEND']))"
    )
    assert written == "django.core.cache.backends.redis.RedisCache"
    read = _process(
        f"import json\nfrom django.core.cache import cache\nprint(json.dumps(cache.get({key!r})))"
    )
    assert read == {"figure": 0.75}


FIGURES = """
import json
from unittest import mock
from django.contrib.auth import get_user_model
from annotation.judgment_tasks.models import JudgmentTask
from review.agreement import selectors, services

def refuse(**kwargs):
    raise AssertionError("computed again: the figures were not in the shared cache")

task = JudgmentTask.objects.get(pk={task})
user = get_user_model().objects.get(pk={user})
with mock.patch.object(services, "agreement_compute", {compute}):
    figures = selectors.agreement_figures(user=user, task=task)
print(json.dumps({{"at": figures.computed_at.isoformat(), "n": figures.n_counted,
                  "stale": figures.stale, "report": figures.report}}))
"""


@pytest.mark.django_db(transaction=True)
def test_two_web_processes_share_the_agreement_figures(shared_cache: str) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the processes share the test database only on PostgreSQL")
    task = JudgmentTaskFactory(overlap=2)
    reviewer = UserFactory()
    MembershipFactory(project=task.project, user=reviewer, role="reviewer")
    raters = [UserFactory(), UserFactory()]
    for n in range(4):
        item = ItemFactory(project=task.project)
        for i, rater in enumerate(raters):
            JudgmentFactory(task=task, item=item, user=rater, value=int(n % 2 == 0 or i == 0))

    first = _process(
        FIGURES.format(task=task.pk, user=reviewer.pk, compute="services.agreement_compute"),
        database_url=_db_url(),
    )
    assert first["n"] == 8 and first["report"]["pairs"]
    # Another process (another gunicorn worker) shows the same figures without computing.
    second = _process(
        FIGURES.format(task=task.pk, user=reviewer.pk, compute="refuse"),
        database_url=_db_url(),
    )
    assert second == first
