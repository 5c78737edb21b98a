"""The zygote: `python -I _zygote.py RUN_DIR SOCKET_FD`, started by run_code in a new session.

Standard library (plus _jail.py and _runner.py next to it) only, and never imported by the
server: it runs as its own process, and one zygote runs one program at a time. It
1. enters new mount, network, IPC and UTS namespaces (and a user namespace when it is not root),
   builds the same read-only root as the one-shot jail (_jail.bind_system), with an empty
   /sandbox mount point, chroots into it and scrubs its environment;
2. imports matplotlib (Agg), pyplot, numpy and Pillow and draws one fixed figure, so that each
   program starts with them loaded; it never runs a program itself;
3. for each request on the socket (a length-prefixed frame with the limits) forks a *manager*,
   which reads the program and its input files, enters new mount, pid and IPC namespaces of
   its own, mounts a fresh size-limited tmpfs on /sandbox (work/, out/, mpl/), writes the
   input files into work/ and forks the program process: pid 1 of the new pid namespace, in a session of its own,
   with the run's resource limits, a random unprivileged user id (when root) and no
   capabilities at all, no_new_privs, Landlock, the system call filter (built once in the
   zygote, _jail.SyscallFilter), every other file descriptor closed, stdout and stderr on
   pipes; it calls _runner.serve().
   The manager drains the pipes (bounded), answers the filter's notifications (EPERM, the name
   noted), kills the program at the wall-clock limit (pid 1's death kills the whole pid
   namespace), copies the results out of /sandbox/out without following links and writes one
   result frame; the zygote then writes a "done" frame.
What a program changes in memory (modules, matplotlib state, os.environ) dies with its process;
its file system (the tmpfs) dies with the manager's mount namespace; its processes die with its
pid namespace; its SysV IPC objects die with its IPC namespace. Nothing goes back to the zygote.

Frames: 4-byte big-endian length, one kind byte, payload. Server -> zygote: b"Q" JSON limits,
then b"P" program text, then b"F" JSON [[name, size], ...] of the input files followed by
their contents, unframed, in that order (the manager writes them into the fresh working
folder as it reads them). Zygote -> server: b"H" JSON hello (or setup_error) once at the start;
per request b"R" result (from the manager) then b"D" JSON {"status": manager exit code}.
"""

import ctypes
import io
import json
import os
import secrets
import select
import signal
import socket
import struct
import sys
import time
import types
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name: str, shown_as: str) -> types.ModuleType:
    """Load a sibling module under the file name the one-shot jail shows (tracebacks a program
    sees must not name the server's folders)."""
    with open(os.path.join(HERE, f"{name}.py"), encoding="utf-8") as fh:
        source = fh.read()
    module = types.ModuleType(name)
    module.__file__ = shown_as
    sys.modules[name] = module
    exec(compile(source, shown_as, "exec"), module.__dict__)
    return module


_jail = _load("_jail", "/.bw/jail.py")
_runner = _load("_runner", "/.bw/runner.py")

MAX_FRAME = 2 * 1024 * 1024
STATUS_BYTES = _jail.STATUS_BYTES
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
CAP_VERSION_3 = 0x20080522
SETTLE_SECONDS = 5.0  # after the program's pid 1 is gone, how long its pipes may stay open
libc = _jail.libc


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


# --- Frames -------------------------------------------------------------------------------


def send_frame(sock: socket.socket, kind: bytes, payload: bytes) -> None:
    sock.sendall(struct.pack(">I", len(payload) + 1) + kind + payload)


