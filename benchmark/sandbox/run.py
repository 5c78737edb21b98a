"""run_code: run a Python program in the jail (see _jail.py) and turn what came back into a
SandboxResult. Never raises for any program: a sandbox that cannot be set up answers
kind="unavailable" and the program is not run at all."""

import json
import os
import shutil
import signal
import site
import struct
import subprocess
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path
from typing import Any

from .result import SandboxLimits, SandboxResult

HERE = Path(__file__).resolve().parent
JAIL = HERE / "_jail.py"
RUNNER = HERE / "_runner.py"
RUN_PREFIX = "benchwright-sandbox-"
MAX_CODE_BYTES = 1024 * 1024
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


def _config(limits: SandboxLimits) -> dict[str, Any]:
    return {
        "python": sys.executable,
        "read_only": interpreter_paths() + list(LIBRARY_DIRS) + list(READ_ONLY_FILES),
        "read_write": list(READ_WRITE_FILES),
        "wall_seconds": limits.wall_seconds,
        "cpu_seconds": limits.cpu_seconds,
        "memory_mb": limits.memory_mb,
        "max_processes": limits.max_processes,
        "max_image_bytes": limits.max_image_bytes,
        "max_images": limits.max_images,
        "workdir_mb": limits.workdir_mb,
        "env": RUNNER_ENV,
    }


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


def run_code(code: str, *, limits: SandboxLimits | None = None) -> SandboxResult:
    """Run `code` as a Python program in the sandbox; the figures it shows or saves are the
    result's images. See README, "Code execution sandbox", for what the sandbox isolates."""
    limits = limits or SandboxLimits()
    if not isinstance(code, str):
        return SandboxResult(ok=False, kind="error", reason="the program is not text")
    data = code.encode("utf-8", "replace")
    if len(data) > MAX_CODE_BYTES:
        return SandboxResult(ok=False, kind="error", reason="the program is longer than 1 MB")
    if not sys.platform.startswith("linux"):
        return SandboxResult(
            ok=False, kind="unavailable", reason="the sandbox needs Linux namespaces"
        )
    try:
        return _run(data, limits)
    except Exception as exc:  # the sandbox itself failed: say so, never raise to the renderer
        return SandboxResult(ok=False, kind="unavailable", reason=f"sandbox failed: {exc!r}")


def _run(program: bytes, limits: SandboxLimits) -> SandboxResult:
    font_cache = _font_cache() if b"matplotlib" in program or b"pyplot" in program else {}
    return _run_in(program, limits, font_cache=font_cache)[0]


def _run_in(
    program: bytes, limits: SandboxLimits, *, font_cache: dict[str, bytes], keep_font_cache=False
) -> tuple[SandboxResult, dict[str, bytes]]:
    run_dir = Path(tempfile.mkdtemp(prefix=RUN_PREFIX))
    try:
        (run_dir / "root").mkdir()
        (run_dir / "out").mkdir()
        (run_dir / "fontcache").mkdir()
        for name, data in font_cache.items():
            (run_dir / "fontcache" / name).write_bytes(data)
        (run_dir / "program.py").write_bytes(program)
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


def _images(run_dir: Path) -> list[bytes]:
    images = []
    for path in sorted((run_dir / "out").glob("img-*.png")):
        data = path.read_bytes()
        size = _png_size(data)
        if size and 0 < size[0] * size[1] <= MAX_IMAGE_PIXELS:
            images.append(data)
    return images


def _result(run_dir: Path, limits: SandboxLimits, stdout: str, stderr: str) -> SandboxResult:
    jail = _read_json(run_dir / "status.json")
    runner = _read_json(run_dir / "out" / "status.json")
    kind, reason = _classify(jail, runner, limits, stderr)
    images = _images(run_dir) if kind == "ok" else []
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
    if runner_kind == "forbidden":
        return "forbidden", _forbidden_reason(error, limits)
    if runner_kind == "error":
        return "error", f"exit code {code}: {error}"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        return "error", f"stopped by signal {name}"
    last = stderr.strip().splitlines()[-1:] or ["no output"]
    return "error", f"exit code {code}: {last[0][:300]}"


def _forbidden_reason(error: str, limits: SandboxLimits) -> str:
    if error == "network":
        return "network is not available in the sandbox"
    if error == "processes":
        return f"process limit reached ({limits.max_processes} processes)"
    path = error.removeprefix("files:")
    return f"only the working folder is available in the sandbox, not {path}"
