"""What keeps an evaluation near its floor (tests/perf/bench_evaluate.py measures it): the
runner's queries do not grow with the items (records loaded a batch at a time, finished items
stored together), every item's model calls share one kept connection pool, and the scripted
model server answers concurrent requests concurrently after its delay."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmark.llm.cache import MemoryCache
from benchmark.llm.client import ChatClient, ModelConfig
from benchmark.models import ItemStatus, Project
from review.evaluation import services
from review.evaluation.models import EvaluationCall, EvaluationResult
from tests.factories import ItemFactory
from tests.llm_server import MODEL, FakeModelServer

pytestmark = pytest.mark.django_db

#: The queries of a run's whole job (claim, runner, one batch of items and records, one store
#: of results and calls, progress, summary, finish; for a run never judged, one look for
#: judges to follow), the same for 3 items as for 30.
RUN_QUERIES = 30


def _items(project: Project, start: int, count: int) -> None:
    for n in range(start, start + count):
        word = ("apple", "pear", "kiwi")[n % 3]
        ItemFactory(
            project=project,
            external_id=f"{word}-{n}",
            query=word,
            position=n,
            status=ItemStatus.VERIFIED,
            raw=json.dumps({"id": f"{word}-{n}", "query": word, "answer": "a fruit"}),
        )


def _queries_of_a_run(project: Project) -> tuple[int, int]:
    run, jobs = services.evaluation_run_create(project=project, user=None, workers=4)
    with CaptureQueriesContext(connection) as captured:
        services.evaluation_run_execute(run=run, jobs=jobs)
    assert EvaluationResult.objects.filter(run=run, status="ok").count() == run.item_count
    return len(captured.captured_queries), run.item_count


def test_a_runs_queries_do_not_grow_with_its_items(eval_project: Project, monkeypatch: Any) -> None:
    # Stores by count only (not every half second), so the count does not depend on speed.
    monkeypatch.setattr(services, "PROGRESS_SECONDS", 3600.0)
    few, n_few = _queries_of_a_run(eval_project)
    _items(eval_project, 100, 27)
    many, n_many = _queries_of_a_run(eval_project)
    assert (n_few, n_many) == (3, 30)
    # 27 more items (54 more model calls stored, 27 more results, 27 tool records) cost
    # a handful of queries, not a few per item.
    assert many - few <= 4, (few, many)
    assert EvaluationCall.objects.filter(project=eval_project).count() == 2 * 30


def test_finished_items_are_stored_in_batches_of_store_items(
    eval_project: Project, monkeypatch: Any
) -> None:
    monkeypatch.setattr(services, "PROGRESS_SECONDS", 3600.0)
    monkeypatch.setattr(services, "STORE_ITEMS", 4)
    _items(eval_project, 100, 9)
    run, jobs = services.evaluation_run_create(project=eval_project, user=None, workers=2)
    with CaptureQueriesContext(connection) as captured:
        services.evaluation_run_execute(run=run, jobs=jobs)
    inserts = [
        q["sql"]
        for q in captured.captured_queries
        if q["sql"].startswith('INSERT INTO "review_evaluationresult"')
    ]
    # 12 items, stored 4 at a time: three inserts of results.
    assert len(inserts) == 3
    assert run.results.count() == 12


def test_every_items_calls_share_one_kept_connection_pool() -> None:
    owner = ChatClient(ModelConfig(base_url="http://127.0.0.1:9/v1", model="m"), mode="off")
    first = owner.sharing(cache=MemoryCache(), mode="use")
    second = owner.sharing(cache=MemoryCache(), mode="replay")
    assert (first.mode, second.mode) == ("use", "replay")
    assert first.cache is not second.cache
    assert first._kept_sdk() is None  # the owner keeps no pool: each call opens its own
    owner.keep_open()
    sdk = first._kept_sdk()
    assert sdk is not None and second._kept_sdk() is sdk
    owner.close()
    assert first._kept_sdk() is None


def test_the_scripted_server_answers_concurrent_requests_after_its_delay_concurrently() -> None:
    server = FakeModelServer(delay=0.05, keep_alive=True, keep_requests=False).start()
    try:
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        answers: list[str] = []

        def ask() -> None:
            request = urllib.request.Request(
                f"{server.url}/chat/completions",
                data=body.encode(),
                headers={"content-type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                answers.append(json.load(response)["choices"][0]["message"]["content"])

        server.hold()
        threads = [threading.Thread(target=ask) for _ in range(6)]
        for thread in threads:
            thread.start()
        # All six are in the server at once (none answered before the others arrived) ...
        assert server.wait_for_arrivals(6)
        assert server.max_in_flight == 6
        server.release()
        for thread in threads:
            thread.join()
        # ... and each is answered after its delay.
        assert answers == [server.answer] * 6
        assert server.count == 6 and server.requests == []  # counted, bodies not kept
    finally:
        server.stop()


def test_an_endpoint_given_for_the_run_takes_as_many_calls_at_once_as_workers(
    project: Project, protocol: Any, eval_server: FakeModelServer
) -> None:
    """The project has no model of its own: the endpoint given has no configured limit, so
    six workers have six calls in flight (the client's default limit is four)."""
    _items(project, 0, 12)
    eval_server.hold()

    def release_when_six_arrive() -> None:
        eval_server.wait_for_arrivals(6, timeout=10)
        eval_server.release()

    helper = threading.Thread(target=release_when_six_arrive)
    helper.start()
    run, jobs = services.evaluation_run_create(
        project=project, user=None, base_url=eval_server.url, model=MODEL, workers=6
    )
    services.evaluation_run_execute(run=run, jobs=jobs)
    helper.join()
    assert run.results.filter(status="ok").count() == 12
    assert eval_server.max_in_flight == 6


def test_a_runs_workers_are_its_calls_at_once_and_a_spare_thread_prepares_the_next_item(
    project: Project, protocol: Any, eval_server: FakeModelServer, monkeypatch: Any
) -> None:
    """Two workers: never more than two model calls out, while a third item is read,
    prepared and scored meanwhile (the worker's slot does not wait for that work)."""
    _items(project, 0, 9)
    busy, peak, lock = [0], [0], threading.Lock()
    evaluate = services._evaluate

    def counted(**kwargs: Any) -> Any:
        with lock:
            busy[0] += 1
            peak[0] = max(peak[0], busy[0])
        try:
            return evaluate(**kwargs)
        finally:
            with lock:
                busy[0] -= 1

    monkeypatch.setattr(services, "_evaluate", counted)
    eval_server.hold()

    def release_when_two_arrive() -> None:
        eval_server.wait_for_arrivals(2, timeout=10)
        # Both slots are taken: the spare thread's item is in the runner too, waiting.
        deadline = time.monotonic() + 10
        while peak[0] < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        eval_server.release()

    helper = threading.Thread(target=release_when_two_arrive)
    helper.start()
    run, jobs = services.evaluation_run_create(
        project=project, user=None, base_url=eval_server.url, model=MODEL, workers=2
    )
    services.evaluation_run_execute(run=run, jobs=jobs)
    helper.join()
    assert run.results.filter(status="ok").count() == 9
    assert eval_server.max_in_flight == 2
    assert peak[0] == 3


def test_a_runners_queries_are_a_fixed_few_per_batch_not_per_item(
    eval_project: Project, monkeypatch: Any, django_assert_num_queries: Any
) -> None:
    """The runner's queries for 3 items and for 30 (one batch of records, one store):
    pinned, so a query per item cannot creep back in."""
    monkeypatch.setattr(services, "PROGRESS_SECONDS", 3600.0)
    run, jobs = services.evaluation_run_create(project=eval_project, user=None, workers=4)
    with django_assert_num_queries(RUN_QUERIES):
        services.evaluation_run_execute(run=run, jobs=jobs)
    _items(eval_project, 100, 27)
    run, jobs = services.evaluation_run_create(project=eval_project, user=None, workers=4)
    with django_assert_num_queries(RUN_QUERIES):
        services.evaluation_run_execute(run=run, jobs=jobs)
    assert run.results.filter(status="ok").count() == 30


def test_stored_calls_and_results_are_inserted_as_values_and_read_back_exactly(
    eval_project: Project,
) -> None:
    """On PostgreSQL, Django inserts many rows at once through UNNEST arrays, whose text form
    escapes every double quote of a JSON text again in Python (seconds of CPU for an
    Agentic-MME run's calls): the rows carrying JSON texts are inserted with VALUES, on
    SQLite and PostgreSQL alike, and read back as they were written."""
    run, jobs = services.evaluation_run_create(project=eval_project, user=None, workers=4)
    with CaptureQueriesContext(connection) as captured:
        services.evaluation_run_execute(run=run, jobs=jobs)
    inserts = [
        q["sql"]
        for q in captured.captured_queries
        if q["sql"].startswith("INSERT")
        and any(t in q["sql"] for t in ("evaluationcall", "evaluationresult"))
    ]
    assert len(inserts) >= 2 and not [sql for sql in inserts if "UNNEST" in sql]
    calls = list(EvaluationCall.objects.filter(run=run))
    assert len(calls) == 2 * run.item_count >= 2
    for call in calls:
        assert isinstance(call.messages, list) and call.messages[0]["role"] == "user"
        assert '"' in json.dumps(call.messages)  # texts full of quotes, kept as written
    assert EvaluationResult.objects.filter(run=run, status="ok").count() == run.item_count
