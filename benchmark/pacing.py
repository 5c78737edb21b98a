"""What every call to an outside HTTP endpoint passes, whoever makes it (the model client of
judges, drafting and evaluations, ``benchmark.llm.client``; the retrieval provider of
evaluations, ``benchmark.evaluation.mme_retrieval``). Pure Python: no Django.

- at most ``concurrency`` calls run at once per base URL, across threads of one process
  (``endpoint_limit``);
- one :class:`RateGate` per base URL, shared by every thread of the process, spaces requests to
  at most ``rpm`` a minute (when set) and, when the endpoint answers 429, holds every thread's
  next request until its Retry-After (or the backoff) has passed, not only the one that got it
  (``endpoint_gate``);
- transient failures (the caller says which, by raising :class:`Transient`) are retried with
  exponential backoff and jitter, or after the server's Retry-After, up to
  ``RetryPolicy.max_retries`` times (``call_with_retries``); then :class:`GaveUp`."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TypeVar

T = TypeVar("T")

# --------------------------------------------------------------------------- concurrency

_limits_lock = threading.Lock()
_limits: dict[str, tuple[int, threading.BoundedSemaphore]] = {}


def endpoint_limit(base_url: str, size: int) -> threading.BoundedSemaphore:
    """The semaphore that bounds concurrent calls to ``base_url`` in this process. A new size
    replaces the semaphore for later callers; calls already holding the old one finish on it."""
    key = base_url.rstrip("/")
    with _limits_lock:
        current = _limits.get(key)
        if current is None or current[0] != size:
            current = (size, threading.BoundedSemaphore(size))
            _limits[key] = current
        return current[1]


class RateGate:
    """What every thread of a process must pass before it sends a request to one endpoint.

    * ``rpm`` > 0 spaces requests at least 60 / rpm seconds apart (each passage reserves the
      next slot), so all threads together stay under the cap;
    * ``pause(seconds)`` (an endpoint's 429, with its Retry-After) holds every later passage
      until then; a pause that arrives while a thread waits makes it wait again.

    ``clock`` and ``sleep`` are injectable so tests need no wall clock."""

    def __init__(
        self,
        *,
        rpm: int = 0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.clock = clock
        self.sleep = sleep
        self._lock = threading.Lock()
        self._interval = 0.0
        self._next_slot = 0.0
        self._paused_until = 0.0
        self._pauses = 0
        self.rpm = rpm

    @property
    def rpm(self) -> int:
        return round(60.0 / self._interval) if self._interval else 0

    @rpm.setter
    def rpm(self, value: int) -> None:
        with self._lock:
            self._interval = 60.0 / value if value and value > 0 else 0.0

    @property
    def paused_until(self) -> float:
        with self._lock:
            return self._paused_until

    def pause(self, seconds: float) -> float:
        """Hold every request until ``seconds`` from now (a longer pause already set stays);
        returns that time on the gate's clock, for ``passage(waited_out=...)``."""
        with self._lock:
            until = self.clock() + max(0.0, seconds)
            if until > self._paused_until:
                self._paused_until = until
                self._pauses += 1
            return until

    def passage(self, *, waited_out: float = 0.0) -> float:
        """Wait until a request may go; returns the seconds waited. ``waited_out``: a pause
        (as returned by ``pause``) the caller has already slept through itself."""
        waited = 0.0
        while True:
            with self._lock:
                now = self.clock()
                paused = self._paused_until if self._paused_until > waited_out else 0.0
                start = max(now, paused, self._next_slot if self._interval else 0.0)
                if self._interval:
                    self._next_slot = start + self._interval
                pauses = self._pauses
            delay = start - now
            if delay <= 0:
                return waited
            self.sleep(delay)
            waited += delay
            with self._lock:
                if self._pauses == pauses:  # no new pause while asleep: the slot is ours
                    return waited


_gates_lock = threading.Lock()
_gates: dict[str, RateGate] = {}


def endpoint_gate(base_url: str, rpm: int = 0) -> RateGate:
    """The process's gate for ``base_url`` (one per endpoint, created on first use); ``rpm``
    replaces its cap, and a pause in force stays."""
    key = base_url.rstrip("/")
    with _gates_lock:
        gate = _gates.get(key)
        if gate is None:
            gate = _gates[key] = RateGate(rpm=rpm)
        elif gate.rpm != rpm:
            gate.rpm = rpm
        return gate


# --------------------------------------------------------------------------- retries


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header's seconds (a number, or an HTTP date from now); None without one
    or when it cannot be read."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a transient failure is retried."""

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 20.0

    def backoff(self, attempt: int, retry_after: float | None = None) -> float:
        """Exponential backoff with jitter after ``attempt`` failed, or the server's
        Retry-After when it gave one; never over ``backoff_max``."""
        delay = self.backoff_base * (2 ** (attempt - 1))
        delay = delay * (0.75 + random.random() / 2)  # noqa: S311 - jitter, not crypto
        if retry_after is not None:
            delay = retry_after
        return max(0.0, min(delay, self.backoff_max))


class Transient(Exception):  # noqa: N818 - it is what the caller says, not an error of its own
    """Raised by a call's ``send`` for a failure worth retrying: ``error`` is what the caller
    reports if the retries run out; ``rate_limited`` (a 429) pauses every thread's next
    request to the endpoint, for ``retry_after`` seconds (the server's) or the backoff."""

    def __init__(
        self,
        error: Exception,
        *,
        retry_after: float | None = None,
        rate_limited: bool = False,
        status: int | None = None,
    ) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after
        self.rate_limited = rate_limited
        self.status = status


class GaveUp(Exception):  # noqa: N818 - names what happened
    """The retries ran out: ``last`` is the last attempt's :class:`Transient`."""

    def __init__(self, last: Transient, attempts: int) -> None:
        super().__init__(
            f"{last.error} (gave up after {attempts} attempt{'s' if attempts > 1 else ''})"
        )
        self.last = last
        self.attempts = attempts


def call_with_retries(
    send: Callable[[int], T],
    *,
    base_url: str,
    concurrency: int,
    gate: RateGate,
    policy: RetryPolicy,
    sleep: Callable[[float], None] | None = None,
    before: Callable[[int], None] | None = None,
) -> T:
    """``send(attempt)`` (attempt 1, 2, ...) through the endpoint's gate and concurrency
    limit, until it returns. A :class:`Transient` it raises is retried after the backoff
    (``sleep``; default the gate's) up to ``policy.max_retries`` times, then :class:`GaveUp`;
    anything else it raises goes to the caller at once. ``before(attempt)`` is told of each
    attempt before it waits its turn (a progress line)."""
    wait = sleep if sleep is not None else gate.sleep
    waited_out = 0.0  # a pause this thread set and slept through itself
    attempt = 0
    while True:
        attempt += 1
        if before is not None:
            before(attempt)
        gate.passage(waited_out=waited_out)
        try:
            with endpoint_limit(base_url, concurrency):
                return send(attempt)
        except Transient as exc:
            failure = exc
        delay = policy.backoff(attempt, failure.retry_after)
        paused = gate.pause(delay) if failure.rate_limited else 0.0
        if attempt > policy.max_retries:
            raise GaveUp(failure, attempt) from failure.error
        wait(delay)
        waited_out = max(waited_out, paused)
