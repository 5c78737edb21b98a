"""The simulated people of tests/perf/load.py (a locustfile; load.py runs it as
``locust -f tests/perf/load_users.py --headless``). Not imported by anything else: importing
locust monkey-patches the standard library with gevent.

The server runs with DEBUG off, so its session and CSRF cookies are Secure and a plain-HTTP
client would not send them back: each user keeps them itself, from the Set-Cookie headers, and
sends them in a Cookie header.

Read from the environment (set by load.py): LOAD_TASK, LOAD_PROJECT, LOAD_ITEMS (first,last
item id), LOAD_ANNOTATORS / LOAD_REVIEWERS (comma-separated user names), LOAD_PASSWORD,
LOAD_THINK ("low,high" seconds reading an item), LOAD_OUT (the JSON file written at the end).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import time
from collections import Counter
from typing import Any

import gevent
from locust import HttpUser, between, events, task
from locust.exception import StopUser

TASK = int(os.environ.get("LOAD_TASK", "0"))
PROJECT = int(os.environ.get("LOAD_PROJECT", "0"))
FIRST_ITEM, LAST_ITEM = (int(x) for x in os.environ.get("LOAD_ITEMS", "0,0").split(","))
PASSWORD = os.environ.get("LOAD_PASSWORD", "")
THINK = tuple(float(x) for x in os.environ.get("LOAD_THINK", "1,3").split(","))
ANNOTATORS = itertools.cycle([n for n in os.environ.get("LOAD_ANNOTATORS", "").split(",") if n])
REVIEWERS = itertools.cycle([n for n in os.environ.get("LOAD_REVIEWERS", "").split(",") if n])
JUDGE_PATH = re.compile(rf"/judgment-tasks/{TASK}/items/(\d+)/$")
VALUES = ['"keep"'] * 6 + ['"remove_ambiguous"', '"remove_not_grounded"', '"remove_not_visual"']

#: What the run saw, written to LOAD_OUT when locust quits: per endpoint, [start (s since
#: the first request), response time (ms)] of each request that succeeded.
times: dict[str, list[tuple[float, float]]] = {}
errors: Counter[str] = Counter()
accepted: list[tuple[str, int]] = []
login_busy = [0]
logged_in: list[float] = []  # when each login succeeded (s since the first request)
queue_empty = [0]
started = [0.0, 0.0]


@events.request.add_listener
def _record(
    request_type: str,
    name: str,
    response_time: float,
    response_length: int,
    exception: BaseException | None = None,
    **kwargs: Any,
) -> None:
    now = time.time()
    if not started[0]:
        started[0] = now - response_time / 1000
    started[1] = now
    if exception is not None:
        errors[f"{name}: {str(exception)[:120]}"] += 1
    else:
        at = now - response_time / 1000 - started[0]
        times.setdefault(name, []).append((round(at, 3), response_time))


@events.quitting.add_listener
def _write(environment: Any, **kwargs: Any) -> None:
    out = os.environ.get("LOAD_OUT")
    if not out:
        return
    with open(out, "w") as fh:
        json.dump(
            {
                "times": times,
                "errors": dict(errors),
                "accepted": accepted,
                "login_503": login_busy[0],
                "logged_in": logged_in,
                "queue_empty": queue_empty[0],
                "seconds": max(0.0, started[1] - started[0]),
                "started": started[0],  # seconds since the epoch (load.py lines its CPU up)
            },
            fh,
        )


class Person(HttpUser):
    abstract = True
    username = ""

    def on_start(self) -> None:
        self.cookies: dict[str, str] = {}
        # One connection per request: gunicorn closes an idle kept-alive connection after 2 s,
        # about when a person submits, and a request sent on it just then is reset (a browser
        # retries it; requests does not).
        self.client.headers["Connection"] = "close"
        self.login()

    # --- cookies by hand (they are Secure; this is plain HTTP on one machine) -------------
    def _keep_cookies(self, response: Any) -> None:
        for name, value in response.cookies.items():
            self.cookies[name] = value
        self.client.cookies.clear()
        self.client.headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())

    def get(self, path: str, name: str) -> Any:
        with self.client.get(path, name=name, catch_response=True, allow_redirects=False) as r:
            self._keep_cookies(r)
            if r.status_code != 200:
                r.failure(f"HTTP {r.status_code} {r.error or ''}")
            return r

    def post(self, path: str, data: dict[str, str], name: str) -> Any:
        headers = {"X-CSRFToken": self.cookies.get("csrftoken", "")}
        return self.client.post(
            path,
            data=data,
            name=name,
            headers=headers,
            catch_response=True,
            allow_redirects=False,
        )

    def login(self) -> None:
        """The login page, then the password; a 503 (too many password checks at once in
        that process) is retried after its Retry-After, and counted apart from errors."""
        self.get("/accounts/login/", "login page")
        while True:
            with self.post(
                "/accounts/login/",
                {"username": self.username, "password": PASSWORD},
                "login",
            ) as r:
                self._keep_cookies(r)
                if r.status_code == 503:
                    login_busy[0] += 1
                    r.success()  # answered as designed; reported on its own
                    gevent.sleep(float(r.headers.get("Retry-After", "2")) * random.uniform(1, 1.5))
                    continue
                if r.status_code != 302 or "sessionid" not in self.cookies:
                    r.failure(f"login answered HTTP {r.status_code} {r.error or ''}")
                    raise StopUser()
                r.success()
                logged_in.append(time.time() - started[0])
                return


class Annotator(Person):
    weight = 50
    wait_time = between(*THINK)  # reading the item

    def on_start(self) -> None:
        self.username = next(ANNOTATORS)
        self.judged = 0
        super().on_start()
        self.get(f"/projects/{PROJECT}/judgment-tasks/", "judging page")

    @task
    def judge_one(self) -> None:
        with self.post(f"/judgment-tasks/{TASK}/next/", {}, "next") as r:
            self._keep_cookies(r)
            if r.status_code == 200:  # the queue is empty for this person
                r.success()
                queue_empty[0] += 1
                gevent.sleep(5)
                return
            match = JUDGE_PATH.search(r.headers.get("Location", ""))
            if r.status_code != 302 or not match:
                r.failure(f"HTTP {r.status_code} {r.error or r.headers.get('Location', '')}")
                return
            r.success()
        item_id = int(match.group(1))
        page = self.get(f"/judgment-tasks/{TASK}/items/{item_id}/", "judge page")
        if page.status_code != 200:
            return
        gevent.sleep(random.uniform(*THINK))  # reading the item and deciding
        form = {"value": random.choice(VALUES), "comment": "", "seconds": "4.2"}
        with self.post(f"/judgment-tasks/{TASK}/items/{item_id}/", form, "submit") as r:
            self._keep_cookies(r)
            if r.status_code == 302 and r.headers.get("Location", "").endswith(
                f"/judgment-tasks/{TASK}/next/"
            ):
                r.success()
                accepted.append((self.username, item_id))
            else:
                r.failure(f"HTTP {r.status_code} (not accepted) {r.error or ''}")
                return
        self.judged += 1
        if self.judged % 5 == 0:  # every few items: the item list and one item
            self.get(f"/projects/{PROJECT}/", "item list")
            other = random.randint(FIRST_ITEM, LAST_ITEM)
            self.get(f"/projects/{PROJECT}/items/{other}/", "item page")


class Reviewer(Person):
    weight = 1
    fixed_count = int(os.environ.get("LOAD_REVIEWER_COUNT", "3"))  # started first, of --users
    abstract = fixed_count == 0  # --reviewers 0: none at all
    wait_time = between(5, 15)

    def on_start(self) -> None:
        self.username = next(REVIEWERS)
        super().on_start()

    @task
    def look(self) -> None:
        self.get(f"/adjudication/{TASK}/disputes/", "disagreement queue")
        self.get(f"/agreement/{TASK}/", "agreement page")
