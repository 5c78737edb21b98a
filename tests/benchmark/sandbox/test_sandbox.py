"""The code sandbox (benchmark/sandbox): figures come back as PNG, and a program that reaches for
the network, the file system, more processes, more memory or more time is stopped and reported,
while the test process (standing in for the server) goes on unharmed."""

import ctypes
import errno
import io
import json
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from benchmark.sandbox import SandboxLimits, SandboxResult, _jail, run_code
from benchmark.sandbox.run import RUN_PREFIX, ZYGOTE_ENV, shutdown, zygote_pids
from tests.required import missing

pytestmark = pytest.mark.slow

FAST = SandboxLimits(wall_seconds=5.0, cpu_seconds=2, memory_mb=512)
REPO = Path(__file__).resolve().parents[3]
OWN_RUNS: list[str] = []


@pytest.fixture(scope="module", autouse=True, params=["zygote", "one-shot"])
def sandbox_mode(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test runs against both paths: the warm zygote (the default) and the one-shot jail
    (its fallback). Subprocesses started by a test inherit the choice through the environment."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ZYGOTE_ENV, "1" if request.param == "zygote" else "0")
        yield request.param
        shutdown()
    assert zygote_pids() == []


@pytest.fixture(scope="module", autouse=True)
def _sandbox_available(sandbox_mode: str) -> None:
    """Where the kernel refuses namespaces the sandbox answers "unavailable" (tested below); the
    other tests need a working one. CI must have it, so there they fail instead of skipping
    (tests/required.py)."""
    result = run_code("print('ready')", limits=FAST)
    if result.kind == "unavailable":
        missing(f"the sandbox is unavailable here: {result.reason}")


@pytest.fixture(autouse=True)
def _own_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Record the run folders this test makes (their names are in the jail's and the runner's
    command lines), so the checks below see only this test's runs."""
    make = tempfile.mkdtemp

    def mkdtemp(*args: Any, **kwargs: Any) -> str:
        path = make(*args, **kwargs)
        OWN_RUNS.append(os.path.basename(path))
        return path

    OWN_RUNS.clear()
    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process now."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[int(entry.name)] = (int(stat[1]), cmdline)
    return found


def _descends(pid: int, ancestors: set[int], procs: dict[int, tuple[int, str]]) -> bool:
    seen = set()
    while pid in procs and pid not in seen:
        seen.add(pid)
        pid = procs[pid][0]
        if pid in ancestors:
            return True
    return False


def sandbox_processes() -> list[str]:
    """Command lines of every process still running for one of this test's runs: one-shot
    jails (their run folder is in the command line) and anything below a zygote (a zygote
    waits for each run's manager before it answers, so after a run there is none)."""
    zygotes = set(zygote_pids())
    assert OWN_RUNS or zygotes, "no run recorded"
    procs = _processes()
    found = []
    for pid, (_, cmdline) in procs.items():
        if pid in zygotes:
            continue
        if any(name in cmdline for name in OWN_RUNS) or _descends(pid, zygotes, procs):
            found.append(f"{pid}: {cmdline[:120]}")
    return found


def png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "PNG"
        return image.size


# --- Figures ----------------------------------------------------------------------------


def test_a_shown_plot_becomes_one_png_image():
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [2, 4, 1])\nplt.show()\n"
    result = run_code(code, limits=FAST)
    assert (result.ok, result.kind, result.reason) == (True, "ok", "")
    assert len(result.images) == 1
    assert png_size(result.images[0]) == (640, 480)


def test_a_saved_figure_is_the_image_once():
    code = (
        "import matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots(figsize=(4, 3), dpi=50)\n"
        "ax.bar(['a', 'b'], [3, 5])\n"
        "plt.savefig('x.png')\n"
        "print('saved')\n"
    )
    result = run_code(code, limits=FAST)
    assert result.kind == "ok", result.reason
    assert [png_size(i) for i in result.images] == [(200, 150)]
    assert result.stdout == "saved\n"


def test_figures_come_in_the_order_shown_or_saved_and_an_open_one_is_used_when_nothing_else():
    code = (
        "import matplotlib.pyplot as plt\n"
        "plt.figure(figsize=(2, 2), dpi=50); plt.plot([1, 2]); plt.show()\n"
        "plt.figure(figsize=(3, 2), dpi=50); plt.plot([2, 1]); plt.savefig('b.png')\n"
        "plt.figure(figsize=(4, 2), dpi=50); plt.plot([1, 1]); plt.show()\n"
    )
    result = run_code(code, limits=FAST)
    assert [png_size(i) for i in result.images] == [(100, 100), (150, 100), (200, 100)]

    left_open = run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2])\n", limits=FAST)
    assert left_open.kind == "ok" and len(left_open.images) == 1


