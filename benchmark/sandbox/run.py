"""run_code: run a Python program in the jail (see _jail.py) and turn what came back into a
SandboxResult. Never raises for any program: a sandbox that cannot be set up answers
kind="unavailable" and the program is not run at all."""

import atexit
import json
import os
import shutil
import signal
import site
import socket
import struct
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from . import _jail
from .result import SandboxLimits, SandboxResult

HERE = Path(__file__).resolve().parent
JAIL = HERE / "_jail.py"
ZYGOTE = HERE / "_zygote.py"
RUNNER = HERE / "_runner.py"
RUN_PREFIX = "benchwright-sandbox-"
MAX_CODE_BYTES = 1024 * 1024
# Input files (run_code's `files`): their total size, their number, a name's length and depth.
MAX_FILES_BYTES = _jail.MAX_INPUT_BYTES
MAX_FILES = _jail.MAX_INPUT_FILES
MAX_FILE_NAME_BYTES = _jail.MAX_INPUT_NAME_BYTES
MAX_FILE_DEPTH = _jail.MAX_INPUT_DEPTH
# Extra seconds the server grants the jail beyond the wall-clock limit before it kills the jail's
# whole process group itself (the jail enforces the limit; this is for a jail that hangs).
JAIL_GRACE_SECONDS = 10.0
MAX_IMAGE_PIXELS = 40_000_000
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

LIBRARY_DIRS = ("/lib", "/lib64", "/lib32", "/usr/lib", "/usr/lib64", "/usr/lib32")
READ_ONLY_FILES = ("/etc/ld.so.cache", "/dev/zero", "/dev/urandom", "/dev/random")
READ_WRITE_FILES = ("/dev/null",)

RUNNER_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/sandbox/work",
    "TMPDIR": "/sandbox/work",
    "MPLCONFIGDIR": "/sandbox/mpl",
    "MPLBACKEND": "Agg",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
}


def interpreter_paths() -> list[str]:
    """The interpreter, its standard library and its site-packages: what the sandbox may read
    besides the shared-library directories. Not sys.path: an editable install would add the
    project's own folder, settings and all."""
    paths = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    paths.update(sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib"))
    paths.update(getattr(site, "getsitepackages", list)())
    paths.add(os.path.dirname(os.path.realpath(sys.executable)))
    return sorted(p for p in paths if p and os.path.isdir(p))


def _base_config() -> dict[str, Any]:
    return {
        "python": sys.executable,
        "read_only": interpreter_paths() + list(LIBRARY_DIRS) + list(READ_ONLY_FILES),
        "read_write": list(READ_WRITE_FILES),
        "env": RUNNER_ENV,
    }


def _limits_config(limits: SandboxLimits) -> dict[str, Any]:
    return {
        "wall_seconds": limits.wall_seconds,
        "cpu_seconds": limits.cpu_seconds,
        "memory_mb": limits.memory_mb,
        "max_processes": limits.max_processes,
        "max_image_bytes": limits.max_image_bytes,
        "max_images": limits.max_images,
        "workdir_mb": limits.workdir_mb,
        "max_output_bytes": limits.max_output_bytes,
    }


def _config(limits: SandboxLimits) -> dict[str, Any]:
    return _base_config() | _limits_config(limits)


class _Drain(threading.Thread):
    """Read a pipe to its end, keeping the first `limit` bytes and counting the rest."""

    def __init__(self, fd: int, limit: int) -> None:
        super().__init__(daemon=True)
        self.fd, self.limit = fd, limit
        self.kept = bytearray()
        self.total = 0

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 65536):
                self.total += len(chunk)
                room = self.limit - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
        except OSError:
            pass

    def text(self) -> str:
        text = self.kept.decode("utf-8", "replace")
        if self.total > len(self.kept):
            text += f"\n[output truncated: {self.total} bytes in all, first {self.limit} kept]"
        return text


class SandboxFilesError(ValueError):
    """Input files that cannot be given to a program; the message names the file."""


Files = list[tuple[str, bytes]]


