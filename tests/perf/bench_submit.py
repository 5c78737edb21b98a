"""One annotator judging alone, as the side-by-side comparison with Label Studio timed it:
``runserver`` on SQLite with DEBUG off, an ATP-Bench project where no hiding rule applies (no
blind task), and one person asking for the next item, reading the judge page and submitting,
again and again. Prints the median milliseconds of "next", the judge page, "submit" and
"next + submit" for each run, then the median over the runs.

    python tests/perf/bench_submit.py                      # 3 runs of 150 judgments
    python tests/perf/bench_submit.py --runs 5 --rounds 300
    python tests/perf/bench_submit.py --root ../old-checkout   # another checkout, same method
    python tests/perf/bench_submit.py --gold-rate 20        # gold items mixed in (issue 26)

``--root`` measures another checkout of Benchwright (e.g. ``git worktree add ../old <commit>``)
with this script's method, so a before/after pair is taken under the same machine load. The
times are the client's round trips on loopback, one connection per request. With
``--gold-rate R`` the task serves gold items at R percent (``--gold-items`` verified items marked
gold): the figures are given for the gold items and the others apart, so that a difference an
annotator could time shows. Asserts nothing.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[2]
PASSWORD = "load-test-password-1"  # tests/perf/load.py's setup_data gives everyone this one
JUDGE_PATH = re.compile(r"/judgment-tasks/\d+/items/(\d+)/")


def setup(
    root: Path, env: dict[str, str], items: int, gold_rate: int = 0, gold_items: int = 0
) -> dict[str, Any]:
    """Migrate the fresh database and make the project, its default task and one annotator,
    with ``root``'s own code (tests/perf/load.py's setup_data); with ``gold_rate``, also
    ``gold_items`` verified items marked gold for the task and its rate set (``data["gold"]``:
    their ids)."""
    code = (
        "import json, sys, os, django\n"
        f"sys.path.insert(0, {str(root)!r})\n"
        "os.environ['DJANGO_SETTINGS_MODULE'] = 'benchmark.settings'\n"
        "django.setup()\n"
        "from django.core.management import call_command\n"
        "call_command('migrate', verbosity=0)\n"
        "from tests.perf.load import setup_data\n"
        f"data = setup_data(items={items}, annotators=1, reviewers=0)\n"
        "data['gold'] = []\n"
    )
    if gold_rate:
        code += (
            "from annotation.judgment_tasks.models import GoldItem, JudgmentTask, Outcome\n"
            "from benchmark.models import Item\n"
            "task = JudgmentTask.objects.get(pk=data['task'])\n"
            f"task.gold_rate = {gold_rate}\n"
            "task.save()\n"
            "model = Item.objects.filter(project_id=data['project']).first()\n"
            f"for i in range({gold_items}):\n"
            "    model.pk, model.id, model.external_id = None, None, f'gold-{i}'\n"
            "    model.position, model.status = 10**6 + i, 'verified'\n"
            "    model.save()\n"
            "    Outcome.objects.create(task=task, item_id=model.pk, verdict='accepted',\n"
            "                           value='keep')\n"
            "    GoldItem.objects.create(task=task, item_id=model.pk, value='keep')\n"
            "    data['gold'].append(model.pk)\n"
        )
    code += "print(json.dumps(data))\n"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode:
        raise SystemExit(f"setting up failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Client:
    """Plain HTTP with the session's cookies kept by hand (they are Secure with DEBUG off)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, form: dict[str, str] | None = None) -> tuple:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        body = None
        if method == "POST":
            from urllib.parse import urlencode

            body = urlencode(form or {})
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            headers["X-CSRFToken"] = self.cookies.get("csrftoken", "")
        started = time.perf_counter()
        conn.request(method, path, body=body, headers=headers)
        response = response_read = conn.getresponse()
        response_read.read()
        elapsed = (time.perf_counter() - started) * 1000
        for name, value in response.getheaders():
            if name.lower() == "set-cookie":
                key, _, rest = value.partition("=")
                self.cookies[key.strip()] = rest.split(";", 1)[0]
        conn.close()
        return response.status, response.getheader("Location") or "", elapsed


def one_run(
    root: Path, *, items: int, rounds: int, gold_rate: int = 0, gold_items: int = 0
) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{Path(tmp) / 'side.sqlite3'}",
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(60),
            "ALLOWED_HOSTS": "127.0.0.1",
            "MEDIA_ROOT": str(Path(tmp) / "media"),
            "PYTHONDONTWRITEBYTECODE": "",
        }
        env.pop("CELERY_BROKER_URL", None)
        env.pop("CACHE_URL", None)
        data = setup(root, env, items, gold_rate, gold_items)
        gold = set(data["gold"])
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.time() + 60
            while time.time() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.2)
            client = Client(port)
            client.request("GET", "/accounts/login/")
            status, _, _ = client.request(
                "POST",
                "/accounts/login/",
                {"username": data["annotators"][0], "password": PASSWORD},
            )
            if status != 302:
                raise SystemExit(f"login answered HTTP {status}")
            task = data["task"]
            client.request("GET", f"/projects/{data['project']}/judgment-tasks/")
            times: dict[str, list[float]] = {"next": [], "judge page": [], "submit": []}
            both: list[float] = []
            for n in range(rounds + 5):
                status, location, t_next = client.request("POST", f"/judgment-tasks/{task}/next/")
                match = JUDGE_PATH.search(location)
                if status != 302 or not match:
                    raise SystemExit(f"next answered HTTP {status} {location!r}")
                status, _, t_page = client.request("GET", location)
                if status != 200:
                    raise SystemExit(f"the judge page answered HTTP {status}")
                form = {"value": '"keep"', "comment": "", "seconds": "4.2"}
                status, after, t_submit = client.request("POST", location, form)
                if status != 302 or not after.endswith(f"/judgment-tasks/{task}/next/"):
                    raise SystemExit(f"submit answered HTTP {status} {after!r}")
                if n >= 5:  # the first few warm the server's caches and connections
                    times["next"].append(t_next)
                    times["judge page"].append(t_page)
                    times["submit"].append(t_submit)
                    both.append(t_next + t_submit)
                    if gold:  # the gold items and the others apart
                        kind = "gold" if int(match.group(1)) in gold else "other"
                        for name, value in (("next", t_next), ("judge page", t_page),
                                            ("submit", t_submit)):  # fmt: skip
                            times.setdefault(f"{name} ({kind})", []).append(value)
        finally:
            server.terminate()
            server.wait(timeout=30)
    figures = {name: statistics.median(values) for name, values in times.items()}
    figures["next + submit"] = statistics.median(both)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=HERE, help="the checkout to measure")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=150, help="judgments per run")
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--gold-rate", type=int, default=0, help="percent of gold items served")
    parser.add_argument("--gold-items", type=int, default=40, help="gold items (with a rate)")
    args = parser.parse_args()
    root = args.root.resolve()
    if args.rounds > args.items - 5:
        parser.error("--items must exceed --rounds by at least 5")
    runs = []
    for n in range(args.runs):
        figures = one_run(
            root, items=args.items, rounds=args.rounds, gold_rate=args.gold_rate,
            gold_items=args.gold_items,
        )  # fmt: skip
        runs.append(figures)
        shown = ", ".join(f"{k} {v:.1f} ms" for k, v in figures.items())
        print(f"run {n + 1}: median {shown}", flush=True)
    load = os.getloadavg()[0]
    print(f"checkout {root}; load average {load:.2f}")
    for name in runs[0]:
        print(f"{name:>14}: median over runs {statistics.median(r[name] for r in runs):.1f} ms")


if __name__ == "__main__":
    main()