def test_print_output_is_captured_and_a_program_without_a_figure_says_so():
    result = run_code("print('hello'); import sys; print('warn', file=sys.stderr)", limits=FAST)
    assert (result.ok, result.kind, result.reason) == (False, "no_figure", "no figure produced")
    assert result.stdout == "hello\n"
    assert result.stderr == "warn\n"


def test_an_exception_is_an_error_with_its_message_and_traceback():
    result = run_code("x = 1\nprint('before')\n1 / 0\n", limits=FAST)
    assert (result.ok, result.kind) == (False, "error")
    assert result.reason == "exit code 1: ZeroDivisionError: division by zero"
    assert result.stdout == "before\n"
    assert 'File "program.py", line 3' in result.stderr

    syntax = run_code("def (:\n", limits=FAST)
    assert (syntax.kind, syntax.reason) == ("error", "exit code 1: SyntaxError: invalid syntax")


def test_at_most_max_images_come_back_and_a_fake_png_is_dropped():
    code = (
        "import matplotlib.pyplot as plt\n"
        "for i in range(5):\n"
        "    plt.figure(figsize=(1, 1), dpi=20); plt.savefig(f'f{i}.png')\n"
        "open('zz-fake.png', 'w').write('not an image')\n"
    )
    result = run_code(code, limits=SandboxLimits(wall_seconds=5, cpu_seconds=2, max_images=3))
    assert len(result.images) == 3
    assert all(png_size(i) == (20, 20) for i in result.images)


# --- Network ----------------------------------------------------------------------------


def test_a_connection_to_a_server_on_this_machine_is_refused_and_never_arrives():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    try:
        code = (
            "import socket\n"
            f"s = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "s.sendall(b'hello from the sandbox')\n"
        )
        result = run_code(code, limits=FAST)
        assert (result.ok, result.kind) == (False, "forbidden")
        assert result.reason == "network is not available in the sandbox"
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing ever connected
    finally:
        listener.close()


def test_an_outside_address_and_name_lookups_are_unreachable():
    # A UDP connect only looks up a route (no packet is sent), so this proves the sandbox has no
    # route out without sending anything anywhere; 192.0.2.1 is a documentation address.
    udp = "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.connect(('192.0.2.1', 53))\n"
    result = run_code(udp, limits=FAST)
    assert result.kind == "forbidden" and "network" in result.reason

    lookup = run_code("import socket\nsocket.getaddrinfo('example.com', 80)\n", limits=FAST)
    assert lookup.kind == "forbidden" and "network" in lookup.reason


def test_only_a_down_loopback_interface_exists():
    code = "import socket\nprint(sorted(name for _, name in socket.if_nameindex()))\n"
    result = run_code(code, limits=FAST)
    assert result.stdout == "['lo']\n"


# --- File system ------------------------------------------------------------------------


def test_etc_passwd_cannot_be_read_and_never_appears_in_the_result():
    secret_line = Path("/etc/passwd").read_text().splitlines()[0]
    code = (
        "import os\n"
        "for path in ['/etc/passwd', '../../../etc/passwd', '/proc/self/root/etc/passwd']:\n"
        "    try:\n"
        "        print(open(path).read())\n"
        "    except OSError as exc:\n"
        "        print('refused', type(exc).__name__)\n"
        "print(open('/etc/passwd').read())\n"
    )
    result = run_code(code, limits=FAST)
    assert result.kind == "forbidden"
    assert result.reason == "only the working folder is available in the sandbox, not /etc/passwd"
    assert result.stdout.count("refused") == 3
    for text in (result.stdout, result.stderr, result.reason):
        assert secret_line not in text and "root:" not in text


def test_the_project_the_home_folder_and_the_root_folder_are_not_readable():
    targets = [str(REPO / "benchmark" / "settings.py"), str(REPO), "/root", "/", "/etc", "/tmp"]
    code = (
        "import os\n"
        f"for path in {targets!r}:\n"
        "    try:\n"
        "        print('READ', path, os.listdir(path) if os.path.isdir(path) else open(path).read(20))\n"
        "    except OSError as exc:\n"
        "        print('refused', path, type(exc).__name__)\n"
    )
    result = run_code(code, limits=FAST)
    assert "READ" not in result.stdout, result.stdout
    assert result.stdout.count("refused") == len(targets)


def test_nothing_outside_the_working_folder_can_be_written():
    escape = f"/tmp/sandbox-escape-{uuid.uuid4().hex}"
    site_file = Path(os.__file__).parent / f"sandbox-escape-{uuid.uuid4().hex}.py"
    code = (
        f"for path in [{escape!r}, {str(site_file)!r}, '/sandbox/escape', '/escape']:\n"
        "    try:\n"
        "        open(path, 'w').write('x'); print('WROTE', path)\n"
        "    except OSError as exc:\n"
        "        print('refused', type(exc).__name__)\n"
        "open('inside.txt', 'w').write('fine'); print(open('inside.txt').read())\n"
    )
    result = run_code(code, limits=FAST)
    assert "WROTE" not in result.stdout
    assert result.stdout.count("refused") == 4 and "fine" in result.stdout
    assert not Path(escape).exists() and not site_file.exists()


