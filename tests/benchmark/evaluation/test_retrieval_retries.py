"""The HTTP retrieval provider passes the model client's machinery (``benchmark.pacing``):
transient failures (5xx, 429, an unreachable provider) are retried with growing backoff, a
429's Retry-After is waited out and holds every caller of the provider, a 4xx is the tool's
answer at once, and its requests per minute are capped. Against the recorded retrieval
server; every wait goes through a fake clock (call counts and order, no wall clock)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from benchmark.evaluation.mme_retrieval import HttpRetrievalProvider, RetrievalError
from benchmark.pacing import RateGate
from tests.retrieval_server import RecordedWeb

QUERY = "first edition"
RESULTS = [{"title": "First edition", "link": "https://example.org/1", "snippet": "1859"}]


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def clock(self) -> float:
        with self._lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(round(seconds, 3))
            self.now += seconds


@pytest.fixture
def web() -> Iterator[RecordedWeb]:
    server = RecordedWeb(searches={QUERY: RESULTS}).start()
    yield server
    server.stop()


@pytest.fixture
def t() -> FakeTime:
    return FakeTime()


def provider(web: RecordedWeb, t: FakeTime, **kwargs: Any) -> HttpRetrievalProvider:
    kwargs.setdefault("gate", RateGate(clock=t.clock, sleep=t.sleep))
    return HttpRetrievalProvider(web.base_url, timeout=5, sleep=t.sleep, **kwargs)


def test_server_errors_are_retried_with_growing_backoff_then_answered(
    web: RecordedWeb, t: FakeTime
) -> None:
    web.failures.extend([503, 502])
    found = provider(web, t, backoff_base=1.0).call("google_search", {"query": QUERY})
    assert not found.error and "First edition" in found.output["context"]
    assert [r.tool for r in web.requests] == ["google_search"] * 3
    assert len(t.sleeps) == 2 and t.sleeps[1] > t.sleeps[0] > 0


def test_a_429_with_retry_after_is_waited_out_before_the_next_attempt(
    web: RecordedWeb, t: FakeTime
) -> None:
    web.failures.append((429, {"Retry-After": "7"}))
    found = provider(web, t).call("google_search", {"query": QUERY})
    assert not found.error
    assert t.sleeps == [7.0]  # the server's Retry-After, not the backoff
    assert len(web.requests) == 2


def test_a_429_holds_every_caller_of_the_provider_until_its_retry_after(
    web: RecordedWeb, t: FakeTime
) -> None:
    gate = RateGate(clock=t.clock, sleep=t.sleep)
    web.failures.append((429, {"Retry-After": "15"}))
    with pytest.raises(RetrievalError, match=r"answered 429.*gave up after 1 attempt\)$"):
        provider(web, t, gate=gate, max_retries=0).call("google_search", {"query": "first"})
    assert t.sleeps == []  # no retry left for that call, but the provider stays paused
    other = provider(web, t, gate=gate).call("google_search", {"query": QUERY})
    assert not other.error
    assert t.sleeps == [15.0]  # the other caller waited it out before sending
    assert [r.arguments["query"] for r in web.requests] == ["first", QUERY]


def test_the_retries_run_out_naming_the_attempts(web: RecordedWeb, t: FakeTime) -> None:
    web.failures.extend([500] * 5)
    with pytest.raises(RetrievalError, match="answered 500.*gave up after 3 attempts"):
        provider(web, t, max_retries=2).call("google_search", {"query": QUERY})
    assert len(web.requests) == 3 and len(t.sleeps) == 2
    assert web.failures == [500, 500]  # nothing sent after giving up


def test_an_unreachable_provider_is_retried_then_reported(t: FakeTime) -> None:
    closed = HttpRetrievalProvider(
        "http://127.0.0.1:9", timeout=2, max_retries=1, sleep=t.sleep,
        gate=RateGate(clock=t.clock, sleep=t.sleep),
    )  # fmt: skip
    with pytest.raises(RetrievalError, match="cannot be reached.*gave up after 2 attempts"):
        closed.call("google_search", {"query": QUERY})
    assert len(t.sleeps) == 1


def test_a_client_error_is_the_tools_answer_at_once(web: RecordedWeb, t: FakeTime) -> None:
    missing = provider(web, t).call("google_search", {"query": "nothing"})
    assert "answered 404" in missing.error
    assert len(web.requests) == 1 and t.sleeps == []


def test_requests_per_minute_space_the_providers_requests(web: RecordedWeb, t: FakeTime) -> None:
    gate = RateGate(rpm=120, clock=t.clock, sleep=t.sleep)
    api = provider(web, t, gate=gate)
    for _ in range(3):
        assert not api.call("google_search", {"query": QUERY}).error
    assert t.sleeps == [0.5, 0.5]
    assert len(web.requests) == 3


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="concurrency at least 1"):
        HttpRetrievalProvider("http://127.0.0.1:9", concurrency=0)
    with pytest.raises(ValueError, match="max_retries and rpm must be 0 or more"):
        HttpRetrievalProvider("http://127.0.0.1:9", rpm=-1)
