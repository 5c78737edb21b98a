"""Evaluation speed (issue 24 "Tests and speed"): a model under test answering in 50 ms, served
by ``tests/llm_server.py`` (a threading server in a process of its own, HTTP/1.1 keep-alive,
its scripted replies in ``_scripted_models.py``), and

a. an Agentic-MME evaluation of 400 tasks (one generated JPEG each, a crop checkpoint and a
   golden answer to score against) in Atm mode, the model making 3 to 7 atomic tool calls a
   task (5 on average, one a round) and then answering, with 8 workers;
b. the same evaluation again with ``--replay`` and the model server stopped;
c. a 1,000-item ATP-Bench evaluation (one model call an item), 8 workers.

    python tests/perf/bench_evaluate.py                       # SQLite in a temporary folder
    python tests/perf/bench_evaluate.py --database-url postgres://postgres@127.0.0.1:5432/bw_perf_eval
    python tests/perf/bench_evaluate.py --tasks 100 --atp-items 200 --runs 1

Each evaluation is timed as a user times it: ``python manage.py evaluate --project ...
--workers 8`` (``--replay`` for b) run as a process of its own, whose wall time, CPU time
(user + system) and peak memory (max RSS) are printed. That command runs the same "evaluate"
job runner the "Evaluate a model" page enqueues (``review.evaluation.services``), so the two
paths are timed alike; the runner's own time (the job's started_at to finished_at, without
the process's start and the printing of one JSON line per item) is printed beside.

The floor is the model's time divided by the workers: model calls made x latency / workers.
Targets (issue 24): a <= 1.3 x floor with peak <= 300 MB; b <= 30 s; c <= 1.2 x floor.

After c, a calibration (``calib``) times what no evaluation code can go below on this machine:
``start``, a process that sets Django up and imports the model SDK and does nothing else
(the median of 3), and ``calls``, c's own requests (rebuilt from its stored calls, before the
clock starts) sent again by the SDK alone, ``sdk.post`` as the model client sends them, from
as many processes and threads as c used, with no item read, scored or stored. Their sum is
printed as a ratio to c's floor beside c's: the part of c's ratio above it is Benchwright's
own work (the run, the items, scoring, storing, the summary, printing).

Every round (``--runs``, default 3) starts from a fresh database (a PostgreSQL one named in
``--database-url`` is dropped and created again) and generates the data again; setup and each
evaluation run in processes of their own. Printed: each round's figures, then the median of
each over the rounds, with the machine's load (``os.getloadavg()``) at each evaluation: other
processes on a shared machine slow wall time, so read CPU time beside it. Asserts nothing.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _support import fresh_postgres, run_phase

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
MME_PROJECT = "perf evaluate agentic-mme"
ATP_PROJECT = "perf evaluate atp"
MODEL = "perf-agent-7b"
WORKERS_DEFAULT = 8

# --------------------------------------------------------------------------- the model server


class ModelServer:
    """``tests/llm_server.py`` in a child process (so its threads take nothing from the
    evaluating process's interpreter); started and stopped between phases."""

    def __init__(self, latency: float) -> None:
        import socket

        self.latency = latency
        self.process: subprocess.Popen[str] | None = None
        with socket.socket() as probe:  # one port for every start: the project keeps its URL
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> str:
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "tests" / "llm_server.py"),
                "--delay",
                str(self.latency),
                "--respond",
                "_scripted_models:reply",
                "--port",
                str(self.port),
            ],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(HERE)},
        )
        assert self.process.stdout is not None
        if not self.process.stdout.readline().strip():
            raise SystemExit("the model server did not start")
        return self.base_url

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait()
            self.process = None


# --------------------------------------------------------------------------- data