def test_a_link_planted_in_the_output_folder_is_not_followed():
    code = (
        "import os\n"
        "import matplotlib.pyplot as plt\n"
        "plt.plot([1, 2]); plt.show()\n"
        "os.symlink('/etc/passwd', '/sandbox/out/img-005.png')\n"
        "os.symlink('/etc/passwd', '/sandbox/out/status.json.x')\n"
    )
    result = run_code(code, limits=FAST)
    assert result.kind == "ok" and len(result.images) == 1
    assert all(b"root:" not in image for image in result.images)


def test_the_working_folder_is_empty_and_its_size_is_bounded():
    code = (
        "import os\n"
        "print(os.getcwd(), os.listdir('.'))\n"
        "with open('big', 'wb') as fh:\n"
        "    fh.write(b'x' * (3 * 1024 * 1024))\n"
    )
    result = run_code(code, limits=SandboxLimits(wall_seconds=5, cpu_seconds=2, workdir_mb=2))
    assert result.stdout.startswith("/sandbox/work []\n")
    assert result.kind == "error" and "No space left on device" in result.reason


# --- Processes, memory, time ------------------------------------------------------------


def test_a_fork_bomb_is_stopped_and_leaves_no_process_behind():
    result = run_code("import os\nwhile True:\n    os.fork()\n", limits=FAST)
    assert (result.ok, result.kind) == (False, "forbidden")
    assert result.reason == "process limit reached (8 processes)"
    assert sandbox_processes() == []
    assert subprocess.run(["true"], check=False).returncode == 0  # the server can still fork


def test_a_fork_bomb_that_ignores_errors_is_stopped_by_time():
    code = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    result = run_code(code, limits=SandboxLimits(wall_seconds=3, cpu_seconds=1))
    assert result.kind == "timeout"
    assert sandbox_processes() == []
    assert subprocess.run(["true"], check=False).returncode == 0


def test_a_child_that_leaves_the_session_dies_with_the_run():
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    time.sleep(600)\n"
        "print('parent done')\n"
    )
    result = run_code(code, limits=FAST)
    assert result.stdout == "parent done\n"
    assert sandbox_processes() == []


def test_unbounded_allocation_stops_at_the_memory_limit():
    code = "chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 1024 * 1024))\n"
    result = run_code(code, limits=SandboxLimits(wall_seconds=5, cpu_seconds=2, memory_mb=256))
    assert (result.ok, result.kind) == (False, "memory")
    assert result.reason == "stopped: memory limit 256 MB"


def test_an_endless_loop_is_stopped_at_the_cpu_limit():
    # The wall-clock limit is far away: on a loaded machine a busy loop gets only part of a
    # CPU, so 1 s of CPU time may take several seconds of wall time (plus Python's start).
    result = run_code(
        "while True:\n    pass\n", limits=SandboxLimits(wall_seconds=15, cpu_seconds=1)
    )
    assert (result.ok, result.kind) == (False, "timeout")
    assert result.reason == "stopped: CPU time limit 1 s"
    assert sandbox_processes() == []


def test_a_program_that_sleeps_is_stopped_at_the_wall_clock_limit():
    code = "import time\nprint('start', flush=True)\ntime.sleep(600)\n"
    result = run_code(code, limits=SandboxLimits(wall_seconds=1.5, cpu_seconds=1))
    assert (result.kind, result.reason) == ("timeout", "timed out after 1.5 s")
    assert result.stdout == "start\n"
    assert sandbox_processes() == []


def test_huge_output_is_cut_at_the_limit():
    code = "import sys\nfor _ in range(50):\n    sys.stdout.write('x' * 100_000)\nprint('end')\n"
    result = run_code(
        code, limits=SandboxLimits(wall_seconds=5, cpu_seconds=2, max_output_bytes=1000)
    )
    assert result.kind == "no_figure"
    assert result.stdout.startswith("x" * 1000 + "\n[output truncated: 5000004 bytes in all")
    assert len(result.stdout) < 1200


def test_the_server_environment_is_not_visible(monkeypatch):
    monkeypatch.setenv("BENCHWRIGHT_TEST_SECRET", "s3cr3t-value-42")
    result = run_code("import os\nprint(sorted(os.environ.items()))\n", limits=FAST)
    assert "s3cr3t-value-42" not in result.stdout
    assert "BENCHWRIGHT_TEST_SECRET" not in result.stdout
    assert "DJANGO_SETTINGS_MODULE" not in result.stdout
    assert "('HOME', '/sandbox/work')" in result.stdout