def recv_exact(sock: socket.socket, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def recv_frame(sock: socket.socket, limit: int = MAX_FRAME) -> tuple[bytes, bytes] | None:
    head = recv_exact(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">I", head)
    if not 1 <= size <= limit:
        raise ValueError(f"bad frame size {size}")
    body = recv_exact(sock, size)
    if body is None:
        return None
    return body[:1], body[1:]


# --- Setting up the zygote ----------------------------------------------------------------


def set_up(run_dir: str) -> dict[str, Any]:
    with open(os.path.join(run_dir, "config.json")) as fh:
        cfg = json.load(fh)
    abi = _jail.landlock_abi()
    syscall_filter = _jail.SyscallFilter()  # loaded by each program process, never here
    mode = _jail.enter_namespaces(pid=False)
    root = os.path.join(run_dir, "root")
    rules = _jail.bind_system(root, cfg)
    sandbox = os.path.join(root, "sandbox")
    os.mkdir(sandbox, 0o755)
    # The zygote's own /sandbox (for matplotlib's config folder while importing); every run
    # mounts a fresh tmpfs over it in a mount namespace of its own.
    _jail._mount("tmpfs", sandbox, "tmpfs", _jail.MS_NOSUID | _jail.MS_NODEV, "size=8m,mode=0700")
    for name in ("work", "out", "mpl"):
        os.mkdir(os.path.join(sandbox, name), 0o700)
    _jail._mount(
        None, root, None, _jail.MS_REMOUNT | _jail.MS_RDONLY | _jail.MS_NOSUID | _jail.MS_NODEV
    )
    os.chroot(root)
    os.chdir("/")
    os.environ.clear()
    os.environ.update(cfg["env"])
    rules.append(("/sandbox", _jail.SANDBOX_RIGHTS))
    return {"cfg": cfg, "abi": abi, "mode": mode, "rules": rules, "filter": syscall_filter}


def warm_up() -> None:
    """Import what the programs use and draw one fixed figure (loading fonts and the Agg
    renderer), then leave pyplot with no figure open."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy  # noqa: F401

    fig, ax = plt.subplots(figsize=(2, 2), dpi=30)
    ax.bar(range(3), [1, 3, 2])
    ax.plot([0, 1, 2], [1, 2, 1])
    ax.set_title("warm up")
    ax.set_xlabel("x")
    fig.savefig(io.BytesIO(), format="png")
    plt.close("all")
    try:
        from PIL import Image, PngImagePlugin  # noqa: F401
    except ImportError:
        pass
    import gc

    gc.collect()
    gc.freeze()  # keep the collector from writing to (and so copying) the shared pages


# --- One run ------------------------------------------------------------------------------


def drop_capabilities() -> None:
    """No capability in any set, and none to regain: needed in a user namespace, where the
    program process keeps the namespace owner's user id (there is no execve to clear them)."""
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0) < 0:
            break
    libc.prctl(PR_CAP_AMBIENT, ctypes.c_ulong(PR_CAP_AMBIENT_CLEAR_ALL), 0, 0, 0)


def clear_capabilities() -> None:
    header = _CapHeader(CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    _jail._check(libc.capset(ctypes.byref(header), data), "capset")
    libc.capget(ctypes.byref(header), data)
    if any(d.effective or d.permitted or d.inheritable for d in data):
        raise _jail.SetupError("could not drop capabilities")


def program_process(
    ctx: dict[str, Any],
    cfg: dict[str, Any],
    source: str,
    ids: tuple[int, int],
    fds: tuple[int, int, socket.socket],
) -> None:
    """Pid 1 of the run's pid namespace. Ends in os._exit."""
    out_w, err_w, channel = fds
    uid, gid = ids
    try:
        os.setsid()
        os.chdir("/sandbox/work")
        _jail._set_limits(cfg)
        drop_capabilities()
        if ctx["mode"] == "root":
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            if os.geteuid() == 0 or os.getegid() == 0:
                raise _jail.SetupError("could not drop root")
        clear_capabilities()
        _jail._prctl(_jail.PR_SET_NO_NEW_PRIVS, 1)
        _jail._prctl(_jail.PR_SET_PDEATHSIG, signal.SIGKILL)
        if ctx["abi"]:
            _jail.landlock_restrict(ctx["abi"], ctx["rules"])
        _jail.send_listener(channel, ctx["filter"].load())
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        keep = channel.fileno()
        os.closerange(3, keep)
        os.closerange(keep + 1, 65536)
        os.environ.clear()
        os.environ.update(cfg["env"])
    except BaseException as exc:
        message = str(exc) if isinstance(exc, _jail.SetupError) else repr(exc)
        _jail.send_setup_error(channel, message)
        os._exit(127)
    channel.close()
    # As `python -u`: what the program prints reaches the pipe at once.
    sys.stdout = io.TextIOWrapper(  # as python -u in C.UTF-8 gives the one-shot runner
        io.FileIO(1, "w", closefd=False), "utf-8", "surrogateescape", write_through=True
    )
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), "utf-8", "backslashreplace", write_through=True
    )
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), "utf-8", "surrogateescape")
    try:
        _runner.serve(source, int(cfg["max_images"]))
    except BaseException:  # an exception in a process the program forked, as python would
        import traceback

        traceback.print_exc()
    os._exit(1)


class _Output:
    """The program's stdout and stderr: the first `limit` bytes of each kept, all counted."""

    def __init__(self, fds: tuple[int, int], limit: int) -> None:
        self.fds, self.limit = fds, limit
        self.kept = {fd: bytearray() for fd in fds}
        self.total = dict.fromkeys(fds, 0)
        self.open = set(fds)

    def read(self, fd: int) -> None:
        chunk = os.read(fd, 65536)
        if not chunk:
            self.open.discard(fd)
            return
        self.total[fd] += len(chunk)
        room = self.limit - len(self.kept[fd])
        if room > 0:
            self.kept[fd] += chunk[:room]