def _jpeg(rng: random.Random, n: int, size: tuple[int, int] = (640, 480)) -> bytes:
    """A distinct photo-like JPEG: a gradient, shapes, a sign with a code, mild noise."""
    from PIL import Image, ImageDraw, ImageFilter

    w, h = size
    top = (rng.randrange(40, 200), rng.randrange(40, 200), rng.randrange(40, 200))
    image = Image.linear_gradient("L").resize((w, h)).convert("RGB")
    image = Image.blend(image, Image.new("RGB", (w, h), top), 0.6)
    draw = ImageDraw.Draw(image)
    for _ in range(12):
        x, y = rng.randrange(w), rng.randrange(h)
        colour = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
        draw.rectangle([x, y, x + rng.randrange(20, 160), y + rng.randrange(20, 120)], fill=colour)
    draw.rectangle([400, 160, 560, 260], fill=(250, 250, 250), outline=(0, 0, 0))
    draw.text((420, 200), f"CODE-{n}", fill=(0, 0, 0))
    image = image.filter(ImageFilter.GaussianBlur(0.6))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=85)
    return out.getvalue()


def mme_folder(root: Path, tasks: int) -> Path:
    """``tasks`` Agentic-MME records in the released layout (json/, images/)."""
    rng = random.Random(24)
    (root / "json").mkdir(parents=True)
    (root / "images").mkdir()
    for k in range(tasks):
        name = f"images/perf_{k:04d}.jpg"
        (root / name).write_bytes(_jpeg(rng, k))
        record = {
            "task_id": f"perf{k:04d}",
            "meta": {"level": 1 + k % 3, "domain": "Life", "turncase": "single_turn"},
            "input": {
                "prompt": f"Task {k}: what code is written on the white sign? Answer with it.",
                "image": name,
            },
            "golden_answer": {"value": f"CODE-{k}", "match_type": "contains"},
            "process_evaluation": {
                "checkpoints": [
                    {
                        "id": "C1",
                        "axis": "V",
                        "description": "Crop the white sign so its code is legible.",
                        "tools": ["crop"],
                        "code_check": {
                            "verifier": "verify_crop_ast",
                            "image_index": 0,
                            "bbox_2d": [625, 333, 875, 542],
                        },
                    },
                    {
                        "id": "C2",
                        "axis": "V",
                        "description": "Report the code read from the sign.",
                        "tools": [],
                        "answer_check": {"match_type": "contains", "target": f"CODE-{k}"},
                    },
                ],
                "ordering_constraints": [{"id": "O1", "sequence": ["C1", "C2"], "max_gap": 8}],
                "efficiency": {
                    "reference_tool_calls": 1,
                    "penalty_per_extra_call": 0.1,
                    "max_tool_calls": 8,
                },
            },
        }
        (root / "json" / f"perf{k:04d}.json").write_text(json.dumps(record), encoding="utf-8")
    return root


def atp_folder(root: Path, items: int) -> Path:
    """``items`` ATP-Bench records (data.jsonl, images/): the demo's records again under new
    ids, each with a distinct first document image."""
    rng = random.Random(10)
    demo = ROOT / "review" / "demo" / "atp"
    records = [json.loads(line) for line in (demo / "data.jsonl").read_text().splitlines()]
    (root / "images").mkdir(parents=True)
    for path in (demo / "images").iterdir():
        (root / "images" / path.name).write_bytes(path.read_bytes())
    with (root / "data.jsonl").open("w", encoding="utf-8") as out:
        for n in range(items):
            record = json.loads(json.dumps(records[n % len(records)]))
            record["trace_id"] = f"perf_atp_{n:05d}"
            own = f"images/perf_atp_{n:05d}.jpg"
            (root / own).write_bytes(_jpeg(rng, n, (480, 360)))
            old = record["images"][0] if record.get("images") else None
            record["images"] = [own, *record.get("images", [])[1:]]
            for doc in record.get("doc") or []:
                doc["images"] = [own if i == old else i for i in doc.get("images") or []]
            out.write(json.dumps(record) + "\n")
    return root


# --------------------------------------------------------------------------- phases (children)