def test_the_program_runs_as_pid_one_of_its_own_namespace_without_privileges():
    code = "import os\nprint(os.getpid(), os.getuid() != 0, os.geteuid() != 0)\n"
    result = run_code(code, limits=FAST)
    assert result.stdout == "1 True True\n"


# --- The server is unharmed ---------------------------------------------------------------


def test_any_program_text_gives_a_result_and_never_raises():
    rng = random.Random(11)
    alphabet = "abc()[]{}:;'\"\\\n\t =+-*/#@!0123456789\x00\ud800é漢"
    programs = [
        "",
        "\x00",
        "\ud800",
        "import sys; sys.exit(3)",
        "raise SystemExit",
        "import os; os._exit(0)",
        "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
        "import ctypes; ctypes.string_at(0)",
        "import sys; sys.stdout.close(); sys.stderr.close()",
        "import os; os.close(1); os.close(2)",
        *["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(8)],
    ]
    for program in programs:
        result = run_code(program, limits=FAST)
        assert isinstance(result, SandboxResult)
        assert result.kind in {"ok", "error", "timeout", "memory", "forbidden", "no_figure"}
        assert result.ok == (result.kind == "ok")
    assert run_code(None, limits=FAST).kind == "error"  # type: ignore[arg-type]
    assert run_code("x" * (2 * 1024 * 1024), limits=FAST).kind == "error"


def test_runs_in_parallel_threads_do_not_disturb_each_other():
    results: dict[int, SandboxResult] = {}

    def work(n: int) -> None:
        results[n] = run_code(f"print({n} * 2)", limits=FAST)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {n: r.stdout for n, r in results.items()} == {0: "0\n", 1: "2\n", 2: "4\n"}


def test_after_all_of_that_the_server_is_unharmed():
    fds_before = len(os.listdir("/proc/self/fd"))
    cwd_before = os.getcwd()
    run_code("import os\nwhile True:\n    os.fork()\n", limits=FAST)
    run_code("x = bytearray(10**10)", limits=SandboxLimits(memory_mb=128, cpu_seconds=1))
    result = run_code("import matplotlib.pyplot as plt\nplt.plot([3, 1, 2])\n", limits=FAST)
    assert result.ok and len(result.images) == 1
    assert os.getcwd() == cwd_before
    assert len(os.listdir("/proc/self/fd")) == fds_before
    assert sandbox_processes() == []
    assert all(name.startswith(RUN_PREFIX) for name in OWN_RUNS)
    assert [p for p in os.listdir(tempfile.gettempdir()) if p in OWN_RUNS] == []


# --- One program cannot reach the next (the zygote forks every program from one process) ----

LEAVE_STATE = """
import builtins, ctypes, os, sys, time
import matplotlib
import matplotlib.pyplot as plt
matplotlib.rcParams['figure.figsize'] = (1, 1)
matplotlib.rcParams['figure.dpi'] = 10
plt.plot = None
sys.modules['json'] = None
sys.path.insert(0, '/sandbox/work')
os.environ['LEFT_BEHIND'] = 'yes'
builtins.LEFT_BEHIND = True
open('left.txt', 'w').write('x')
open('json.py', 'w').write('raise SystemExit(9)')
open('/sandbox/mpl/matplotlibrc', 'w').write('figure.dpi: 10')
libc = ctypes.CDLL(None)
print('shm', libc.shmget(4242, 4096, 0o1666))
if os.fork() == 0:
    os.setsid()
    time.sleep(600)
print('left')
"""

FIND_STATE = """
import builtins, ctypes, errno, os, sys
import matplotlib
import matplotlib.pyplot as plt
import json
mpl = [n for n in os.listdir('/sandbox/mpl') if not n.startswith('fontlist-')]  # one-shot
print(os.listdir('.'), mpl, sorted(os.listdir('/sandbox')))
print('env', 'LEFT_BEHIND' in os.environ, 'builtin', hasattr(builtins, 'LEFT_BEHIND'))
print('path', '/sandbox/work' in sys.path)
print('shm', ctypes.CDLL(None, use_errno=True).shmget(4242, 0, 0), ctypes.get_errno() == errno.ENOENT)
try:
    os.kill(2, 0)
    print('process 2 alive')
except ProcessLookupError:
    print('alone')
plt.plot([1, 2, 3])
plt.show()
"""


def test_a_program_leaves_nothing_for_the_next_one():
    """Modules, matplotlib settings, the environment, files, IPC objects and processes a
    program leaves behind are gone for the next program (run by the same zygote)."""
    left = run_code(LEAVE_STATE, limits=FAST)
    assert left.stdout.startswith("shm ") and "left" in left.stdout, left
    zygotes = zygote_pids()
    assert sandbox_processes() == []
    found = run_code(FIND_STATE, limits=FAST)
    assert zygote_pids() == zygotes  # the same zygote (one thread, so the idle one is reused)
    assert found.kind == "ok", (found.reason, found.stderr)
    assert found.stdout == (
        "[] [] ['mpl', 'out', 'work']\nenv False builtin False\npath False\nshm -1 True\nalone\n"
    )
    assert [png_size(i) for i in found.images] == [(640, 480)]


@pytest.mark.parametrize(
    "crash",
    [
        "import ctypes; ctypes.string_at(0)",
        "import os; os._exit(3)",
        "import os, signal; os.killpg(0, signal.SIGKILL)",
        "import os, signal; os.kill(-1, signal.SIGKILL)",
        "import os, signal; os.kill(os.getppid(), signal.SIGKILL)",
        "import os, signal; os.kill(0, signal.SIGKILL)",
        "import os; os.abort()",
    ],
)
def test_a_program_that_crashes_or_kills_around_it_harms_only_itself(crash, sandbox_mode):
    before = run_code("print('warm')", limits=FAST)
    assert before.stdout == "warm\n"
    zygotes = zygote_pids()
    result = run_code(crash, limits=FAST)
    assert result.kind in {"error", "no_figure"}, result
    assert zygote_pids() == zygotes
    after = run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2])\n", limits=FAST)
    assert after.kind == "ok" and len(after.images) == 1
    assert zygote_pids() == zygotes
    assert sandbox_processes() == []
    if sandbox_mode == "zygote":  # one thread in each zygote: nothing forked before its runs
        assert all(len(os.listdir(f"/proc/{pid}/task")) == 1 for pid in zygotes)


