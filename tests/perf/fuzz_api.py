"""The API under a fuzzer, the long run (issue 14): ``schemathesis run`` in-process. The app
starts as in production, with DEBUG off and a strong SECRET_KEY, on a fresh database (SQLite
in a temporary folder unless ``--database-url``) without ``collectstatic``; a small project
(tests/test_api_schemathesis.py's ``populate``) and its admin ``fuzz-admin`` (basic auth).
Then schemathesis's engine runs every phase (examples, coverage, fuzzing, stateful where the
schema has links) with every check, through the WSGI app (a local port), and this prints the
cases run, the failures by check, the server errors and each distinct failure.

    python tests/perf/fuzz_api.py                       # 100 examples per operation
    python tests/perf/fuzz_api.py --max-examples 300 --workers 2
    python tests/perf/fuzz_api.py --database-url postgres://postgres@127.0.0.1:5432/bw_fuzz

The short run in the suite is tests/benchmark/test_api_schemathesis.py. Prints figures only;
the exit status is 1 when a check failed (so CI may run it too).
"""

from __future__ import annotations

import argparse
import base64
import collections
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=100)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--database-url", default="")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()

    tmp = tempfile.mkdtemp(prefix="bw-fuzz-")
    if args.database_url:
        sys.path.insert(0, str(Path(__file__).parent))
        from _support import fresh_postgres

        fresh_postgres(args.database_url)
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "benchmark.settings",
            "DEBUG": "False",
            "SECRET_KEY": "fuzz-" + base64.b64encode(os.urandom(48)).decode(),
            "ALLOWED_HOSTS": "localhost,testserver",
            "DATABASE_URL": args.database_url or f"sqlite:///{Path(tmp) / 'fuzz.sqlite3'}",
            "MEDIA_ROOT": str(Path(tmp) / "media"),
        }
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application

    # Fast password hashing for the fuzzed user's basic auth (checked on every request).
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.AXES_ENABLED = False  # the auth checks send wrong passwords on purpose
    call_command("migrate", verbosity=0)

    sys.path.insert(0, str(ROOT / "tests" / "benchmark"))
    from test_api_schemathesis import BASIC, CONTENT_CHECKED, load_schema, populate

    populate()

    import schemathesis
    from schemathesis.engine import Status, events, from_schema

    # Served over HTTP on a local port by a threaded WSGI server (schemathesis's in-process
    # WSGI transport does not take every option its phases pass).
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, get_wsgi_application(), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    schema = load_schema()
    schema.app = None
    schema.config.update(
        base_url=f"http://localhost:{server.server_port}",
        headers={"Authorization": BASIC},
        workers=args.workers,
    )
    schema.config.generation.update(
        max_examples=args.max_examples, allow_x00=True, with_security_parameters=False
    )
    schema.config.checks.update(included_check_names=["all"])
    if args.seed is not None:
        schema.config.seed = args.seed
    # As in the suite: for writes whose content the schema cannot describe (uploads, native
    # records, judgment values), a 400 is the right answer to schema-valid data.
    skip_positive = {f"{m} {p}" for m, p in CONTENT_CHECKED}

    started = time.perf_counter()
    cases = 0
    by_check: collections.Counter[str] = collections.Counter()
    server_errors = 0
    distinct: dict[tuple[str, str, str], str] = {}
    statuses: collections.Counter[int] = collections.Counter()
    for event in from_schema(schema).execute():
        recorder = getattr(event, "recorder", None)
        if isinstance(event, (events.ScenarioFinished, events.FuzzScenarioFinished)) and recorder:
            cases += len(recorder.cases)
            for interaction in recorder.interactions.values():
                if interaction.response is not None:
                    statuses[interaction.response.status_code] += 1
                    if interaction.response.status_code >= 500:
                        server_errors += 1
            for case_id, checks in recorder.checks.items():
                for check in checks:
                    if check.status != Status.FAILURE or check.failure_info is None:
                        continue
                    operation = recorder.cases[case_id].value.operation.label
                    if check.name == "positive_data_acceptance" and operation in skip_positive:
                        continue
                    by_check[check.name] += 1
                    failure = check.failure_info.failure
                    key = (operation, check.name, failure.title)
                    distinct.setdefault(
                        key, f"{failure.message}\n      {check.failure_info.code_sample}"
                    )
        elif isinstance(event, events.NonFatalError):
            print(f"error in {event.label}: {event.value!r}")
        elif isinstance(event, events.FatalError):
            print(f"fatal: {event.exception!r}")
            return 2
    elapsed = time.perf_counter() - started

    print(f"schemathesis {schemathesis.__version__}")
    print(f"database: {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}, DEBUG off")
    print(f"operations: {len(list(schema.get_all_operations()))}")
    print(f"max examples per operation: {args.max_examples}, workers: {args.workers}")
    print(f"cases run: {cases} in {elapsed:.1f} s")
    print("responses by status: " + ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items())))
    print(f"server errors (5xx): {server_errors}")
    print(f"failed checks: {sum(by_check.values())}")
    for name, n in by_check.most_common():
        print(f"  {name}: {n}")
    print(f"distinct failures: {len(distinct)}")
    for (label, name, title), detail in sorted(distinct.items()):
        print(f"  {label} [{name}] {title}\n      {detail}")
    return 1 if by_check or server_errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