def _project(name: str, kind_name: str, base_url: str, workers: int) -> Any:
    from benchmark.builtin import taxonomies_ensure, toolsets_ensure
    from benchmark.kinds import kind_named
    from benchmark.models import Membership, Project, Role
    from benchmark.typing import User

    kind = kind_named(kind_name)
    toolsets, taxonomies = toolsets_ensure(), taxonomies_ensure()
    project = Project.objects.create(
        name=name,
        kind=kind.project_kind,
        tag_syntax=kind.tag_syntax,
        data_format=kind.name,
        toolset=toolsets[kind.toolset] if kind.toolset else None,
        taxonomy=taxonomies[kind.taxonomy] if kind.taxonomy else None,
        settings={"model": {"base_url": base_url, "model": MODEL, "concurrency": workers}},
    )
    reviewer, _ = User.objects.get_or_create(username="perf-reviewer")
    Membership.objects.create(project=project, user=reviewer, role=Role.REVIEWER)
    return project


def phase_setup(args: argparse.Namespace) -> dict[str, Any]:
    from django.core.management import call_command

    from benchmark.datasets.services import dataset_import
    from benchmark.models import Item, ItemStatus

    call_command("migrate", verbosity=0)
    made: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, kind, folder in (
            (MME_PROJECT, "agentic-mme", mme_folder(Path(tmp) / "mme", args.tasks)),
            (ATP_PROJECT, "atp", atp_folder(Path(tmp) / "atp", args.atp_items)),
        ):
            project = _project(name, kind, args.base_url, args.workers)
            dataset_import(project=project, path=folder)
            made[kind] = Item.objects.filter(project=project).update(status=ItemStatus.VERIFIED)
    return made