def test_a_program_has_no_capability_to_undo_its_jail():
    code = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "for name, call in [\n"
        "    ('chroot', lambda: os.chroot('/sandbox/work')),\n"
        "    ('setuid', lambda: os.setuid(0)),\n"
        "    ('unshare', lambda: os.unshare(os.CLONE_NEWNS) if hasattr(os, 'unshare') else 1 / 0),\n"
        "    ('umount', lambda: libc.umount2(b'/sandbox', 2) == 0 or 1 / 0),\n"
        "    ('mount', lambda: libc.mount(b'none', b'/sandbox/work', b'tmpfs', 0, None) == 0 or 1 / 0),\n"
        "]:\n"
        "    try:\n"
        "        call(); print('DID', name)\n"
        "    except (OSError, ZeroDivisionError):\n"
        "        print('refused', name)\n"
    )
    result = run_code(code, limits=FAST)
    assert "DID" not in result.stdout, result.stdout
    assert result.stdout.count("refused") == 5


def test_a_zygote_killed_from_outside_is_replaced(sandbox_mode):
    if sandbox_mode != "zygote":
        pytest.skip("only the zygote path keeps a process between runs")
    shutdown()  # earlier tests in threads may have left two
    assert run_code("print(1)", limits=FAST).stdout == "1\n"
    [old] = zygote_pids()
    os.kill(old, 9)
    result = run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2])\n", limits=FAST)
    assert result.kind == "ok" and len(result.images) == 1
    assert old not in zygote_pids() and len(zygote_pids()) == 1
    assert not Path(f"/proc/{old}").exists()  # reaped, not a zombie


def test_two_threads_get_their_own_figures_and_shutdown_leaves_no_process(sandbox_mode):
    results: dict[tuple[int, int], SandboxResult] = {}

    def work(thread: int) -> None:
        for n in range(4):
            size = 1 + thread + n
            code = (
                "import matplotlib.pyplot as plt\n"
                f"plt.figure(figsize=({size}, 1), dpi=20); plt.plot([{n}, {thread}]); plt.show()\n"
                f"print({thread}, {n})\n"
            )
            results[thread, n] = run_code(code, limits=FAST)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for (t, n), result in results.items():
        assert result.stdout == f"{t} {n}\n"
        assert [png_size(i) for i in result.images] == [((1 + t + n) * 20, 20)]
    zygotes = zygote_pids()
    assert len(zygotes) <= (os.cpu_count() or 1)
    procs = _processes()
    below = [pid for pid in procs if pid in zygotes or _descends(pid, set(zygotes), procs)]
    shutdown()
    assert zygote_pids() == []
    assert [pid for pid in below if Path(f"/proc/{pid}").exists()] == []
    assert [p for p in os.listdir(tempfile.gettempdir()) if p in OWN_RUNS] == []


