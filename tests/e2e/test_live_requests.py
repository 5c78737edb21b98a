"""The browser tests' end waits for the live server's requests in flight and lets no new one
touch the database (tests/e2e/conftest.py ``LiveRequests``). Without it, a request the judge
page sent as its last item was shown (the queue's top-up) or as it closed (giving its held
items back) could still be in a transaction when pytest-django empties the database, and
PostgreSQL ends one of them as a deadlock: the CI run of stop 34 errored that way in
test_next_ahead_browser.py."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request

import pytest

from tests.e2e.conftest import LiveRequests


def quiet_in_thread(requests: LiveRequests, wait: float = 30.0) -> tuple[threading.Thread, list]:
    raised: list[BaseException] = []

    def run() -> None:
        try:
            requests.quiet(wait)
        except BaseException as error:  # noqa: BLE001 - handed to the test
            raised.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, raised


def test_quiet_returns_only_once_the_requests_in_flight_are_answered() -> None:
    requests = LiveRequests()
    assert requests.enter() and requests.enter()
    thread, raised = quiet_in_thread(requests)
    requests.leave()
    thread.join(0.3)
    assert thread.is_alive(), "quiet() returned with a request still in flight"
    requests.leave()
    thread.join(10)
    assert not thread.is_alive() and raised == []
    assert requests.in_flight == 0


def test_once_quiet_new_requests_are_refused_until_the_next_test_opens() -> None:
    requests = LiveRequests()
    requests.quiet()
    assert requests.enter() is False
    assert requests.in_flight == 0 and requests.refused == 1
    requests.open()
    assert requests.enter() is True


def test_a_request_that_never_ends_is_named_not_waited_for_forever() -> None:
    requests = LiveRequests()
    requests.enter()
    thread, raised = quiet_in_thread(requests, wait=0.05)
    thread.join(10)
    assert len(raised) == 1 and isinstance(raised[0], RuntimeError)
    assert "1 live-server request(s) still running" in str(raised[0])


@pytest.mark.django_db(transaction=True)
def test_the_live_server_refuses_requests_once_quiet(live_server, live_requests) -> None:  # type: ignore[no-untyped-def]
    url = live_server.url + "/accounts/login/"
    with urllib.request.urlopen(url, timeout=30) as answer:
        assert answer.status == 200
    live_requests.quiet()
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url, timeout=30)
    assert refused.value.code == 503
    assert live_requests.refused >= 1
    live_requests.open()
    with urllib.request.urlopen(url, timeout=30) as answer:
        assert answer.status == 200
