"""The same item's result stored twice: what happens when a chunk runs twice at once (a worker
the sweep took for lost was still alive, and another worker took its chunk again). A finished
result is kept over an error, the last finished one wins, and on PostgreSQL two stores at the
same moment wait for each other instead of one failing on the unique (run, item) constraint
(which failed the whole flush: the chunk's other items, their model calls and tool records
were not stored)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection, connections, transaction

from benchmark.evaluation.base import Outcome, Status
from benchmark.models import Item, Project
from review.evaluation import services
from review.evaluation.models import EvaluationResult, EvaluationRun

WAIT = 20.0  # seconds a thread may take before the test gives up on it (never reached)


def _ok(item: str, output: str) -> Outcome:
    return Outcome(item=item, status=Status.OK, output=output, scores={"correct": 1.0})


def _error(item: str) -> Outcome:
    return Outcome(item=item, status=Status.ERROR, error="the model server failed")


def _store(run: EvaluationRun, item: Item, outcome: Outcome) -> None:
    services.results_store(run=run, results=[(item.pk, outcome, 5, {})])


def _result(run: EvaluationRun, item: Item) -> EvaluationResult:
    return EvaluationResult.objects.get(run=run, item=item)


@pytest.mark.django_db
def test_a_finished_result_is_not_replaced_by_an_error(
    eval_project: Project, eval_server: Any
) -> None:
    run, _ = services.evaluation_run_create(project=eval_project, user=None)
    apple = Item.objects.get(project=eval_project, external_id="apple")
    pear = Item.objects.get(project=eval_project, external_id="pear")
    _store(run, apple, _ok("apple", "a fruit"))
    first = _result(run, apple)
    # The other worker's copy of the chunk: apple failed there, pear finished.
    services.results_store(
        run=run,
        results=[(apple.pk, _error("apple"), 9, {}), (pear.pk, _ok("pear", "unknown"), 9, {})],
    )
    kept = _result(run, apple)
    assert (kept.pk, kept.status, kept.output, kept.latency_ms) == (first.pk, "ok", "a fruit", 5)
    assert _result(run, pear).status == Status.OK
    # An error is replaced by a finished result, and a finished one by a newer one.
    _store(run, pear, _error("pear"))
    assert _result(run, pear).status == Status.OK
    kiwi = Item.objects.get(project=eval_project, external_id="kiwi")
    _store(run, kiwi, _error("kiwi"))
    _store(run, kiwi, _ok("kiwi", "a bird"))
    _store(run, apple, _ok("apple", "an apple"))
    assert (_result(run, kiwi).status, _result(run, apple).output) == ("ok", "an apple")
    assert EvaluationResult.objects.filter(run=run).count() == 3


def _waiting_for_a_lock(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return bool(row) and row[0] == "Lock"


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="concurrent writers: PostgreSQL")
def test_two_stores_of_one_item_at_once_wait_for_each_other(
    eval_project: Project, eval_server: Any
) -> None:
    run, _ = services.evaluation_run_create(project=eval_project, user=None)
    apple = Item.objects.get(project=eval_project, external_id="apple")
    pear = Item.objects.get(project=eval_project, external_id="pear")
    stored = threading.Event()
    release = threading.Event()
    errors: list[BaseException] = []
    pids: list[int] = []

    def first() -> None:  # stores apple, holds its transaction open until released
        try:
            with transaction.atomic():
                _store(run, apple, _ok("apple", "first"))
                stored.set()
                release.wait(WAIT)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            stored.set()
            connections.close_all()

    def second() -> None:  # the other worker's copy: apple and pear
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                pids.append(cursor.fetchone()[0])
            services.results_store(
                run=run,
                results=[
                    (apple.pk, _ok("apple", "second"), 7, {}),
                    (pear.pk, _ok("pear", "second"), 7, {}),
                ],
            )
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connections.close_all()

    one = threading.Thread(target=first, daemon=True)
    one.start()
    assert stored.wait(WAIT)
    two = threading.Thread(target=second, daemon=True)
    two.start()
    # The second store waits on the first's uncommitted apple (polled, not slept on).
    for _ in range(2000):
        if pids and _waiting_for_a_lock(pids[0]):
            break
        two.join(0.01)
    else:
        pytest.fail("the second store never waited for the first")
    release.set()
    one.join(WAIT)
    two.join(WAIT)
    assert not one.is_alive() and not two.is_alive()
    assert errors == []
    results = {r.item_id: (r.status, r.output) for r in EvaluationResult.objects.filter(run=run)}
    assert results == {apple.pk: ("ok", "second"), pear.pk: ("ok", "second")}