def test_a_forked_server_process_starts_its_own_zygotes(sandbox_mode):
    """A prefork worker forked after its parent ran programs must not talk to the parent's
    zygotes (two processes on one socket would mix their answers)."""
    assert run_code("print('parent')", limits=FAST).stdout == "parent\n"
    parents = zygote_pids()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            inherited = zygote_pids()
            out = run_code("print('child')", limits=FAST).stdout
            mine = zygote_pids()
            shutdown()
            os.write(write, json.dumps([inherited, out, mine]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        inherited, out, mine = json.loads(fh.read())
    os.waitpid(pid, 0)
    assert (inherited, out) == ([], "child\n")
    assert not set(mine) & set(parents)
    assert zygote_pids() == parents
    assert run_code("print('parent again')", limits=FAST).stdout == "parent again\n"


# --- The system call filter (seccomp) -----------------------------------------------------

SYSCALL_PRELUDE = """
import ctypes, errno, os, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def call(number, *args):
    result = libc.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args))
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result

KEEP = []

def address(data):
    KEEP.append(ctypes.create_string_buffer(data))
    return ctypes.addressof(KEEP[-1])
"""


def syscall_number(name: str) -> int:
    """This machine's number of a system call (the program calls it through syscall(2)), -1
    for a name libseccomp does not know."""
    libseccomp = ctypes.CDLL("libseccomp.so.2")
    libseccomp.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    return int(libseccomp.seccomp_syscall_resolve_name(name.encode()))


REFUSED_PROGRAMS = {
    # name in the reason: the program (after SYSCALL_PRELUDE); it prints DID when the call
    # went through, so a refusal that is only a message shows in the test.
    "ptrace": "call({ptrace}, 0, 0, 0, 0)  # PTRACE_TRACEME\nprint('DID')",
    "process_vm_readv": (
        "class Iov(ctypes.Structure):\n"
        "    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]\n"
        "secret, copy = ctypes.create_string_buffer(b'secret'), ctypes.create_string_buffer(8)\n"
        "local, remote = Iov(ctypes.addressof(copy), 6), Iov(ctypes.addressof(secret), 6)\n"
        "call({process_vm_readv}, os.getpid(), ctypes.addressof(local), 1,"
        " ctypes.addressof(remote), 1, 0)\n"
        "print('DID', copy.value)"
    ),
    "unshare": "call({unshare}, 0x10000000)  # CLONE_NEWUSER\nprint('DID')",
    "clone with CLONE_NEWUSER": (
        "pid = call({clone}, 0x10000000 | 17, 0, 0, 0, 0)  # CLONE_NEWUSER | SIGCHLD\n"
        "if pid == 0:\n    os._exit(0)\nprint('DID')"
    ),
    "mount": (
        "if libc.mount(b'none', b'/sandbox/work', b'tmpfs', 0, None) != 0:\n"
        "    raise OSError(ctypes.get_errno(), 'mount')\nprint('DID')"
    ),
    "chroot": "os.chroot('/sandbox/work')\nprint('DID')",
    "io_uring_setup": (
        "params = ctypes.create_string_buffer(120)\n"
        "print('DID', call({io_uring_setup}, 8, ctypes.addressof(params)))"
    ),
    "bpf": "attr = ctypes.create_string_buffer(128)\ncall({bpf}, 0, ctypes.addressof(attr), 128)",
    "keyctl": "print('DID', call({keyctl}, 0, -3, 1))  # the session keyring's id",
    "add_key": (
        "call({add_key}, address(b'user'), address(b'bw'), address(b'x'), 1, -2)\nprint('DID')"
    ),
    "userfaultfd": "print('DID', call({userfaultfd}, 1 | os.O_CLOEXEC))  # user mode only",
    "perf_event_open": (
        "attr = ctypes.create_string_buffer(64)\n"
        "struct.pack_into('IIQ', attr, 0, 1, 64, 0)  # software event, cpu clock\n"
        "struct.pack_into('Q', attr, 40, 0x60)  # exclude kernel and hypervisor\n"
        "print('DID', call({perf_event_open}, ctypes.addressof(attr), 0, -1, -1, 0))"
    ),
    "socket (address family 38)": "socket.socket(38, socket.SOCK_SEQPACKET)  # AF_ALG\nprint('DID')",
    "personality (0x40000)": "call({personality}, 0x40000)  # ADDR_NO_RANDOMIZE\nprint('DID')",
}
NUMBERED = [
    *("ptrace", "process_vm_readv", "unshare", "clone", "io_uring_setup", "bpf", "keyctl"),
    *("add_key", "userfaultfd", "perf_event_open", "personality"),
]


@pytest.mark.parametrize("name", list(REFUSED_PROGRAMS))
def test_a_refused_system_call_fails_the_program_and_says_which(name):
    """The filter answers EPERM, the call does nothing, and the result names the call (the
    jail, or the zygote's manager, answers the filter's notifications)."""
    numbers = {n: syscall_number(n) for n in NUMBERED}
    program = SYSCALL_PRELUDE + REFUSED_PROGRAMS[name].format(**numbers) + "\n"
    result = run_code(program, limits=FAST)
    assert "DID" not in result.stdout, result.stdout
    assert (result.kind, result.reason) == (
        "forbidden",
        f"system call {name} is not allowed in the sandbox",
    ), result.stderr
    assert "PermissionError" in result.stderr
    assert sandbox_processes() == []


def test_every_refused_system_call_answers_eperm():
    """Each call on the refused list, with harmless arguments, is refused with EPERM; the
    first is the one the result names."""
    numbers = {name: syscall_number(name) for name in _jail.SYSCALLS_REFUSED}
    numbers = {name: number for name, number in numbers.items() if number >= 0}
    assert {"mount", "kexec_load", "init_module", "reboot", "swapon", "pivot_root"} <= set(numbers)
    program = (
        SYSCALL_PRELUDE
        + f"for name, number in {numbers!r}.items():\n"
        + "    try:\n"
        + "        call(number, 0, 0, 0, 0, 0, 0)\n"
        + "        print(name, 'DID')\n"
        + "    except OSError as exc:\n"
        + "        print(name, errno.errorcode[exc.errno])\n"
        + "raise SystemExit(1)\n"
    )
    result = run_code(program, limits=SandboxLimits(wall_seconds=10, cpu_seconds=3))
    answers = dict(line.split() for line in result.stdout.splitlines())
    assert answers == dict.fromkeys(numbers, "EPERM"), result.stdout
    first = next(iter(numbers))
    assert result.reason == f"system call {first} is not allowed in the sandbox"


def test_a_program_that_catches_a_refusal_goes_on_and_never_holds_the_filter_descriptor():
    code = SYSCALL_PRELUDE + (
        f"try:\n    call({syscall_number('ptrace')}, 0, 0, 0, 0)\n"
        "except PermissionError:\n    print('refused')\n"
        "def is_open(fd):\n"
        "    try:\n        os.fstat(fd)\n        return True\n"
        "    except OSError:\n        return False\n"
        "print([fd for fd in range(64) if is_open(fd)])\n"
        "import matplotlib.pyplot as plt\nplt.plot([1, 2]); plt.show()\n"
    )
    result = run_code(code, limits=FAST)
    assert (result.kind, result.stdout) == ("ok", "refused\n[0, 1, 2]\n"), result.stderr
    assert len(result.images) == 1

    unrelated = run_code(
        SYSCALL_PRELUDE
        + f"try:\n    call({syscall_number('ptrace')}, 0, 0, 0, 0)\n"
        + "except PermissionError:\n    pass\n1 / 0\n",
        limits=FAST,
    )
    assert (unrelated.kind, unrelated.reason) == (
        "error",
        "exit code 1: ZeroDivisionError: division by zero",
    )


NORMAL_PROGRAM = """
import concurrent.futures, ctypes, errno, io, os, subprocess, sys, threading
import numpy as np
from PIL import Image
import matplotlib.pyplot as plt

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
result = libc.syscall(ctypes.c_long({clone3}), None, ctypes.c_long(88))
print('clone3', result, errno.errorcode[ctypes.get_errno()])  # the C library falls back to clone

box = []
thread = threading.Thread(target=lambda: box.append(sum(range(10))))
thread.start(); thread.join()
with concurrent.futures.ThreadPoolExecutor(2) as pool:
    print('threads', box, list(pool.map(abs, [-1, -2, -3])))
child = subprocess.run([sys.executable, '-c', 'print(6 * 7)'], capture_output=True, text=True)
print('subprocess', child.returncode, child.stdout.strip())
pid = os.fork()
if pid == 0:
    os._exit(7)
print('fork', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
print('numpy', int(np.arange(10).sum()), round(float(np.linalg.det(np.eye(3) * 2)), 3))
Image.new('RGB', (30, 20), (200, 10, 10)).save('picture.png')
plt.plot(np.linspace(0, 1, 5), np.linspace(0, 1, 5) ** 2)
plt.show()
"""


def test_normal_programs_keep_working_under_the_filter():
    """Threads and processes (clone3 answers ENOSYS, so the C library uses clone), numpy,
    Pillow and matplotlib run as before."""
    result = run_code(NORMAL_PROGRAM.format(clone3=syscall_number("clone3")), limits=FAST)
    assert result.kind == "ok", (result.reason, result.stderr)
    assert result.stdout == (
        "clone3 -1 ENOSYS\nthreads [45] [1, 2, 3]\nsubprocess 0 42\nfork 7\nnumpy 45 8.0\n"
    )
    assert sorted(png_size(image) for image in result.images) == [(30, 20), (640, 480)]


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 machine code")
@pytest.mark.parametrize(
    "call",
    [
        # getpid through int 0x80: the 32-bit system call table
        "code = bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3])\n"
        "memory = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
        "memory.write(code)\n"
        "function = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(memory)))\n"
        "print('DID', function())\n",
        # getpid with the x32 bit
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('DID', libc.syscall(ctypes.c_long(0x40000000 | 39)))\n",
    ],
    ids=["int-0x80", "x32"],
)
def test_a_system_call_of_another_architecture_kills_the_program(call):
    result = run_code("import ctypes, mmap\n" + call, limits=FAST)
    assert "DID" not in result.stdout
    assert (result.kind, result.reason) == (
        "forbidden",
        "system calls of another architecture are not allowed in the sandbox",
    )
    assert sandbox_processes() == []


def test_without_user_notification_the_filter_answers_eperm_itself():
    """Where the kernel or libseccomp has no user notification (before Linux 5.0), the filter
    refuses the same calls with EPERM (the result then cannot name them)."""
    syscall_filter = _jail.SyscallFilter(notify=False)
    calls = {
        "unshare": (syscall_number("unshare"), _jail.CLONE_NEWUSER),
        "ptrace": (syscall_number("ptrace"), 0),
        "clone3": (syscall_number("clone3"), 0),
        "getppid": (syscall_number("getppid"), 0),
    }
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            _jail._prctl(_jail.PR_SET_NO_NEW_PRIVS, 1)
            listener = syscall_filter.load()
            answers: dict[str, Any] = {"listener": listener}
            for name, (number, arg) in calls.items():
                result = _jail.libc.syscall(ctypes.c_long(number), ctypes.c_long(arg), None)
                answers[name] = "ok" if result >= 0 else errno.errorcode[ctypes.get_errno()]
            os.write(write, json.dumps(answers).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        answers = json.loads(fh.read())
    os.waitpid(pid, 0)
    assert answers == {
        "listener": None,
        "unshare": "EPERM",
        "ptrace": "EPERM",
        "clone3": "ENOSYS",
        "getppid": "ok",
    }


# --- Where the sandbox cannot be made -----------------------------------------------------


def test_without_namespaces_the_sandbox_is_unavailable_and_runs_nothing():
    """In a user namespace without mappings the jail may not create namespaces of its own (as
    on a kernel or container that forbids them): nothing runs, and the result says so."""
    unshare = shutil.which("unshare")
    if not unshare or subprocess.run([unshare, "-U", "true"], check=False).returncode != 0:
        missing("unshare -U is not possible here")
    script = (
        "from benchmark.sandbox import run_code\n"
        "r = run_code(\"open('/tmp/ran', 'w'); print('RAN')\")\n"
        "print(r.kind, '|', r.reason, '|', r.stdout)\n"
    )
    out = subprocess.run(
        [unshare, "-U", sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    kind, reason, stdout = (part.strip() for part in out.split("|"))
    assert kind == "unavailable"
    assert reason.startswith("sandbox could not be set up: unshare")
    assert stdout == ""


def test_without_root_the_sandbox_uses_a_user_namespace():
    """Started as a non-root user (here uid 1000 of a user namespace), the jail makes a user
    namespace of its own; figures, the file-system view, the network rule and the system call
    filter are the same. (The process limit needs a real unprivileged user id, which this
    set-up cannot give.)"""
    unshare = shutil.which("unshare")
    probe = [unshare or "unshare", "--map-user=1000", "--map-group=1000", "true"]
    if not unshare or subprocess.run(probe, check=False).returncode != 0:
        missing("unshare --map-user is not possible here")
    script = (
        "import json\n"
        "from benchmark.sandbox import run_code\n"
        'code = ("import os, socket\\nprint(os.geteuid())\\n"\n'
        '        "import matplotlib.pyplot as plt\\nplt.plot([1, 2]); plt.show()\\n"\n'
        "        \"open('/etc/passwd')\\n\")\n"
        "r = run_code(code)\n"
        "net = run_code(\"import socket\\nsocket.create_connection(('127.0.0.1', 9))\")\n"
        "jail = run_code(\"import os\\nos.chroot('/sandbox/work')\")\n"
        "given = run_code(\"print(open('d/a.txt').read())\", files={'d/a.txt': b'hi'})\n"
        "print(json.dumps([r.kind, r.reason, r.stdout, len(r.images), net.kind, jail.reason,\n"
        "                  given.stdout]))\n"
    )
    out = subprocess.run(
        [*probe[:-1], sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    kind, reason, stdout, images, net_kind, jail, given = json.loads(out)
    assert (kind, stdout, images, net_kind) == ("forbidden", "1000\n", 0, "forbidden")
    assert given == "hi\n"  # input files belong to the namespace's user, who reads them
    assert jail == "system call chroot is not allowed in the sandbox"
    assert reason.endswith("not /etc/passwd")


def test_a_font_list_planted_by_a_program_does_not_reach_the_next_run():
    plant = (
        "import matplotlib.pyplot as plt, glob\n"
        "for path in glob.glob('/sandbox/mpl/fontlist-*.json'):\n"
        "    open(path, 'w').write('{broken')\n"
        "plt.plot([1, 2]); plt.show()\n"
    )
    run_code(plant, limits=FAST)
    result = run_code("import matplotlib.pyplot as plt\nplt.plot([2, 1])\n", limits=FAST)
    assert result.kind == "ok"
    assert "fontlist" not in result.stderr and "Traceback" not in result.stderr
