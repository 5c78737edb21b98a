"""Evaluation speed (issue 24 "Speed"): a model under test over N items (default 400), each
item one tool call and a final answer (two model calls, one tool call), against a local
OpenAI-compatible server answering in 50 ms, with 8 workers; then the same run in replay mode
(every model and tool call answered from the record, no server needed).

    python tests/perf/bench_evaluate.py                    # SQLite in a temporary folder
    python tests/perf/bench_evaluate.py --items 100 --latency 0.02
    python tests/perf/bench_evaluate.py --database-url postgres://postgres@127.0.0.1:5432/bw_perf_eval

The protocol is the test suite's (``tests/evaluation_protocol.py``: the query, one ``lookup``
tool call through the tool layer, the answer), made the ATP-Bench kind's protocol in the child
processes. The floor is model calls x latency / workers; the targets (issue 24) are a first
run within 1.3x the floor with peak memory <= 300 MB, and the replay within 30 s. Prints
figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _support import fresh_postgres, run_phase

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "perf evaluate"


def serve(latency: float) -> None:
    """The model under test: a lookup tool call, then the tool's answer as its own."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return None

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            time.sleep(latency)
            messages = body["messages"]
            query = messages[0]["content"][0]["text"]
            if messages[-1]["role"] == "tool":
                message = {
                    "role": "assistant",
                    "content": json.loads(messages[-1]["content"])["meaning"],
                }
            else:
                message = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c1", "type": "function",
                         "function": {"name": "lookup", "arguments": json.dumps({"q": query})}}
                    ],
                }  # fmt: skip
            data = json.dumps(
                {
                    "id": "x", "object": "chat.completion", "created": 0,
                    "model": body.get("model", ""),
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320},
                }
            ).encode()  # fmt: skip
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.request_queue_size = 128
    print(server.server_address[1], flush=True)
    server.serve_forever(poll_interval=0.1)


def _install() -> None:
    from benchmark import kinds

    kinds.KINDS[:] = [
        dataclasses.replace(k, evaluation="tests.evaluation_protocol.PROTOCOL")
        if k.name == "atp"
        else k
        for k in kinds.KINDS
    ]


def child(args: argparse.Namespace) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmark.settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    from benchmark.models import Item, Project, Toolset

    _install()
    if args.child == "setup":
        call_command("migrate", verbosity=0)
        toolset, _ = Toolset.objects.get_or_create(name="atp")
        project = Project.objects.create(
            toolset=toolset, name=PROJECT, kind="interleaved", tag_syntax="atp",
            data_format="atp",
            settings={"model": {"base_url": args.base_url, "model": "perf-model",
                                "concurrency": args.workers}},
        )  # fmt: skip
        Item.objects.bulk_create(
            Item(
                project=project, external_id=f"q{i:05d}", position=i, query=f"apple {i}",
                status="verified", raw=json.dumps({"query": f"apple {i}", "answer": "unknown"}),
            )
            for i in range(args.items)
        )  # fmt: skip
        print(json.dumps({"items": args.items}))
        return

    from review.evaluation import services

    project = Project.objects.get(name=PROJECT)
    start = time.perf_counter()
    run, jobs = services.evaluation_run_create(
        project=project, user=None, workers=args.workers, replay=args.child == "replay"
    )
    run = services.evaluation_run_execute(run=run, jobs=jobs)
    seconds = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    failed = services.job_failed_messages(jobs)
    if failed:
        raise SystemExit(f"the evaluation failed: {failed[0]}")
    print(
        json.dumps(
            {
                "seconds": round(seconds, 2),
                "peak_mb": round(usage.ru_maxrss / 1024, 1),
                "cpu": round(usage.ru_utime + usage.ru_stime, 1),
                "accuracy": run.summary.get("accuracy"),
                "results": run.results.count(),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.05, help="server seconds per answer")
    parser.add_argument("--database-url", default="", help="PostgreSQL (default: SQLite)")
    parser.add_argument("--child", choices=["setup", "run", "replay"])
    parser.add_argument("--serve", action="store_true")
    parser.add_argument("--base-url", default="")
    args = parser.parse_args()
    if args.serve:
        serve(args.latency)
        return
    if args.child:
        child(args)
        return
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--latency", str(args.latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = f"http://127.0.0.1:{server.stdout.readline().strip()}/v1"
        with tempfile.TemporaryDirectory() as tmp:
            if args.database_url:
                fresh_postgres(args.database_url)
                db, where = args.database_url, "postgresql"
            else:
                db, where = f"sqlite:///{Path(tmp) / 'evaluate.sqlite3'}", "sqlite"
            env = {
                "DATABASE_URL": db,
                "MEDIA_ROOT": str(Path(tmp) / "media"),
                "DEBUG": "false",
                "SECRET_KEY": "perf-" + "x9" * 30,
                "ALLOWED_HOSTS": "localhost",
                "EVALUATION_TOOL_PROVIDERS": "tests.evaluation_protocol.lookup_provider",
            }
            argv = ["--base-url", base_url, "--items", str(args.items),
                    "--workers", str(args.workers)]  # fmt: skip
            run_phase(__file__, "setup", argv, env)
            floor = 2 * args.items * args.latency / args.workers
            print(
                f"{where}: {args.items} items x (2 model calls + 1 tool call), {args.workers} "
                f"workers, server latency {args.latency * 1000:.0f} ms; floor {floor:.1f} s"
            )
            for phase in ("run", "replay"):
                r = run_phase(__file__, phase, argv, env)
                print(
                    f"  {phase:7s} {r['seconds']:7.2f} s ({r['seconds'] / floor:.2f}x the floor)  "
                    f"peak {r['peak_mb']:6.1f} MB  cpu {r['cpu']:.1f} s  "
                    f"{r['results']} results, accuracy {r['accuracy']}"
                )
            print(f"  load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
