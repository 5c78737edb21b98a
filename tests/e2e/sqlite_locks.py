"""Worker threads beside the live server on SQLite's in-memory test database.

pytest-django's in-memory SQLite database is one shared cache: the live server's thread uses
the test's own connection, and a thread that stands in for a Celery worker opens a second one.
In a shared cache, SQLite answers a statement that meets another connection's table lock at
once with "database table is locked" (SQLITE_LOCKED; the busy timeout does not apply), where a
real deployment (a file database, or PostgreSQL) waits. On a loaded machine the worker's
progress write and the page's poll of the same row then meet often enough to fail a test.

``retry_while_locked()`` puts the waiting back, for the connection of the thread that enters
it: a statement refused for a table lock is tried again for up to ``WAIT`` seconds, then the
error is raised as it was. A statement refused with SQLITE_LOCKED had no effect, so trying it
again is safe. Other databases are left alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import OperationalError, connection

WAIT = 15.0
PAUSE = 0.005


def _retry(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
    deadline = time.monotonic() + WAIT
    while True:
        try:
            return execute(sql, params, many, context)
        except OperationalError as error:
            if "is locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(PAUSE)


@contextmanager
def retry_while_locked() -> Iterator[None]:
    """Statements on this thread's connection wait out SQLite's shared-cache table locks."""
    if connection.vendor != "sqlite":
        yield
        return
    with connection.execute_wrapper(_retry):
        yield
