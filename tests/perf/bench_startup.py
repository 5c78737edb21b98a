"""Start-up cost of the command line and the server, whole processes, on SQLite.

    python tests/perf/bench_startup.py                     # 10,000 ATP items, best of 3
    python tests/perf/bench_startup.py --items 2000 --repeat 5
    python tests/perf/bench_startup.py --root /tmp/before --root .   # two checkouts, interleaved
    python tests/perf/bench_startup.py --compiled   # the checkout's bytecode compiled first

Prints, for each, wall time from spawn to exit, the CPU time (user + system) the process used,
and its peak memory (max RSS):

- ``manage.py check`` (the system checks, which load the whole URLconf);
- ``manage.py import_dataset`` of 10,000 ATP-Bench-shaped records (the file of
  bench_import_export.py) into an empty project;
- ``manage.py export_dataset`` of those records;
- the server: ``gunicorn benchmark.wsgi -w 1`` from spawn until the login page first answers 200.

Each figure is the best of ``--repeat`` runs (the machine may be busy; CPU time is steadier
than wall time there); all runs are printed too. With several ``--root``, the checkouts take
turns within each round, so a busy spell hits them alike. Each checkout gets its own database,
migrated outside the timings. Where PYTHONDONTWRITEBYTECODE is set (as on the development
machines), every process compiles the project's own modules again; ``--compiled`` writes their
bytecode first (``compileall``, into the checkout's ``__pycache__``), as an installed server
has it and as ``bin/run``, ``bin/test`` and ``bin/serve`` leave it (``bin/_env.sh``). Asserts
nothing about time.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_import_export import generate  # noqa: E402

SETUP = """
import django
django.setup()
from django.core.management import call_command
from benchmark.models import Project, Toolset
call_command("migrate", verbosity=0)
Project.objects.filter(name="perf").delete()
toolset, _ = Toolset.objects.get_or_create(name="atp")
Project.objects.create(
    name="perf", kind="interleaved", tag_syntax="atp", data_format="atp", toolset=toolset
)
"""

CLEAR = """
import django
django.setup()
from benchmark.models import Item, Project
Item.objects.filter(project__name="perf").delete()
"""


Figures = tuple[float, float, float]
"""Wall seconds, CPU seconds, peak RSS in MB."""


def timed(cmd: list[str], *, cwd: Path, env: dict[str, str]) -> Figures:
    """Wall seconds from spawn to exit, CPU seconds and peak RSS in MB, of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd[1:])} failed:\n{err[-3000:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_start(python: str, *, cwd: Path, env: dict[str, str]) -> Figures:
    """Seconds from spawning gunicorn until the login page answers 200; the CPU seconds of
    its master and worker by then, and the worker's peak RSS."""
    port = free_port()
    gunicorn = str(Path(python).parent / "gunicorn")
    cmd = [
        gunicorn,
        "benchmark.wsgi",
        "-b",
        f"127.0.0.1:{port}",
        "-w",
        "1",
        "--log-level",
        "warning",
    ]
    url = f"http://127.0.0.1:{port}/accounts/login/"
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise SystemExit(f"gunicorn exited:\n{err[-3000:]}")
            try:
                with urllib.request.urlopen(url, timeout=30) as resp:  # noqa: S310 - local
                    if resp.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.01)
        seconds = time.perf_counter() - start
        worker = worker_pid(proc.pid)
        return seconds, cpu_seconds(proc.pid) + cpu_seconds(worker), peak_rss(worker)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def worker_pid(master: int) -> int:
    """The gunicorn worker's process id (0 where there is none)."""
    try:
        return int(Path(f"/proc/{master}/task/{master}/children").read_text().split()[0])
    except (OSError, IndexError):
        return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process, from /proc (0 where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss(pid: int) -> float:
    """Peak RSS (MB) of a running process, from /proc (0 where there is none)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; the best is printed")
    parser.add_argument(
        "--root", type=Path, action="append", help="checkout to measure (default: this one)"
    )
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument(
        "--compiled", action="store_true", help="compile the checkout's bytecode before timing"
    )
    args = parser.parse_args()
    roots = [r.resolve() for r in args.root or [HERE.parents[1]]]
    python = args.python
    manage = [python, "manage.py"]
    labels = {
        "check": "manage.py check",
        "import": f"manage.py import_dataset ({args.items} ATP)",
        "export": f"manage.py export_dataset ({args.items} ATP)",
        "server": "gunicorn spawn -> first 200 (login page)",
    }
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        data = tmpdir / "data" / "data.jsonl"
        data.parent.mkdir()
        generate(data, args.items)
        print(f"{args.items} ATP items, {data.stat().st_size / 1e6:.1f} MB of JSON")
        envs = []
        for k, root in enumerate(roots):
            env = {
                **os.environ,
                "DATABASE_URL": f"sqlite:///{tmpdir / f'perf-{k}.sqlite3'}",
                "MEDIA_ROOT": str(tmpdir / f"media-{k}"),
                "DEBUG": "true",
                "DJANGO_SETTINGS_MODULE": "benchmark.settings",
            }
            subprocess.run([python, "-c", SETUP], cwd=root, env=env, check=True)
            if args.compiled:
                apps = ["benchmark", "annotation", "review", "manage.py"]
                subprocess.run([python, "-m", "compileall", "-q", *apps], cwd=root, check=True)
            envs.append(env)
        runs: list[dict[str, list[Figures]]] = [{key: [] for key in labels} for _ in roots]
        for n in range(args.repeat):
            for root, env, got in zip(roots, envs, runs, strict=True):
                subprocess.run([python, "-c", CLEAR], cwd=root, env=env, check=True)
                imp = [*manage, "import_dataset", "--format", "atp", "--project", "perf"]
                got["import"].append(timed([*imp, str(data)], cwd=root, env=env))
                out = tmpdir / f"export-{n}" / "data.jsonl"
                exp = [*manage, "export_dataset", "--format", "atp", "--project", "perf"]
                got["export"].append(timed([*exp, str(out)], cwd=root, env=env))
                got["check"].append(timed([*manage, "check"], cwd=root, env=env))
                got["server"].append(server_start(python, cwd=root, env=env))
        for root, got in zip(roots, runs, strict=True):
            how = "bytecode compiled" if args.compiled else "as the environment compiles"
            print(f"\n{root}  ({how}; best of {args.repeat}: wall, CPU user+sys, peak RSS)")
            for key, label in labels.items():
                wall = min(w for w, _, _ in got[key])
                cpu = min(c for _, c, _ in got[key])
                peak = max(m for _, _, m in got[key])
                all_runs = ", ".join(f"{w:.2f}" for w, _, _ in got[key])
                print(
                    f"  {label:42s} {wall:6.2f} s  cpu {cpu:5.2f} s  peak {peak:4.0f} MB"
                    f"   (wall runs: {all_runs})"
                )


if __name__ == "__main__":
    main()