def phase_evaluate(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``manage.py evaluate`` as a process of its own and time it; then read the run's
    figures from the database."""
    from benchmark.models import Job
    from review.evaluation.models import EvaluationCall, EvaluationResult, EvaluationRun

    project = MME_PROJECT if args.child in ("mme", "replay") else ATP_PROJECT
    command = [
        sys.executable,
        str(ROOT / "manage.py"),
        "evaluate",
        "--project",
        project,
        "--workers",
        str(args.workers),
    ]
    if args.child == "replay":
        command.append("--replay")
    load = os.getloadavg()[0]
    started = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"manage.py evaluate failed:\n{stderr[-3000:]}")
    run = EvaluationRun.objects.filter(project__name=project).order_by("-pk").first()
    assert run is not None
    jobs = list(Job.objects.filter(pk__in=run.job_ids))
    job_seconds = (
        max(j.finished_at for j in jobs) - min(j.started_at for j in jobs)
    ).total_seconds()
    results = EvaluationResult.objects.filter(run=run)
    model_calls = sum(results.values_list("model_calls", flat=True))
    made = EvaluationCall.objects.filter(run=run).count()
    summary = run.summary or {}
    return {
        "seconds": round(seconds, 2),
        "job_seconds": round(job_seconds, 2),
        "cpu": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_mb": round(usage.ru_maxrss / 1024, 1),
        "items": results.count(),
        "errors": results.filter(status="error").count(),
        "model_calls": model_calls,
        "calls_made": made,
        "tool_calls": sum(results.values_list("tool_calls", flat=True)),
        "figure": summary.get("acc") if args.child != "atp" else summary.get("format_valid"),
        "load": round(load, 2),
    }


def _atp_bodies() -> list[bytes]:
    """The requests of the last ATP-Bench run as they went out (images as data URLs)."""
    import orjson

    from benchmark.llm.client import ConversationRequest
    from benchmark.models import Image
    from review.evaluation.models import EvaluationCall, EvaluationRun

    run = EvaluationRun.objects.filter(project__name=ATP_PROJECT).order_by("-pk").first()
    assert run is not None
    images: dict[str, bytes] = {}
    bodies = []
    for call in EvaluationCall.objects.filter(run=run).order_by("pk"):
        refs = {
            part["image_url"]["url"].removeprefix("sha256:")
            for message in call.messages
            if isinstance(message.get("content"), list)
            for part in message["content"]
            if part.get("type") == "image_url"
        }
        for image in Image.objects.filter(sha256__in=refs - set(images)):
            with image.file.open("rb") as handle:
                images[image.sha256] = handle.read()
        request = ConversationRequest(
            messages=tuple(call.messages),
            images={ref: images[ref] for ref in refs},
            tools=tuple(call.tools or ()),
            params=dict(call.params or {}),
        )
        extra = {"tools": list(request.tools)} if request.tools else {}
        body = {"model": MODEL, "messages": request.wire_messages(), **extra, **request.params}
        bodies.append(orjson.dumps(body))
    return bodies


def _send_all(base_url: str, bodies: list[bytes], threads: int) -> None:
    """In a process of its own: ``bodies`` sent by ``threads`` threads through one SDK
    client (one connection pool, as the model client keeps one per run)."""
    import queue
    import threading

    import openai

    sdk = openai.OpenAI(base_url=base_url, api_key="none", max_retries=0)
    todo: queue.SimpleQueue[bytes] = queue.SimpleQueue()
    for body in bodies:
        todo.put(body)

    def send() -> None:
        while True:
            try:
                body = todo.get_nowait()
            except queue.Empty:
                return
            sdk.post("/chat/completions", content=body, cast_to=object)

    pool = [threading.Thread(target=send) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()


def phase_calibrate(args: argparse.Namespace) -> dict[str, Any]:
    """What no evaluation code goes below here: the start of a process with Django and the
    SDK, and c's requests sent by the SDK alone, split as c split them."""
    import multiprocessing

    import openai  # noqa: F401 - imported before the clock: the senders are forked with it
    from django.db import connections

    from review.evaluation.services import processes_for

    starts = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", "import django; django.setup(); import openai"],
            cwd=ROOT,
            check=True,
            env={**os.environ, "DJANGO_SETTINGS_MODULE": "benchmark.settings"},
        )
        starts.append(time.perf_counter() - started)
    bodies = _atp_bodies()
    processes = processes_for(args.workers)
    threads = -(-args.workers // processes)  # as the run's chunks share its workers
    connections.close_all()
    context = multiprocessing.get_context("fork")
    parts = [bodies[n::processes] for n in range(processes)]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    children = [
        context.Process(target=_send_all, args=(args.base_url, part, threads)) for part in parts
    ]
    for child in children:
        child.start()
    for child in children:
        child.join()
    calls = time.perf_counter() - started
    if any(child.exitcode for child in children):
        raise SystemExit("the calibration's senders failed")
    return {
        "start": round(statistics.median(starts), 3),
        "calls": round(calls, 3),
        "requests": len(bodies),
        "processes": processes,
        "threads": threads,
        "request_kb": round(statistics.mean(len(b) for b in bodies) / 1024, 1) if bodies else 0,
        "load": round(load, 2),
    }


PHASES = {
    "setup": phase_setup,
    "mme": phase_evaluate,
    "replay": phase_evaluate,
    "atp": phase_evaluate,
    "calibrate": phase_calibrate,
}


# --------------------------------------------------------------------------- the parent


def line(label: str, r: dict[str, Any], floor: float | None, latency: float) -> str:
    text = (
        f"  {label:9s} {r['seconds']:7.2f} s (runner {r['job_seconds']:6.2f} s)  "
        f"cpu {r['cpu']:6.1f} s  peak {r['peak_mb']:6.1f} MB  "
        f"{r['items']} items, {r['errors']} errors, {r['model_calls']} model calls "
        f"({r['calls_made']} made), {r['tool_calls']} tool calls"
    )
    if floor:
        text += f"  floor {floor:6.2f} s  ratio {r['seconds'] / floor:4.2f}x"
        text += f" (runner {r['job_seconds'] / floor:4.2f}x)"
    if r.get("figure") is not None:
        text += f"  figure {r['figure']:.1f}"
    return text + f"  load {r['load']:.2f}"


def calib_line(c: dict[str, Any], floor: float) -> str:
    total = c["start"] + c["calls"]
    return (
        f"  calib     {total:7.2f} s: start {c['start']:.2f} s (Django and the SDK imported) + "
        f"calls {c['calls']:.2f} s ({c['requests']} requests of {c['request_kb']} KB by the SDK "
        f"alone, {c['processes']} process(es) x {c['threads']} threads)  ratio "
        f"{total / floor:4.2f}x  load {c['load']:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=400, help="Agentic-MME tasks")
    parser.add_argument("--atp-items", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=WORKERS_DEFAULT)
    parser.add_argument("--latency", type=float, default=0.05, help="server seconds per reply")
    parser.add_argument("--runs", type=int, default=3, help="rounds; medians are printed")
    parser.add_argument("--database-url", default="", help="PostgreSQL (default: SQLite)")
    parser.add_argument("--child", choices=sorted(PHASES))
    parser.add_argument("--base-url", default="")
    args = parser.parse_args()
    if args.child:
        from _support import child_phase

        child_phase(PHASES, args, args.child)
        return
    server = ModelServer(args.latency)
    rounds: dict[str, list[dict[str, Any]]] = {"mme": [], "replay": [], "atp": []}
    floors: dict[str, list[float]] = {"mme": [], "atp": []}
    calibs: list[dict[str, Any]] = []
    where = "postgresql" if args.database_url else "sqlite"
    print(
        f"{where}: Agentic-MME {args.tasks} tasks, ATP-Bench {args.atp_items} items, "
        f"{args.workers} workers, model latency {args.latency * 1000:.0f} ms, {args.runs} round(s)"
    )
    try:
        for n in range(1, args.runs + 1):
            with tempfile.TemporaryDirectory() as tmp:
                if args.database_url:
                    fresh_postgres(args.database_url)
                    db = args.database_url
                else:
                    db = f"sqlite:///{Path(tmp) / 'evaluate.sqlite3'}"
                env = {
                    "DATABASE_URL": db,
                    "MEDIA_ROOT": str(Path(tmp) / "media"),
                    "DEBUG": "false",  # as a worker runs: no query log
                    "SECRET_KEY": "perf-" + "x9" * 30,
                    "ALLOWED_HOSTS": "localhost",
                }
                base_url = server.start()
                argv = [
                    "--base-url", base_url, "--tasks", str(args.tasks),
                    "--atp-items", str(args.atp_items), "--workers", str(args.workers),
                ]  # fmt: skip
                made = run_phase(__file__, "setup", argv, env)
                print(f"round {n}: {made['agentic-mme']} tasks, {made['atp']} ATP-Bench items")
                for phase in ("mme", "replay", "atp"):
                    if phase == "replay":
                        server.stop()
                    elif server.process is None:
                        server.start()
                    r = run_phase(__file__, phase, argv, env)
                    rounds[phase].append(r)
                    floor = None
                    if phase != "replay":
                        floor = r["calls_made"] * args.latency / args.workers
                        floors[phase].append(floor)
                    print(line(phase, r, floor, args.latency))
                calib = run_phase(__file__, "calibrate", argv, env)
                calibs.append(calib)
                print(calib_line(calib, floors["atp"][-1]))
                server.stop()
        print(f"medians of {args.runs} round(s):")
        for phase, label, target in (
            ("mme", "a. Agentic-MME", "<= 1.3x floor, peak <= 300 MB"),
            ("replay", "b. replay", "<= 30 s"),
            ("atp", "c. ATP-Bench", "<= 1.2x floor"),
        ):
            rs = rounds[phase]
            med = {
                k: statistics.median(r[k] for r in rs)
                for k in ("seconds", "job_seconds", "cpu", "peak_mb")
            }
            text = (
                f"  {label:15s} {med['seconds']:7.2f} s (runner {med['job_seconds']:6.2f} s)  "
                f"cpu {med['cpu']:6.1f} s  peak {med['peak_mb']:6.1f} MB"
            )
            if phase in floors:
                floor = statistics.median(floors[phase])
                text += f"  floor {floor:6.2f} s  ratio {med['seconds'] / floor:4.2f}x"
                text += f" (runner {med['job_seconds'] / floor:4.2f}x)"
            print(f"{text}   target {target}")
        start = statistics.median(c["start"] for c in calibs)
        calls = statistics.median(c["calls"] for c in calibs)
        floor = statistics.median(floors["atp"])
        print(
            f"  c. reachable   {start + calls:7.2f} s (start {start:.2f} s + calls {calls:.2f} s)"
            f"  ratio {(start + calls) / floor:4.2f}x   the SDK and the model server alone"
        )
        print(f"  load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
