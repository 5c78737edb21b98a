"""tests/e2e/sqlite_locks.py: a thread's statement waits out another connection's table lock
on SQLite's shared-cache test database instead of failing at once."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import OperationalError, connection, transaction

from tests.e2e.sqlite_locks import retry_while_locked

pytestmark = pytest.mark.django_db(transaction=True)


def _count_in_a_thread(wrapped: bool) -> dict[str, Any]:
    """Count the users from a second connection while this one holds a write lock on them."""
    seen: dict[str, Any] = {}
    user = get_user_model()

    def read() -> None:
        try:
            if wrapped:
                with retry_while_locked():
                    seen["count"] = user.objects.count()
            else:
                seen["count"] = user.objects.count()
        except OperationalError as error:
            seen["error"] = str(error)
        finally:
            connection.close()

    with transaction.atomic():
        user.objects.create(username="holds-the-lock")
        reader = threading.Thread(target=read)
        reader.start()
        time.sleep(0.3)  # the reader meets the lock while this transaction is open
    reader.join(timeout=20)
    return seen


def test_without_the_wrapper_a_reader_fails_at_once_with_table_locked() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's shared cache only")
    seen = _count_in_a_thread(wrapped=False)
    assert "locked" in seen.get("error", ""), seen


def test_with_the_wrapper_the_reader_waits_and_sees_the_committed_row() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's shared cache only")
    seen = _count_in_a_thread(wrapped=True)
    assert seen == {"count": 1}


def test_other_databases_are_left_alone() -> None:
    wrappers = list(connection.execute_wrappers)
    with retry_while_locked():
        inside = list(connection.execute_wrappers)
    assert connection.execute_wrappers == wrappers
    assert len(inside) == len(wrappers) + (connection.vendor == "sqlite")