def _drain(pid: int, output: _Output, deadline: float, refusals: Any) -> bool:
    """Read the program's output until it has ended and its pipes are closed, answering the
    filter's notifications (refusals: a _jail.Refusals); SIGKILL it at the deadline. True when
    it was killed for the wall-clock limit."""
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    for fd in (*output.fds, pidfd):
        poller.register(fd, select.POLLIN)
    if refusals.fd is not None:
        poller.register(refusals.fd, select.POLLIN)
    exited = timed_out = False
    settle: float | None = None  # once pid 1 is gone, its namespace's other processes die
    try:
        while output.open or not exited:
            now = time.monotonic()
            if not timed_out and not exited and now >= deadline:
                timed_out = True
                os.kill(pid, signal.SIGKILL)
            if exited and settle is None:
                settle = now + SETTLE_SECONDS
            if settle is not None and now >= settle:
                break
            wait = settle - now if settle is not None else 1.0 if timed_out else deadline - now
            for fd, event in poller.poll(max(0.0, wait) * 1000):
                if fd == pidfd:
                    exited = True
                    poller.unregister(fd)
                else:
                    _ready(fd, event, poller, output, refusals)
    finally:
        os.close(pidfd)
    return timed_out


def _ready(fd: int, event: int, poller: Any, output: _Output, refusals: Any) -> None:
    """A pipe of the program's with output, or the filter's descriptor with a refused call."""
    if fd == refusals.fd:
        if event & select.POLLIN:
            refusals.answer()
        else:  # every process under the filter is gone
            poller.unregister(fd)
        return
    output.read(fd)
    if fd not in output.open:
        poller.unregister(fd)