def check_files(files: Mapping[str, bytes] | None) -> Files:
    """The input files as (name, contents) pairs, or SandboxFilesError naming the first bad one:
    a name that is not a relative path inside the working folder (absolute, with an empty,
    "." or ".." part, a control character such as NUL, longer than MAX_FILE_NAME_BYTES or
    deeper than MAX_FILE_DEPTH parts), a name that is also another file's folder, contents
    that are not bytes, more than MAX_FILES files or more than MAX_FILES_BYTES in all."""
    if files is None:
        return []
    if not isinstance(files, Mapping):
        raise SandboxFilesError("the input files must be a mapping of names to bytes")
    if len(files) > MAX_FILES:
        raise SandboxFilesError(f"{len(files)} input files, over the limit of {MAX_FILES}")
    pairs: Files = []
    for name, data in files.items():
        problem = _jail.input_name_problem(name)
        if problem:
            raise SandboxFilesError(f"input file name {name!r} {problem}")
        if not isinstance(data, bytes | bytearray | memoryview):
            raise SandboxFilesError(f"input file {name!r} is not bytes")
        pairs.append((name, bytes(data)))
    total = sum(len(data) for _, data in pairs)
    if total > MAX_FILES_BYTES:
        raise SandboxFilesError(
            f"the input files are {total:,} bytes in all, over the sandbox's limit of "
            f"{MAX_FILES_BYTES:,} bytes ({MAX_FILES_BYTES // (1024 * 1024)} MB)"
        )
    problem = _jail.inputs_problem([[name, len(data)] for name, data in pairs])
    if problem:
        raise SandboxFilesError(problem)
    return pairs


def run_code(
    code: str, *, limits: SandboxLimits | None = None, files: Mapping[str, bytes] | None = None
) -> SandboxResult:
    """Run `code` as a Python program in the sandbox; the figures it shows or saves are the
    result's images. `files` maps names relative to the working folder (``orig.png``,
    ``tool_images/a.png``) to contents, written there before the program starts (the program
    may read, change and delete them; unchanged, they are not among the result's images).
    Input files that cannot be given (see check_files) answer kind="error" naming the file,
    and nothing runs. See docs/reference/sandbox.md, for what the sandbox isolates."""
    limits = limits or SandboxLimits()
    if not isinstance(code, str):
        return SandboxResult(ok=False, kind="error", reason="the program is not text")
    data = code.encode("utf-8", "replace")
    if len(data) > MAX_CODE_BYTES:
        return SandboxResult(ok=False, kind="error", reason="the program is longer than 1 MB")
    try:
        inputs = check_files(files)
    except SandboxFilesError as exc:
        return SandboxResult(ok=False, kind="error", reason=str(exc))
    if not sys.platform.startswith("linux"):
        return SandboxResult(
            ok=False, kind="unavailable", reason="the sandbox needs Linux namespaces"
        )
    try:
        return _run(data, limits, inputs)
    except Exception as exc:  # the sandbox itself failed: say so, never raise to the renderer
        return SandboxResult(ok=False, kind="unavailable", reason=f"sandbox failed: {exc!r}")


def _run(program: bytes, limits: SandboxLimits, inputs: Files) -> SandboxResult:
    if zygote_enabled():
        result = _pool.run(program, limits, inputs)
        if result is not None:
            return result
    font_cache = _font_cache() if b"matplotlib" in program or b"pyplot" in program else {}
    return _run_in(program, limits, font_cache=font_cache, inputs=inputs)[0]


