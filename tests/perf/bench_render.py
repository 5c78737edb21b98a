"""Rendering speed (issue 11 "Speed"): 1,000 ATP-Bench answers with 4 tool calls each
(Reference, Code, Diffusion, Search) where Reference and Code are executed and Diffusion and
Search are placeholders (no provider configured); then the same job again (every answer
current, nothing executed); then the rendered answer page, timed in the server (Django's test
client, no network) with its query count.

    python tests/perf/bench_render.py                      # SQLite in a temporary folder
    python tests/perf/bench_render.py --database-url postgres://postgres@127.0.0.1:5432/bw_perf_render
    python tests/perf/bench_render.py --answers 200 --code-variants 50

Code runs in ``benchmark.sandbox`` (one forked process per distinct program, from a warm zygote
per CPU; BENCHWRIGHT_SANDBOX_ZYGOTE=0 for the one-shot jail)
when it is installed; otherwise the script says so and a fake runner draws a small PNG in
this process, so the figures then leave out the cost of the sandbox's processes.
``--code-variants`` is how many distinct programs the answers hold (default: one per answer,
so none is shared; identical programs run once). Setup, each run and the page phase run in
fresh processes, so the peak memory printed (max RSS) is the job's own. Prints figures and the
machine's load; asserts nothing about time (targets: first run <= 180 s, peak <= 500 MB,
page <= 100 ms server time with a bounded number of queries).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

from _support import atp_project_with_people, child_phase, fresh_postgres, run_phase

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "perf render"
WORDS = [
    *("model", "image", "answer", "caption", "figure", "table", "retrieval", "encoder"),
    *("decoder", "layer", "score", "baseline", "dataset", "training", "ablation", "result"),
]
CODE = (
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    "values = [{a}, {b}, {c}, {d}]\nfig, ax = plt.subplots(figsize=(3, 2), dpi=60)\n"
    "ax.bar(range(4), values)\nax.set_title('variant {n}')\nfig.savefig('chart.png')\n"
)


def tool(name: str, **params: object) -> str:
    payload = {"tool_name": name, "description": f"{name} figure", "params": params}
    return "<tool>" + json.dumps(payload) + "</tool>"


def sentence(rng: object, n: int) -> str:
    import random

    assert isinstance(rng, random.Random)
    out, size = [], 0
    while size < n:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n].rstrip() + "."


def sandbox_available() -> bool:
    try:
        import benchmark.sandbox  # noqa: F401
    except ImportError:
        return False
    return True


def sandbox_mode(zygotes: dict) -> str:
    if not zygotes["count"]:
        return "one-shot jail per program"
    return f"{zygotes['count']} warm zygotes, each peak RSS <= {zygotes['peak_mb']:.0f} MB"


def install_fake_sandbox() -> None:
    """Without benchmark.sandbox: a runner that draws a small PNG in this process."""
    import hashlib
    import io
    from types import SimpleNamespace

    from PIL import Image

    from benchmark.rendering import SandboxCodeRunner
    from review.answer_rendering import services

    def run(code: str, *, limits: object = None) -> SimpleNamespace:
        digest = hashlib.sha256(code.encode()).digest()
        img = Image.new("RGB", (180, 120), (digest[0], digest[1], digest[2]))
        out = io.BytesIO()
        img.save(out, format="PNG")
        return SimpleNamespace(
            ok=True, images=[out.getvalue()], stdout="", stderr="", reason="", kind=""
        )

    services.code_runner = lambda: SandboxCodeRunner(run)  # type: ignore[assignment]


# --------------------------------------------------------------------------- phases


def setup(args: argparse.Namespace) -> dict:
    import random

    from benchmark.images.services import image_store
    from benchmark.models import Item, Origin, Response

    project, reviewer, _ = atp_project_with_people(PROJECT)
    from PIL import Image as PILImage

    docs = []
    for n in range(8):
        import io

        img = PILImage.new("RGB", (320, 200), (n * 30, 80, 160))
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        docs.append(image_store(data=buf.getvalue(), name=f"doc{n}.png", project=project))
    rng = random.Random(11)
    items = Item.objects.bulk_create(
        Item(
            project=project,
            external_id=f"q{i:05d}",
            position=i,
            query=sentence(rng, 200),
            image_refs=[
                {"sha256": docs[(i + k) % 8].sha256, "role": "document", "position": k}
                for k in range(3)
            ],
        )
        for i in range(args.answers)
    )
    variants = max(1, args.code_variants or args.answers)
    Response.objects.bulk_create(
        Response(
            item=item,
            key="model:perf-model",
            origin=Origin.MODEL,
            model_name="perf-model",
            position=1000,
            text="\n\n".join(
                [
                    sentence(rng, 600),
                    tool("Reference", img_index=i % 3),
                    sentence(rng, 400),
                    tool(
                        "Code",
                        code=CODE.format(
                            a=i % variants, b=3, c=(i % variants) % 7, d=2, n=i % variants
                        ),
                    ),
                    sentence(rng, 400),
                    tool("Diffusion", prompt=sentence(rng, 120)),
                    tool("Search", query=sentence(rng, 30)),
                    sentence(rng, 300),
                ]
            ),
        )
        for i, item in enumerate(items)
    )
    return {"answers": len(items), "code_variants": variants}


def render(args: argparse.Namespace) -> dict:
    from benchmark.models import Project
    from review.answer_rendering import services

    real = sandbox_available()
    if not real:
        install_fake_sandbox()
    project = Project.objects.get(name=PROJECT)
    start = time.perf_counter()
    job = services.rendering_start(project=project, user=None, enqueue=False)
    job = services.rendering_execute(job=job)
    seconds = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    zygotes = zygote_usage() if real else {"count": 0, "cpu": 0.0, "peak_mb": 0.0}
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    if job.status != "succeeded":
        raise SystemExit(f"the rendering job {job.status}: {job.error}")
    return {
        "seconds": round(seconds, 2),
        "peak_mb": round(usage.ru_maxrss / 1024, 1),
        "cpu": round(usage.ru_utime + usage.ru_stime, 1),
        "children_cpu": round(children.ru_utime + children.ru_stime + zygotes["cpu"], 1),
        "zygotes": zygotes,
        "result": job.result,
        "sandbox": real,
    }


def zygote_usage() -> dict:
    """The sandbox's warm zygotes (benchmark.sandbox.run): how many, the CPU time of them and
    of every program they ran (their reaped children), and the largest one's peak RSS; then
    stop them. Zero when the one-shot jail ran the programs (its CPU is in RUSAGE_CHILDREN)."""
    from benchmark.sandbox.run import shutdown, zygote_pids

    tick = os.sysconf("SC_CLK_TCK")
    cpu, peak, pids = 0.0, 0.0, zygote_pids()
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu += sum(int(f) for f in fields[11:15]) / tick
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peak = max(peak, int(line.split()[1]) / 1024)
    shutdown()
    return {"count": len(pids), "cpu": round(cpu, 1), "peak_mb": round(peak, 1)}


def page(args: argparse.Namespace) -> dict:
    from django.conf import settings
    from django.db import connection, reset_queries
    from django.test import Client

    # No collectstatic in a throwaway folder: plain static URLs instead of the manifest.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    from django.test.utils import CaptureQueriesContext

    from benchmark.models import Response
    from benchmark.typing import User

    client = Client()
    client.force_login(User.objects.get(username="perf-reviewer"))
    ids = list(Response.objects.order_by("id").values_list("pk", flat=True)[: args.pages])
    start = time.perf_counter()
    assert client.get(f"/answer-rendering/{ids[0]}/").status_code == 200
    first_ms = (time.perf_counter() - start) * 1000  # templates compiled, modules imported
    times, queries = [], []
    for pk in ids:
        reset_queries()
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            response = client.get(f"/answer-rendering/{pk}/")
            times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, response.status_code
        queries.append(len(captured.captured_queries))
    return {
        "pages": len(ids),
        "first_ms": round(first_ms, 1),
        "median_ms": round(statistics.median(times), 1),
        "max_ms": round(max(times), 1),
        "queries": sorted(set(queries)),
    }


def run_child(phase: str, env: dict[str, str], args: argparse.Namespace) -> dict:
    return run_phase(
        __file__,
        phase,
        [
            "--answers",
            str(args.answers),
            "--code-variants",
            str(args.code_variants),
            "--pages",
            str(args.pages),
        ],
        env,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=1000)
    parser.add_argument(
        "--code-variants", type=int, default=0, help="distinct programs (0: one per answer)"
    )
    parser.add_argument("--pages", type=int, default=50, help="rendered pages to time")
    parser.add_argument("--database-url", default="", help="PostgreSQL (default: SQLite)")
    parser.add_argument("--child", choices=["setup", "run", "page"])
    args = parser.parse_args()
    if args.child:
        child_phase({"setup": setup, "run": render, "page": page}, args, args.child)
        return
    with tempfile.TemporaryDirectory() as tmp:
        if args.database_url:
            fresh_postgres(args.database_url)
            db, where = args.database_url, "postgresql"
        else:
            db, where = f"sqlite:///{Path(tmp) / 'render.sqlite3'}", "sqlite"
        env = {
            "DATABASE_URL": db,
            "MEDIA_ROOT": str(Path(tmp) / "media"),
            "DEBUG": "false",
            "SECRET_KEY": "perf-" + "x9" * 30,
            "ALLOWED_HOSTS": "localhost,testserver",
            "SECURE_SSL_REDIRECT": "false",
            "BENCHWRIGHT_IMAGE_GEN_BASE_URL": "",
            "BENCHWRIGHT_IMAGE_EDIT_BASE_URL": "",
            "BENCHWRIGHT_IMAGE_SEARCH_URL": "",
        }
        made = run_child("setup", env, args)
        print(
            f"{where}: {made['answers']} answers x 4 calls (Reference and Code executed, "
            f"Diffusion and Search placeholders), {made['code_variants']} distinct programs, "
            f"{os.cpu_count()} CPUs"
        )
        for label in ("first run", "again (current)"):
            r = run_child("run", env, args)
            if label == "first run":
                print(
                    f"  code: benchmark.sandbox ({sandbox_mode(r['zygotes'])}, one process "
                    "per distinct program)"
                    if r["sandbox"]
                    else "  code: NO benchmark.sandbox here: a fake in-process runner draws the "
                    "figures, so these figures leave out the sandbox's processes"
                )
            res = r["result"]
            c = res["calls"]
            print(
                f"  {label:16s} {r['seconds']:7.2f} s  peak {r['peak_mb']:6.1f} MB  "
                f"cpu {r['cpu']:.1f} s (+{r['children_cpu']:.1f} s in programs)  "
                f"answers {res['rendered']} rendered, {res['unchanged']} unchanged; calls "
                f"{c['rendered']} rendered, {c['placeholder']} placeholders, {c['failed']} "
                f"failed, {c['executed']} executed, {c['cached']} cached"
            )
        p = run_child("page", env, args)
        print(
            f"  rendered page    median {p['median_ms']:.1f} ms, max {p['max_ms']:.1f} ms over "
            f"{p['pages']} pages (server time, test client; the very first request, which "
            f"compiles the templates, {p['first_ms']:.0f} ms); queries per page {p['queries']}"
        )
        print(f"  load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)")


if __name__ == "__main__":
    main()
