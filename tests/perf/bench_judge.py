"""Judge-run speed (issue 10 "Speed"): the LLMI-Bench rubric judge over 1,000 answers x 10
criteria (10,000 calls) against a local OpenAI-compatible server that answers in 50 ms, with 8
workers; then a new run on the same answers, every call served from the cache.

    python tests/perf/bench_judge.py                       # SQLite in a temporary folder
    python tests/perf/bench_judge.py --database-url postgres://postgres@127.0.0.1:5432/bw_perf_judge
    python tests/perf/bench_judge.py --answers 200 --latency 0.02

The model server runs in a process of its own (so its threads take nothing from the runner's
interpreter), answering ``{"score": n, "justification": "..."}`` after ``--latency`` seconds over
HTTP/1.1 keep-alive. Setup, the first run and the cached re-run each run in a fresh process, so
the peak memory printed (max RSS, Django and the openai SDK included) is the judge job's own. A
PostgreSQL database named in ``--database-url`` is dropped and created again. Prints figures and
the machine's load; asserts nothing about time (targets: first run <= 120 s, peak <= 300 MB,
cached re-run <= 10 s).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _support import fresh_postgres, run_phase

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "perf judge"
WORDS = [
    *("model", "image", "answer", "caption", "figure", "table", "retrieval", "encoder"),
    *("decoder", "layer", "score", "baseline", "dataset", "training", "ablation", "result"),
    *("method", "patch", "feature", "gate", "memory", "query", "context"),
]
IMGEN = '<imgen>{"source": "diffusion", "description": "%s", "params": {"prompt": "%s"}}</imgen>'


def sentence(rng: random.Random, n: int) -> str:
    out, size = [], 0
    while size < n:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n].rstrip() + "."


# --------------------------------------------------------------------------- the model server


def serve(latency: float) -> None:
    """An OpenAI-compatible chat-completions server on a free port (printed on stdout)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    counter = {"n": 0}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # as uvicorn and vLLM: no 40 ms delayed-ACK stalls

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return None

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            time.sleep(latency)
            with lock:
                counter["n"] += 1
                n = counter["n"]
            text = json.dumps({"score": n % 3, "justification": "the report meets it partly"})
            data = json.dumps(
                {
                    "id": f"chatcmpl-{n}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", ""),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 900, "completion_tokens": 20, "total_tokens": 920},
                }
            ).encode()
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


# --------------------------------------------------------------------------- phases


def child(args: argparse.Namespace) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmark.settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    from benchmark.models import Item, Origin, Project, Response, Toolset

    if args.child == "setup":
        call_command("migrate", verbosity=0)
        toolset, _ = Toolset.objects.get_or_create(name="llmi")
        project = Project.objects.create(
            toolset=toolset,
            name=PROJECT,
            kind="interleaved",
            tag_syntax="llmi",
            data_format="llmi",
            settings={
                "model": {
                    "base_url": args.base_url,
                    "model": "perf-judge",
                    "concurrency": args.workers,
                }
            },
        )
        rng = random.Random(7)
        items = Item.objects.bulk_create(
            Item(
                project=project,
                external_id=f"q{i:05d}",
                position=i,
                query=sentence(rng, 300),
                rubric=[
                    {"key": f"r{k}", "text": sentence(rng, 120)}
                    for k in range(1, args.criteria + 1)
                ],
                constraints={"image_num": 2},
            )
            for i in range(args.answers)
        )
        Response.objects.bulk_create(
            Response(
                item=item,
                key="model:perf-model",
                origin=Origin.MODEL,
                model_name="perf-model",
                position=1000,
                text="\n\n".join(
                    [
                        sentence(rng, 700),
                        IMGEN % (sentence(rng, 40), sentence(rng, 80)),
                        sentence(rng, 700),
                        IMGEN % (sentence(rng, 40), sentence(rng, 80)),
                        sentence(rng, 400),
                    ]
                ),
            )
            for item in items
        )
        print(json.dumps({"answers": len(items)}))
        return

    from review.judges import services as judge_services

    project = Project.objects.get(name=PROJECT)
    start = time.perf_counter()
    run, job = judge_services.judge_run_create(
        project=project, user=None, judge="llmi-rubric", workers=args.workers
    )
    job = judge_services.judge_run_execute(job=job)
    seconds = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    peak = usage.ru_maxrss / 1024
    if job.status != "succeeded":
        raise SystemExit(f"the judge job {job.status}: {job.error}")
    summary = job.result["summary"]
    print(
        json.dumps(
            {
                "seconds": round(seconds, 2),
                "peak_mb": round(peak, 1),
                "cpu": round(usage.ru_utime + usage.ru_stime, 1),
                "calls": summary["calls"],
                "rubric": summary["models"]["perf-model"]["rubric"],
                "stored": run.calls.count(),
            }
        )
    )


def run_child(phase: str, env: dict[str, str], args: argparse.Namespace, base_url: str) -> dict:
    return run_phase(
        __file__,
        phase,
        [
            "--base-url",
            base_url,
            "--answers",
            str(args.answers),
            "--criteria",
            str(args.criteria),
            "--workers",
            str(args.workers),
        ],
        env,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=1000)
    parser.add_argument("--criteria", type=int, default=10)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.05, help="server seconds per answer")
    parser.add_argument("--database-url", default="", help="PostgreSQL (default: SQLite)")
    parser.add_argument("--child", choices=["setup", "run"])
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
                db, where = f"sqlite:///{Path(tmp) / 'judge.sqlite3'}", "sqlite"
            env = {
                "DATABASE_URL": db,
                "MEDIA_ROOT": str(Path(tmp) / "media"),
                "DEBUG": "false",  # as a worker runs: no query log
                "SECRET_KEY": "perf-" + "x9" * 30,
                "ALLOWED_HOSTS": "localhost",
            }
            made = run_child("setup", env, args, base_url)
            calls = made["answers"] * args.criteria
            print(
                f"{where}: {made['answers']} answers x {args.criteria} criteria = {calls} calls, "
                f"{args.workers} workers, server latency {args.latency * 1000:.0f} ms"
            )
            for label in ("first run", "cached re-run"):
                r = run_child("run", env, args, base_url)
                c = r["calls"]
                print(
                    f"  {label:14s} {r['seconds']:7.2f} s  peak {r['peak_mb']:6.1f} MB  "
                    f"cpu {r['cpu']:.1f} s  "
                    f"made {c['made']}, cached {c['cached']}, stored {r['stored']}  "
                    f"({calls / max(r['seconds'], 1e-9):.0f} calls/s; rubric {r['rubric']:.1f} %)"
                )
            print(f"  load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