def _run_in(
    program: bytes,
    limits: SandboxLimits,
    *,
    font_cache: dict[str, bytes],
    keep_font_cache: bool = False,
    inputs: Files | None = None,
) -> tuple[SandboxResult, dict[str, bytes]]:
    run_dir = Path(tempfile.mkdtemp(prefix=RUN_PREFIX))
    try:
        (run_dir / "root").mkdir()
        (run_dir / "out").mkdir()
        (run_dir / "fontcache").mkdir()
        for name, data in font_cache.items():
            (run_dir / "fontcache" / name).write_bytes(data)
        (run_dir / "program.py").write_bytes(program)
        if inputs:  # the jail writes them into the working folder (_jail.write_inputs)
            (run_dir / "inputs.json").write_text(json.dumps([[n, len(d)] for n, d in inputs]))
            with open(run_dir / "inputs.bin", "wb") as fh:
                for _, data in inputs:
                    fh.write(data)
        shutil.copyfile(RUNNER, run_dir / "runner.py")
        config = _config(limits) | {"keep_font_cache": keep_font_cache}
        (run_dir / "config.json").write_text(json.dumps(config))
        result = _start_and_collect(run_dir, limits)
        kept = {}
        if keep_font_cache and result.kind == "no_figure":
            kept = {p.name: p.read_bytes() for p in (run_dir / "out").glob("fontlist-*.json")}
        return result, kept
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


_font_cache_lock = threading.Lock()
_font_cache_made: list[dict[str, bytes]] = []


def _font_cache() -> dict[str, bytes]:
    """matplotlib's font list, built once per server process by a fixed program in the sandbox
    (never taken from a user's run, which could plant a bad one); each run starts with a copy."""
    with _font_cache_lock:
        if not _font_cache_made:
            warm_up = b"import matplotlib.font_manager\n"
            _font_cache_made.append(
                _run_in(warm_up, SandboxLimits(), font_cache={}, keep_font_cache=True)[1]
            )
        return _font_cache_made[0]


