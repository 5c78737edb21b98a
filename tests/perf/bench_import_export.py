"""Import and export speed for 10,000 ATP-Bench-shaped items, on SQLite and PostgreSQL.

    python tests/perf/bench_import_export.py            # both databases (PostgreSQL if it answers)
    python tests/perf/bench_import_export.py --db sqlite --items 2000
    python tests/perf/bench_import_export.py --repeat 5  # best of 5 (the machine may be busy)
    python tests/perf/bench_import_export.py --text prose  # real sentences, not a 23-word list

Each item has 2 documents of about 1,300 characters, 9 images referenced, and a 2,800-character
answer with 4 tool tags (about 60 MB of JSON for 10,000). Their text is words drawn from a list
of 23, or with ``--text prose`` passages of the ATP-Bench sample records (shared/data/atp),
which compress about as real prose does. Import and export each run in a fresh
process so their peak memory (max RSS, Django included) is measured separately; "stored" is
what the items and their answers take in the database. With ``--repeat``, each round starts
from a new database and the best figure of each phase is printed. Prints figures; asserts
nothing about time.
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
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PG_URL = os.environ.get("DATABASE_TEST_URL", "postgres://postgres@127.0.0.1:5432/benchwright_perf")
WORDS = [
    *("model", "image", "answer", "caption", "figure", "table", "retrieval", "encoder"),
    *("decoder", "layer", "score", "baseline", "dataset", "training", "ablation", "result"),
    *("method", "patch", "feature", "gate", "memory", "query", "context"),
]


def sentence(rng: random.Random, n: int) -> str:
    out, size = [], 0
    while size < n:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n].rstrip() + "."


def prose_from_seeds() -> Callable[[random.Random, int], str]:
    """A ``sentence`` that strings together passages of the ATP-Bench sample records (their
    documents, answers and queries), none twice in one value."""
    sys.path.insert(0, str(ROOT))
    from tests.shared_data import SHARED_DATA

    pool: list[str] = []
    with (SHARED_DATA / "atp" / "data.jsonl").open() as fh:
        for line in fh:
            record = json.loads(line)
            pool += [d["text"] for d in record["doc"]] + [record["gt"], record["query"]]

    def prose(rng: random.Random, n: int) -> str:
        out = ""
        for passage in rng.sample(pool, len(pool)):
            out += passage + " "
            if len(out) >= n:
                break
        return out[:n].rstrip() + "."

    return prose


def make_images(folder: Path) -> list[str]:
    from PIL import Image, ImageDraw

    (folder / "images").mkdir(parents=True, exist_ok=True)
    names = []
    for k in range(9):
        img = Image.new("RGB", (64, 48), (40 + 20 * k, 90, 160))
        ImageDraw.Draw(img).text((4, 16), f"img {k}", fill="white")
        name = f"images/img_{k}.png"
        img.save(folder / name)
        names.append(name)
    return names


def generate(path: Path, n: int, sentence: Callable[[random.Random, int], str] = sentence) -> None:
    rng = random.Random(7)
    images = make_images(path.parent)
    tools = [
        '<tool>{"tool_name": "Reference", "description": "figure", "params": {"img_index": %d}}</tool>',
        '<tool>{"tool_name": "Diffusion", "description": "scene", "params": {"prompt": "%s"}}</tool>',
        '<tool>{"tool_name": "Search", "description": "photo", "params": {"query": "%s"}}</tool>',
        '<tool>{"tool_name": "Edit", "description": "mark", "params": {"img_index": %d, "prompt": "circle it"}}</tool>',
    ]
    with path.open("w") as fh:
        for i in range(n):
            paras = [sentence(rng, 560) for _ in range(4)]
            tags = [
                tools[0] % rng.randrange(9),
                tools[1] % sentence(rng, 40),
                tools[2] % sentence(rng, 30),
                tools[3] % rng.randrange(9),
            ]
            gt = "\n\n".join(p + "\n\n" + t for p, t in zip(paras, tags, strict=True))
            record = {
                "trace_id": f"perf_{i:05d}",
                "query": sentence(rng, 180),
                "image_query": None,
                "doc": [
                    {"text": sentence(rng, 1300), "images": images[:5]},
                    {"text": sentence(rng, 1300), "images": images[5:]},
                ],
                "images": images,
                "gt": gt,
                "category": "Academic",
                "intent": "Framework",
            }
            fh.write(json.dumps(record) + "\n")


def child(args: argparse.Namespace) -> None:
    """Runs one phase in this process, with Django set up on the chosen database."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmark.settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    from benchmark.datasets.services import dataset_export, dataset_import
    from benchmark.models import Item, Project, Toolset

    if args.phase == "setup":
        call_command("migrate", verbosity=0)
        toolset, _ = Toolset.objects.get_or_create(name="atp")
        Project.objects.filter(name__in=["perf", "perf-web"]).delete()
        for name in ("perf", "perf-web"):
            Project.objects.create(
                name=name, kind="interleaved", tag_syntax="atp", data_format="atp", toolset=toolset
            )
        return
    if args.phase in ("web-import", "web-export"):
        web(args)
        return
    project = Project.objects.get(name="perf")
    cpu_start = cpu_seconds()
    start = time.perf_counter()
    if args.phase == "import":
        result = dataset_import(project=project, path=Path(args.file))
        detail = f"{result.items_created} items"
    else:
        out = Path(args.file).parent / "export" / "data.jsonl"
        dataset_export(project=project, out=out)
        detail = f"{out.stat().st_size / 1e6:.1f} MB"
    seconds = time.perf_counter() - start
    cpu = cpu_seconds() - cpu_start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "seconds": round(seconds, 3),
                "cpu": round(cpu, 3),
                "peak_mb": round(peak, 1),
                "detail": detail,
                "items": Item.objects.filter(project=project).count(),
                "stored_mb": round(stored_bytes() / 1e6, 1),
            }
        )
    )