def _results(cfg: dict[str, Any]) -> tuple[bytes, list[bytes], list[str]]:
    """The runner's status and images from /sandbox/out: named regular files only, bounded
    sizes, no link followed; whatever the program left there is treated as hostile."""
    try:
        dir_fd = os.open("/sandbox/out", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return b"", [], ["no output folder"]
    skipped: list[str] = []
    images: list[bytes] = []
    try:
        status = _jail._read_bounded(dir_fd, "status.json", STATUS_BYTES) or b""
        names = sorted(n for n in os.listdir(dir_fd) if _jail.OUT_NAME.match(n))
        for name in names[: int(cfg["max_images"])]:
            data = _jail._read_bounded(dir_fd, name, int(cfg["max_image_bytes"]))
            if data is None:
                skipped.append(name)
            else:
                images.append(data)
    finally:
        os.close(dir_fd)
    return status, images, skipped


class _Reader:
    """The input files' contents, which follow their b"F" frame on the socket; `left` counts
    what has not been read yet (the manager reads it away when the run cannot start)."""

    def __init__(self, sock: socket.socket, total: int = 0) -> None:
        self.sock, self.left = sock, total

    def read(self, size: int) -> bytes:
        data = recv_exact(self.sock, size)
        if data is None:
            raise _jail.SetupError("the server closed the socket while sending the input files")
        self.left -= len(data)
        return data


def _fresh_sandbox(
    ctx: dict[str, Any], cfg: dict[str, Any], entries: list[list[Any]], reader: _Reader
) -> tuple[int, int]:
    """New mount, pid and IPC namespaces for this run and a fresh tmpfs on /sandbox, with the
    input files (their contents from `reader`, the socket) in its working folder; returns the
    run's user and group ids."""
    flags = _jail.CLONE_NEWNS | _jail.CLONE_NEWPID | _jail.CLONE_NEWIPC
    _jail._check(libc.unshare(ctypes.c_int(flags)), "unshare (mount, pid, IPC namespaces)")
    if ctx["mode"] == "root":
        uid = gid = 100_000 + secrets.randbelow(900_000)
    else:
        uid, gid = os.geteuid(), os.getegid()
    options = _jail.sandbox_options(cfg, entries)
    _jail._mount("tmpfs", "/sandbox", "tmpfs", _jail.MS_NOSUID | _jail.MS_NODEV, options)
    for name in ("work", "out", "mpl"):
        os.mkdir(os.path.join("/sandbox", name), 0o700)
        os.chown(os.path.join("/sandbox", name), uid, gid)
    _jail.write_inputs("/sandbox/work", entries, reader.read, (uid, gid))
    return uid, gid


def _input_entries(sock: socket.socket) -> list[list[Any]]:
    """The b"F" frame after the program: the input files' names and sizes."""
    frame = recv_frame(sock, _jail.INPUT_HEADER_BYTES)
    if frame is None or frame[0] != b"F":
        raise ValueError("no input files frame")
    entries = json.loads(frame[1])
    problem = _jail.inputs_problem(entries)
    if problem:
        raise ValueError(problem)  # the server checked them: the stream cannot be trusted
    return entries


def _receive(
    sock: socket.socket, ctx: dict[str, Any], cfg: dict[str, Any], report: dict[str, Any]
) -> tuple[str, tuple[int, int]] | None:
    """Read the program and its input files and make the run's fresh sandbox: the program
    text and the run's user and group ids, or None when the sandbox could not be made (the
    b"R" frame saying why is sent)."""
    frame = recv_frame(sock)
    if frame is None or frame[0] != b"P":
        raise ValueError("no program frame")
    source = frame[1].decode("utf-8", "replace")
    entries = _input_entries(sock)
    reader = _Reader(sock, sum(size for _, size in entries))
    try:
        ids = _fresh_sandbox(ctx, cfg, entries, reader)
    except Exception as exc:
        report["setup_error"] = str(exc) if isinstance(exc, _jail.SetupError) else repr(exc)
        while reader.left > 0:  # the rest of the input files, so the next frame is read right
            reader.read(min(reader.left, 1 << 20))
        send_frame(sock, b"R", _pack(report, []))
        return None
    return source, ids


def manage(sock: socket.socket, ctx: dict[str, Any], limits: dict[str, Any]) -> None:
    """One run, in a process forked from the zygote; writes the b"R" frame."""
    _jail._prctl(_jail.PR_SET_PDEATHSIG, signal.SIGKILL)
    cfg = dict(ctx["cfg"], **limits)
    report: dict[str, Any] = {"setup_error": None, "mode": ctx["mode"], "landlock_abi": ctx["abi"]}
    received = _receive(sock, ctx, cfg, report)
    if received is None:
        return
    source, ids = received
    report["uid"] = ids[0]
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - ends in os._exit
        try:
            for fd in (out_r, err_r):
                os.close(fd)
            ours.close()
            program_process(ctx, cfg, source, ids, (out_w, err_w, theirs))
        finally:
            os._exit(127)
    for fd in (out_w, err_w):
        os.close(fd)
    theirs.close()
    del source, received
    failure, listener = _jail.read_setup(ours)
    ours.close()
    output = _Output((out_r, err_r), int(cfg["max_output_bytes"]))
    refusals = _jail.Refusals(listener)
    deadline = started + max(0.1, float(cfg["wall_seconds"]))
    timed_out = _drain(pid, output, deadline, refusals)
    refusals.close()
    try:
        os.kill(pid, signal.SIGKILL)  # already gone, or its pipes outlived SETTLE_SECONDS
    except ProcessLookupError:
        pass
    _, status, usage = os.wait4(pid, 0)
    report.update(
        elapsed=round(time.monotonic() - started, 3),
        timed_out=timed_out,
        exit_code=os.waitstatus_to_exitcode(status),
        cpu_seconds=round(usage.ru_utime + usage.ru_stime, 3),
        maxrss_kb=usage.ru_maxrss,
        stdout_total=output.total[out_r],
        stderr_total=output.total[err_r],
        refused=refusals.names,
    )
    streams = [bytes(output.kept[out_r]), bytes(output.kept[err_r])]
    if failure:
        report["setup_error"] = failure.decode("utf-8", "replace")
        send_frame(sock, b"R", _pack(report, streams))
        return
    runner_status, images, report["skipped"] = _results(cfg)
    send_frame(sock, b"R", _pack(report, [*streams, runner_status, *images]))


def _pack(report: dict[str, Any], blobs: list[bytes]) -> bytes:
    """JSON report (with the blob sizes) then the blobs: stdout, stderr, status.json, images."""
    head = json.dumps(dict(report, blobs=[len(b) for b in blobs])).encode()
    return struct.pack(">I", len(head)) + head + b"".join(blobs)


def serve(sock: socket.socket, ctx: dict[str, Any]) -> None:
    while True:
        frame = recv_frame(sock, 64 * 1024)
        if frame is None:
            return
        kind, payload = frame
        if kind != b"Q":
            return
        limits = json.loads(payload)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - ends in os._exit
            code = 1
            try:
                manage(sock, ctx, limits)
                code = 0
            except BaseException:
                pass
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        send_frame(sock, b"D", json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode())


def main() -> None:
    run_dir, fd = sys.argv[1], int(sys.argv[2])
    sock = socket.socket(fileno=fd)
    try:
        ctx = set_up(run_dir)
        warm_up()
    except Exception as exc:
        error = str(exc) if isinstance(exc, _jail.SetupError) else repr(exc)
        send_frame(sock, b"H", json.dumps({"setup_error": error}).encode())
        return
    hello = {
        "setup_error": None,
        "mode": ctx["mode"],
        "landlock_abi": ctx["abi"],
        "seccomp_notify": ctx["filter"].notify,
    }
    send_frame(sock, b"H", json.dumps(hello).encode())
    serve(sock, ctx)


if __name__ == "__main__":
    main()