def _start_and_collect(run_dir: Path, limits: SandboxLimits) -> SandboxResult:
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(JAIL), str(run_dir)],
            stdin=subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
            cwd=run_dir,
            env={"PATH": os.defpath, "LC_ALL": "C.UTF-8"},
            start_new_session=True,
            close_fds=True,
        )
    except BaseException:
        os.close(out_r)
        os.close(err_r)
        raise
    finally:
        os.close(out_w)
        os.close(err_w)
    drains = [_Drain(out_r, limits.max_output_bytes), _Drain(err_r, limits.max_output_bytes)]
    for drain in drains:
        drain.start()
    try:
        proc.wait(timeout=limits.wall_seconds + JAIL_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.wait()
    finally:
        for fd, drain in zip((out_r, err_r), drains, strict=True):
            drain.join(timeout=JAIL_GRACE_SECONDS)
            if not drain.is_alive():  # a pipe still held open is left to its thread
                os.close(fd)
    stdout, stderr = (d.text() for d in drains)
    return _result(run_dir, limits, stdout, stderr)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _png_size(data: bytes) -> tuple[int, int] | None:
    if not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR" or len(data) < 24:
        return None
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _valid_images(candidates: list[bytes]) -> list[bytes]:
    images = []
    for data in candidates:
        size = _png_size(data)
        if size and 0 < size[0] * size[1] <= MAX_IMAGE_PIXELS:
            images.append(data)
    return images


def _result(run_dir: Path, limits: SandboxLimits, stdout: str, stderr: str) -> SandboxResult:
    jail = _read_json(run_dir / "status.json")
    runner = _read_json(run_dir / "out" / "status.json")
    files = sorted((run_dir / "out").glob("img-*.png"))
    return _result_of(jail, runner, limits, stdout, stderr, lambda: [f.read_bytes() for f in files])


def _result_of(
    jail: dict[str, Any],
    runner: dict[str, Any],
    limits: SandboxLimits,
    stdout: str,
    stderr: str,
    candidates: Callable[[], list[bytes]],
) -> SandboxResult:
    kind, reason = _classify(jail, runner, limits, stderr)
    images = _valid_images(candidates()) if kind == "ok" else []
    if kind == "ok" and not images:
        kind, reason = "no_figure", "no figure produced"
    return SandboxResult(
        ok=kind == "ok",
        kind=kind,  # type: ignore[arg-type]
        reason=reason,
        images=images,
        stdout=stdout,
        stderr=stderr,
    )


def _classify(
    jail: dict[str, Any], runner: dict[str, Any], limits: SandboxLimits, stderr: str
) -> tuple[str, str]:
    if not jail:
        last = stderr.strip().splitlines()[-1:] or ["no report from the jail"]
        return "unavailable", f"sandbox failed: {last[0][:200]}"
    if jail.get("setup_error"):
        return "unavailable", f"sandbox could not be set up: {str(jail['setup_error'])[:300]}"
    if jail.get("timed_out"):
        return "timeout", f"timed out after {limits.wall_seconds:g} s"
    code = int(jail.get("exit_code", 1))
    cpu = float(jail.get("cpu_seconds", 0.0))
    runner_kind = runner.get("kind")
    cpu_killed = code in (-signal.SIGKILL, -signal.SIGXCPU) and cpu >= limits.cpu_seconds - 0.05
    if cpu_killed or runner_kind == "timeout":
        return "timeout", f"stopped: CPU time limit {limits.cpu_seconds} s"

    error = str(runner.get("error", ""))[:500]
    if runner_kind == "ok" and code == 0:
        return "ok", ""
    if runner_kind == "memory" or (runner_kind is None and "MemoryError" in stderr[-2000:]):
        return "memory", f"stopped: memory limit {limits.memory_mb} MB"
    forbidden = _forbidden(jail, runner_kind, error, code, limits)
    if forbidden:
        return "forbidden", forbidden
    if runner_kind == "error":
        return "error", f"exit code {code}: {error}"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        return "error", f"stopped by signal {name}"
    last = stderr.strip().splitlines()[-1:] or ["no output"]
    return "error", f"exit code {code}: {last[0][:300]}"


def _forbidden(
    jail: dict[str, Any], runner_kind: Any, error: str, code: int, limits: SandboxLimits
) -> str | None:
    """The reason when the program failed on something the sandbox does not allow: the
    runner's own finding (network, files, processes), a system call the filter refused (the
    jail's report names it), or a system call of another architecture (the filter kills)."""
    if runner_kind == "forbidden":
        return _forbidden_reason(error, limits)
    refused = jail.get("refused") or []
    if refused and _failed_on_refusal(runner_kind, error):
        return f"system call {str(refused[0])[:80]} is not allowed in the sandbox"
    if code == -signal.SIGSYS:
        return "system calls of another architecture are not allowed in the sandbox"
    return None


def _failed_on_refusal(runner_kind: Any, error: str) -> bool:
    """Whether a run in which the system call filter refused a call failed because of it: it
    ended with the refusal's error (EPERM), exited on purpose or died without a report; not a
    program that caught the refusal and failed later for a reason of its own."""
    if runner_kind != "error":
        return True
    return "PermissionError" in error or "[Errno 1]" in error or error.startswith("SystemExit")


def _forbidden_reason(error: str, limits: SandboxLimits) -> str:
    if error == "network":
        return "network is not available in the sandbox"
    if error == "processes":
        return f"process limit reached ({limits.max_processes} processes)"
    path = error.removeprefix("files:")
    return f"only the working folder is available in the sandbox, not {path}"


# --- The zygote: one warm sandbox process per CPU, forking one process per program ------------

ZYGOTE_ENV = "BENCHWRIGHT_SANDBOX_ZYGOTE"
ZYGOTE_START_SECONDS = 60.0
ZYGOTE_RETRY_SECONDS = 60.0
ZYGOTE_PREFIX = RUN_PREFIX + "zygote-"


def zygote_enabled() -> bool:
    """Programs run in a zygote (see _zygote.py) unless BENCHWRIGHT_SANDBOX_ZYGOTE=0; where a
    zygote cannot start, each program gets a one-shot jail (_jail.py) instead."""
    return os.environ.get(ZYGOTE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


class ZygoteUnavailable(Exception):
    pass


class _Broken(Exception):
    pass


def _send(sock: socket.socket, kind: bytes, payload: bytes) -> None:
    sock.sendall(struct.pack(">I", len(payload) + 1) + kind + payload)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise _Broken("the zygote closed its socket")
        data += chunk
    return bytes(data)


MAX_FRAME_BYTES = 64 * 1024 * 1024


def _result_frame_limit(limits: SandboxLimits, inputs: Files) -> int:
    """The most a run's result frame may hold: its images come out of the run's tmpfs (the
    working folder and the input files' room), plus stdout, stderr and the status."""
    room = limits.workdir_mb * 1024 * 1024 + _jail.inputs_room([[n, len(d)] for n, d in inputs])
    extra = 2 * limits.max_output_bytes + _jail.STATUS_BYTES + 1024 * 1024
    return max(MAX_FRAME_BYTES, room + extra)


def _recv(sock: socket.socket, limit: int = MAX_FRAME_BYTES) -> tuple[bytes, bytes]:
    (size,) = struct.unpack(">I", _recv_exact(sock, 4))
    if not 1 <= size <= limit:
        raise _Broken(f"bad frame from the zygote ({size} bytes)")
    body = _recv_exact(sock, size)
    return body[:1], body[1:]


class _Zygote:
    """The server's end of one zygote process. Not thread-safe: the pool lends it to one
    thread at a time."""

    def __init__(self) -> None:
        self.run_dir = Path(tempfile.mkdtemp(prefix=ZYGOTE_PREFIX))
        self.proc: subprocess.Popen[bytes] | None = None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock = ours
        try:
            (self.run_dir / "root").mkdir()
            (self.run_dir / "config.json").write_text(json.dumps(_base_config()))
            with open(self.run_dir / "zygote.log", "wb") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-I", str(ZYGOTE), str(self.run_dir), str(theirs.fileno())],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    cwd=self.run_dir,
                    env=dict(RUNNER_ENV),
                    start_new_session=True,
                    pass_fds=(theirs.fileno(),),
                )
            theirs.close()
            ours.settimeout(ZYGOTE_START_SECONDS)
            kind, payload = _recv(ours)
            hello = json.loads(payload) if kind == b"H" else {"setup_error": "no hello"}
        except (OSError, ValueError, _Broken) as exc:
            theirs.close()
            self.close()
            raise ZygoteUnavailable(f"sandbox failed: {exc!r}: {self._log()}") from exc
        if hello.get("setup_error"):
            self.close()
            raise ZygoteUnavailable(f"sandbox could not be set up: {hello['setup_error']}")
        self.mode = hello.get("mode")

    def _log(self) -> str:
        try:
            lines = (self.run_dir / "zygote.log").read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1][:300] if lines else ""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def run(self, program: bytes, limits: SandboxLimits, inputs: Files) -> SandboxResult:
        """One program; raises _Broken when the zygote misbehaves (it is then closed)."""
        try:
            self.sock.settimeout(limits.wall_seconds + JAIL_GRACE_SECONDS)
            _send(self.sock, b"Q", json.dumps(_limits_config(limits)).encode())
            _send(self.sock, b"P", program)
            _send(self.sock, b"F", json.dumps([[n, len(d)] for n, d in inputs]).encode())
            for _, data in inputs:  # unframed: the manager knows their sizes
                self.sock.sendall(data)
            kind, payload = _recv(self.sock, _result_frame_limit(limits, inputs))
            if kind == b"D":  # the manager died before it reported
                status = json.loads(payload).get("status")
                return SandboxResult(
                    ok=False, kind="unavailable", reason=f"sandbox failed: run ended ({status})"
                )
            if kind != b"R":
                raise _Broken(f"unexpected frame {kind!r}")
            done_kind, _ = _recv(self.sock)
            if done_kind != b"D":
                raise _Broken(f"unexpected frame {done_kind!r}")
        except (OSError, ValueError, _Broken) as exc:
            self.close()
            raise _Broken(repr(exc)) from exc
        return self._result(payload, limits)

    def _result(self, payload: bytes, limits: SandboxLimits) -> SandboxResult:
        (size,) = struct.unpack(">I", payload[:4])
        report = json.loads(payload[4 : 4 + size])
        blobs, at = [], 4 + size
        for length in report.pop("blobs", []):
            blobs.append(payload[at : at + length])
            at += length
        blobs += [b""] * (3 - len(blobs))
        stdout = _cut(blobs[0], report.get("stdout_total", 0), limits.max_output_bytes)
        stderr = _cut(blobs[1], report.get("stderr_total", 0), limits.max_output_bytes)
        try:
            runner = json.loads(blobs[2].decode("utf-8", "replace")) if blobs[2] else {}
        except ValueError:
            runner = {}
        runner = runner if isinstance(runner, dict) else {}
        return _result_of(report, runner, limits, stdout, stderr, lambda: blobs[3:])

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        if self.proc is not None:
            _kill_group(self.proc.pid)  # the zygote and a manager; a program dies with its manager
            try:
                self.proc.wait(timeout=JAIL_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        shutil.rmtree(self.run_dir, ignore_errors=True)


def _cut(kept: bytes, total: int, limit: int) -> str:
    text = kept.decode("utf-8", "replace")
    if total > len(kept):
        text += f"\n[output truncated: {total} bytes in all, first {limit} kept]"
    return text


class _Pool:
    """At most one zygote per CPU, each lent to one thread at a time; a broken one is closed
    and a new one started for the next program."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.idle: list[_Zygote] = []
        self.live: set[_Zygote] = set()
        self.starting = 0
        self.failed_at: float | None = None
        self.failure = ""

    def _acquire(self) -> _Zygote | None:
        with self.cond:
            while True:
                if self.failed_at is not None:
                    if time.monotonic() - self.failed_at < ZYGOTE_RETRY_SECONDS:
                        return None
                    self.failed_at = None
                while self.idle:
                    zygote = self.idle.pop()
                    if zygote.alive():
                        return zygote
                    self.live.discard(zygote)  # killed from outside while idle
                    zygote.close()
                if len(self.live) + self.starting < (os.cpu_count() or 1):
                    self.starting += 1
                    break
                self.cond.wait()
        try:
            zygote = _Zygote()
        except ZygoteUnavailable as exc:
            with self.cond:
                self.starting -= 1
                self.failed_at, self.failure = time.monotonic(), str(exc)
                self.cond.notify_all()
            return None
        with self.cond:
            self.starting -= 1
            self.live.add(zygote)
        return zygote

    def _release(self, zygote: _Zygote, *, broken: bool) -> None:
        with self.cond:
            if broken:
                self.live.discard(zygote)
            elif zygote in self.live:
                self.idle.append(zygote)
            self.cond.notify()

    def run(self, program: bytes, limits: SandboxLimits, inputs: Files) -> SandboxResult | None:
        """The result, or None when no zygote can start here (the caller runs a one-shot jail)."""
        for attempt in (1, 2):  # a zygote that broke (killed from outside) is replaced once
            zygote = self._acquire()
            if zygote is None:
                return None
            try:
                result = zygote.run(program, limits, inputs)
            except _Broken as exc:
                self._release(zygote, broken=True)
                if attempt == 2:
                    reason = f"sandbox failed: {exc}"
                    return SandboxResult(ok=False, kind="unavailable", reason=reason)
                continue
            except BaseException:
                zygote.close()
                self._release(zygote, broken=True)
                raise
            self._release(zygote, broken=False)
            return result
        return None  # not reached

    def pids(self) -> list[int]:
        with self.cond:
            return [z.pid for z in self.live if z.pid]

    def forget(self) -> None:
        """In a child forked from this process (a prefork worker): the zygotes are the
        parent's; drop our copies of their sockets, leave them running, start our own."""
        for zygote in self.live:
            zygote.sock.close()
        self.cond = threading.Condition()
        self.idle, self.live, self.starting = [], set(), 0

    def shutdown(self) -> None:
        with self.cond:
            zygotes, self.idle, self.live = list(self.live), [], set()
            self.failed_at = None
        for zygote in zygotes:
            zygote.close()


_pool = _Pool()
atexit.register(_pool.shutdown)
os.register_at_fork(after_in_child=_pool.forget)


def zygote_pids() -> list[int]:
    """Process ids of the zygotes running now (for tests and monitoring)."""
    return _pool.pids()


def shutdown() -> None:
    """Stop every zygote (and whatever runs in it); the next run_code starts new ones."""
    _pool.shutdown()