def web(args: argparse.Namespace) -> None:
    """Through the pages, in this process (the test client's WSGI handler, no network; the
    URLconf and the views it imports are loaded first, untimed, as a serving process has):
    ``web-import`` times the upload POST of the data file (read from disk as a server reads
    the socket), whose import job runs in the request when jobs run in-process
    (CELERY_TASK_ALWAYS_EAGER, the default without a broker), until the job is done;
    ``web-export`` times the download of the export to its last byte, and checks it is the
    file ``dataset_export`` wrote (or the source: nothing was edited)."""
    import hashlib
    import shutil

    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.test.client import BOUNDARY, MULTIPART_CONTENT, ClientHandler, RequestFactory
    from django.urls import get_resolver

    from benchmark.models import Item, Job, Membership, Project

    get_resolver().url_patterns  # noqa: B018 - a server has loaded its views before (not timed)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Django and the views
    user, _ = get_user_model().objects.get_or_create(username="perf-admin")
    client = Client()
    client.force_login(user)
    cookie = "; ".join(f"{k}={v.value}" for k, v in client.cookies.items())
    handler = ClientHandler(enforce_csrf_checks=False)
    name = "perf-web" if args.phase == "web-import" else "perf"
    project = Project.objects.get(name=name)
    Membership.objects.get_or_create(project=project, user=user, defaults={"role": "admin"})
    if args.phase == "web-import":
        body = Path(args.file).parent.parent / "upload.multipart"
        with body.open("wb") as out, open(args.file, "rb") as src:
            out.write(
                f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; '
                f'filename="data.jsonl"\r\nContent-Type: application/octet-stream\r\n\r\n'.encode()
            )
            shutil.copyfileobj(src, out)
            out.write(f"\r\n--{BOUNDARY}--\r\n".encode())
        with body.open("rb") as payload:
            environ = RequestFactory()._base_environ(
                PATH_INFO=f"/projects/{project.pk}/datasets/import/",
                REQUEST_METHOD="POST",
                CONTENT_TYPE=MULTIPART_CONTENT,
                CONTENT_LENGTH=str(body.stat().st_size),
                HTTP_COOKIE=cookie,
                **{"wsgi.input": payload},
            )
            cpu_start = cpu_seconds()
            start = time.perf_counter()
            response = handler(environ)
            seconds = time.perf_counter() - start
            cpu = cpu_seconds() - cpu_start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        body.unlink()
        job = Job.objects.filter(project=project).latest("id")
        assert response.status_code in (200, 302), response.status_code
        assert job.status == "succeeded", job.error
        detail = (
            f"{Item.objects.filter(project=project).count()} items, job {job.status}, "
            f"{before:.0f} MB before the request"
        )
    else:
        environ = RequestFactory()._base_environ(
            PATH_INFO=f"/projects/{project.pk}/datasets/export/",
            REQUEST_METHOD="GET",
            HTTP_COOKIE=cookie,
        )
        digest = hashlib.sha256()
        cpu_start = cpu_seconds()
        start = time.perf_counter()
        response = handler(environ)
        size = 0
        for chunk in response.streaming_content:
            size += len(chunk)
            digest.update(chunk)
        response.close()
        seconds = time.perf_counter() - start
        cpu = cpu_seconds() - cpu_start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        exported = Path(args.file).parent / "export" / "data.jsonl"
        same = hashlib.sha256((exported if exported.exists() else Path(args.file)).read_bytes())
        detail = (
            f"{size / 1e6:.1f} MB, {type(response).__name__}, {before:.0f} MB before the request"
        )
        if digest.digest() != same.digest():
            detail += ", DIFFERS from dataset_export"
    figures = {"seconds": round(seconds, 3), "cpu": round(cpu, 3), "peak_mb": round(peak, 1)}
    print(json.dumps({**figures, "detail": detail}))


def cpu_seconds() -> float:
    """CPU time of this process so far (user and system): on a busy machine it moves far less
    than the wall clock."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def stored_bytes() -> int:
    """Bytes the item and response tables take (with their indexes and TOAST on PostgreSQL)."""
    from django.db import connection

    tables = ["benchmark_item", "benchmark_response"]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT sum(pg_total_relation_size(c)) FROM unnest(%s::regclass[]) AS c", [tables]
            )
            return int(cursor.fetchone()[0] or 0)
        try:  # the dbstat table is compiled into most SQLite builds
            cursor.execute(
                "SELECT sum(pgsize) FROM dbstat WHERE name IN (SELECT name FROM sqlite_master "
                "WHERE tbl_name IN (%s, %s))",
                tables,
            )
            return int(cursor.fetchone()[0] or 0)
        except Exception:  # noqa: BLE001
            return 0


def run_phase(phase: str, db_env: dict[str, str], file: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", phase, "--file", str(file)],
        env={**os.environ, **db_env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode:
        raise SystemExit(f"{phase} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.strip() else {}


def pg_available() -> bool:
    import urllib.parse

    import psycopg

    p = urllib.parse.urlparse(PG_URL)
    try:
        with psycopg.connect(
            host=p.hostname,
            port=p.port or 5432,
            user=p.username,
            dbname="postgres",
            autocommit=True,
            connect_timeout=3,
        ) as conn:
            name = p.path.lstrip("/")
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        return True
    except Exception as exc:  # noqa: BLE001
        print(f"PostgreSQL skipped: {exc}")
        return False


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the best is printed")
    parser.add_argument(
        "--text", choices=["words", "prose"], default="words", help="what the long strings hold"
    )
    parser.add_argument(
        "--child", choices=["setup", "import", "export", "web-import", "web-export"]
    )
    parser.add_argument("--file")
    args = parser.parse_args()
    if args.child:
        args.phase = args.child
        child(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        data = tmpdir / "data" / "data.jsonl"
        data.parent.mkdir()
        generate(data, args.items, prose_from_seeds() if args.text == "prose" else sentence)
        print(
            f"generated {args.items} items of {args.text}, {data.stat().st_size / 1e6:.1f} MB of JSON"
        )
        dbs = []
        if args.db in ("sqlite", "both"):
            dbs.append("sqlite")
        if args.db in ("postgres", "both") and pg_available():
            dbs.append("postgres")
        for name in dbs:
            rounds: list[tuple[dict, dict, dict]] = []
            for n in range(args.repeat):
                if name == "sqlite":
                    sqlite = tmpdir / f"perf-{n}.sqlite3"
                    env = {"DATABASE_URL": f"sqlite:///{sqlite}"}
                else:
                    pg_available()  # a new database
                    env = {"DATABASE_URL": PG_URL}
                env |= {"MEDIA_ROOT": str(tmpdir / f"media-{name}-{n}"), "DEBUG": "true"}
                run_phase("setup", env, data)
                imp = run_phase("import", env, data)
                exp = run_phase("export", env, data)
                again = run_phase("import", env, data)
                web_exp = run_phase("web-export", env, data)
                web_imp = run_phase("web-import", env, data)
                rounds.append((imp, exp, again, web_imp, web_exp))
                if name == "sqlite":
                    for path in tmpdir.glob(f"{sqlite.name}*"):
                        path.unlink()
            imp, exp, again, web_imp, web_exp = (
                min(r, key=lambda x: x["seconds"]) for r in zip(*rounds, strict=True)
            )
            source_mb = data.stat().st_size / 1e6
            print(
                f"{name:9s} import {imp['seconds']:.2f} s (cpu {imp.get('cpu', 0):.2f} s, peak {imp['peak_mb']:.0f} MB, "
                f"{imp['detail']}, stored {imp['stored_mb']:.1f} MB = "
                f"{imp['stored_mb'] / source_mb:.2f}x the source)  export "
                f"{exp['seconds']:.2f} s (cpu {exp.get('cpu', 0):.2f} s, peak {exp['peak_mb']:.0f} MB, {exp['detail']})  "
                f"re-import {again['seconds']:.2f} s, items {again['items']}"
            )
            print(
                f"{'':9s} web import (upload to job done) {web_imp['seconds']:.2f} s "
                f"(cpu {web_imp.get('cpu', 0):.2f} s, peak {web_imp['peak_mb']:.0f} MB, {web_imp['detail']})  web export (to the "
                f"last byte) {web_exp['seconds']:.2f} s (cpu {web_exp.get('cpu', 0):.2f} s, peak {web_exp['peak_mb']:.0f} MB, "
                f"{web_exp['detail']})"
            )
            if args.repeat > 1:
                labels = ("import", "export", "re-import", "web import", "web export")
                for i, label in enumerate(labels):
                    runs = ", ".join(f"{r[i]['seconds']:.2f}" for r in rounds)
                    print(f"{'':9s} {label} runs: {runs}")


if __name__ == "__main__":
    main()
