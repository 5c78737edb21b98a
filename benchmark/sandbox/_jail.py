"""The jail: `python -I -S _jail.py RUN_DIR`, started by run_code in a new session.

Standard library only, and never imported by the server: it runs as its own process. It
1. enters new mount, network, pid, IPC and UTS namespaces (with a user namespace too when it is
   not root), so the run has no network interface but a loopback that is down;
2. builds a new root on a small tmpfs holding only read-only bind mounts of the interpreter, its
   libraries and site-packages, the shared-library directories, /etc/ld.so.cache and four
   devices, plus /sandbox, a size-limited tmpfs (work/ is the empty working folder);
3. forks the child that becomes pid 1 of the new pid namespace: it chroots into that root, sets
   resource limits, drops to an unprivileged user id of its own (when root), sets no_new_privs,
   restricts itself with Landlock (file system, TCP, signals) when the kernel has it, closes
   every other file descriptor and executes the runner with a minimal environment;
4. waits for it with the wall-clock limit, kills it when the limit passes (when pid 1 of a pid
   namespace dies the kernel kills every other process in it before the wait returns), copies
   the runner's bounded results out of /sandbox/out without following links, and writes
   RUN_DIR/status.json.

Any failure to set up a layer is reported as `setup_error` and nothing of the program runs.
"""

import ctypes
import json
import os
import re
import resource
import secrets
import signal
import stat
import sys
import time
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
ST_RELATIME = 4096

PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38

SYS_LANDLOCK_CREATE_RULESET = 444  # the same number on every architecture
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_MAKE_CHAR = 1 << 6
FS_MAKE_BLOCK = 1 << 11
FS_TRUNCATE = 1 << 14
FS_IOCTL_DEV = 1 << 15
FS_FILE_ONLY = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

OUT_NAME = re.compile(r"^img-\d{3}\.png$")
SANDBOX_RIGHTS = ((1 << 16) - 1) & ~(FS_MAKE_CHAR | FS_MAKE_BLOCK | FS_IOCTL_DEV)
FONT_CACHE_NAME = re.compile(r"^fontlist-v[0-9.]+\.json$")
FONT_CACHE_BYTES = 4 * 1024 * 1024
STATUS_BYTES = 64 * 1024

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


class SetupError(Exception):
    pass


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(err)}")
    return result


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    def enc(value: str | None) -> bytes | None:
        return None if value is None else os.fsencode(value)

    res = libc.mount(
        enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data) if data else None
    )
    _check(res, f"mount {target}")


def _prctl(option: int, value: int) -> None:
    zero = ctypes.c_ulong(0)
    _check(libc.prctl(option, ctypes.c_ulong(value), zero, zero, zero), f"prctl {option}")


# --- Landlock -----------------------------------------------------------------------------


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when it has none (or it is disabled)."""
    res = libc.syscall(
        ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET),
        None,
        ctypes.c_size_t(0),
        ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION),
    )
    return max(int(res), 0)


def _fs_rights(abi: int) -> int:
    bits = {1: 13, 2: 14, 3: 15, 4: 15}.get(abi, 16)
    return (1 << bits) - 1


def landlock_restrict(abi: int, rules: list[tuple[str, int]]) -> None:
    """Allow only `rules` (path, access) from now on; every TCP bind and connect is refused
    (ABI 4+), and signals and abstract unix sockets cannot reach outside the domain (ABI 6+)."""
    handled = _fs_rights(abi)
    attr = _RulesetAttr(handled, 0, 0)
    size = 8
    if abi >= 4:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
        size = 16
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = 24
    ruleset = _check(
        libc.syscall(
            ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET),
            ctypes.byref(attr),
            ctypes.c_size_t(size),
            ctypes.c_uint32(0),
        ),
        "landlock_create_ruleset",
    )
    try:
        for path, access in rules:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
                allowed = access & handled & (~0 if is_dir else FS_FILE_ONLY)
                rule = _PathBeneathAttr(allowed, fd)
                _check(
                    libc.syscall(
                        ctypes.c_long(SYS_LANDLOCK_ADD_RULE),
                        ctypes.c_int(ruleset),
                        ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
                        ctypes.byref(rule),
                        ctypes.c_uint32(0),
                    ),
                    f"landlock_add_rule {path}",
                )
            finally:
                os.close(fd)
        _check(
            libc.syscall(
                ctypes.c_long(SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)
            ),
            "landlock_restrict_self",
        )
    finally:
        os.close(ruleset)


# --- The new root -------------------------------------------------------------------------


def _inside(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def _make_dirs(root: str, path: str) -> str | None:
    """mkdir -p of `path` under root without following any link (the tmpfs holds only what we
    made, but a link there must never lead a root-owned mkdir outside it)."""
    current = root
    for part in [p for p in path.split("/") if p]:
        current = os.path.join(current, part)
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            os.mkdir(current, 0o755)
            continue
        if not stat.S_ISDIR(mode):
            return None
    return current


def _mount_flags_of(path: str) -> int:
    """The flags a read-only remount must keep (a user namespace may not drop locked ones)."""
    f_flag = os.statvfs(path).f_flag
    flags = f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME)
    if f_flag & ST_RELATIME:
        flags |= MS_RELATIME
    return flags


def _bind(root: str, real: str, *, writable: bool = False) -> str | None:
    parent = _make_dirs(root, os.path.dirname(real))
    if parent is None:
        return None
    target = os.path.join(parent, os.path.basename(real))
    if os.path.lexists(target):
        return None  # already covered by a bind mount of a parent folder
    if os.path.isdir(real):
        os.mkdir(target, 0o755)
    else:
        os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o644))
    _mount(real, target, None, MS_BIND)
    extra = 0 if writable else MS_RDONLY
    _mount(None, target, None, MS_REMOUNT | MS_BIND | extra | _mount_flags_of(real))
    return real


def _link(root: str, path: str, real: str) -> None:
    parent = _make_dirs(root, os.path.dirname(path))
    if parent is None:
        return
    target = os.path.join(parent, os.path.basename(path))
    if not os.path.lexists(target):
        os.symlink(real, target)


def _copy_font_cache(run_dir: str, mpl: str, uid: int, gid: int) -> None:
    """matplotlib's font list, made once by the server's warm-up run, saves each run building it."""
    folder = os.path.join(run_dir, "fontcache")
    for name in os.listdir(folder) if os.path.isdir(folder) else []:
        if FONT_CACHE_NAME.match(name):
            with open(os.path.join(folder, name), "rb") as src:
                data = src.read(FONT_CACHE_BYTES)
            target = os.path.join(mpl, name)
            with open(target, "wb") as dst:
                dst.write(data)
            os.chown(target, uid, gid)


def build_root(root: str, cfg: dict[str, Any], uid: int, gid: int) -> list[tuple[str, int]]:
    """Mount the new root; return the Landlock rules for it (paths as seen after chroot)."""
    rules = bind_system(root, cfg)
    read = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
    sandbox = _inside(root, "/sandbox")
    os.mkdir(sandbox, 0o755)
    size = f"size={int(cfg['workdir_mb'])}m,nr_inodes=16384,mode=0755"
    _mount("tmpfs", sandbox, "tmpfs", MS_NOSUID | MS_NODEV, size)
    for name in ("work", "out", "mpl"):
        os.mkdir(os.path.join(sandbox, name), 0o700)
        os.chown(os.path.join(sandbox, name), uid, gid)
    _copy_font_cache(cfg["run_dir"], os.path.join(sandbox, "mpl"), uid, gid)
    rules.append(("/sandbox", SANDBOX_RIGHTS))

    bw = _inside(root, "/.bw")
    os.mkdir(bw, 0o755)
    for name in ("runner.py", "program.py"):
        with open(os.path.join(cfg["run_dir"], name), "rb") as src:
            data = src.read()
        with open(os.path.join(bw, name), "wb") as dst:
            dst.write(data)
        os.chmod(os.path.join(bw, name), 0o644)
    rules.append(("/.bw", read))
    _mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    return rules


def bind_system(root: str, cfg: dict[str, Any]) -> list[tuple[str, int]]:
    """Mount a small tmpfs on `root` holding read-only bind mounts of cfg's read_only paths (and
    read-write ones of its read_write paths); return their Landlock rules."""
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=8m,nr_inodes=4096,mode=0755")
    read = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
    rules: list[tuple[str, int]] = []
    wanted = [(p, False) for p in cfg["read_only"]] + [(p, True) for p in cfg["read_write"]]
    resolved = sorted(
        {(os.path.realpath(p), w) for p, w in wanted if os.path.exists(p)}, key=lambda x: x[0]
    )
    bound: list[str] = []
    for real, writable in resolved:
        if any(real == b or real.startswith(b.rstrip("/") + "/") for b in bound):
            continue
        if _bind(root, real, writable=writable):
            bound.append(real)
            rw = FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV
            rules.append((real, rw if writable else read))
    for path, _ in wanted:
        path = os.path.normpath(path)
        if os.path.exists(path) and os.path.realpath(path) != path:
            _link(root, path, os.path.realpath(path))
    return rules


# --- Namespaces, the child, the wait ------------------------------------------------------


def enter_namespaces(*, pid: bool = True) -> str:
    """New mount, network, IPC, UTS (and, unless pid=False, pid) namespaces; a user namespace
    too when not root. Returns "root" or "user-namespace"."""
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | (CLONE_NEWPID if pid else 0)
    if os.geteuid() == 0:
        _check(libc.unshare(ctypes.c_int(flags)), "unshare (mount, network, pid namespaces)")
        mode = "root"
    else:
        uid, gid = os.geteuid(), os.getegid()
        _check(
            libc.unshare(ctypes.c_int(flags | CLONE_NEWUSER)),
            "unshare (user, mount, network, pid namespaces)",
        )
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)
        mode = "user-namespace"
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    return mode


def _set_limits(cfg: dict[str, Any]) -> None:
    cpu = int(cfg["cpu_seconds"])
    memory = int(cfg["memory_mb"]) * 1024 * 1024
    file_size = max(int(cfg["workdir_mb"]) * 1024 * 1024, int(cfg["max_image_bytes"]))
    for limit, soft, hard in (
        (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_AS, memory, memory),
        (resource.RLIMIT_FSIZE, file_size, file_size),
        (resource.RLIMIT_NOFILE, 64, 64),
        (resource.RLIMIT_CORE, 0, 0),
        (resource.RLIMIT_NPROC, int(cfg["max_processes"]), int(cfg["max_processes"])),
        (resource.RLIMIT_MEMLOCK, 0, 0),
        (resource.RLIMIT_MSGQUEUE, 0, 0),
    ):
        resource.setrlimit(limit, (soft, hard))


def child(
    cfg: dict[str, Any], root: str, ids: tuple[int, int], rules: list, abi: int, err_fd: int
) -> None:
    """Pid 1 of the new pid namespace; ends in execve of the runner or raises."""
    uid, gid = ids
    os.chroot(root)
    os.chdir("/sandbox/work")
    _set_limits(cfg)
    if os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if os.geteuid() == 0 or os.getegid() == 0:
            raise SetupError("could not drop root")
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # after the uid change, which clears it
    if abi:
        landlock_restrict(abi, rules)
    os.closerange(3, err_fd)
    os.closerange(err_fd + 1, 65536)
    python = cfg["python"]
    mark = os.path.basename(cfg["run_dir"])  # names the run in `ps`; starts with the run prefix
    argv = [python, "-I", "-u", "/.bw/runner.py", mark, str(int(cfg["max_images"]))]
    os.execve(python, argv, cfg["env"])


def _read_bounded(dir_fd: int, name: str, limit: int) -> bytes | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(65536, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return None if total > limit else b"".join(chunks)
    finally:
        os.close(fd)


def _keep_font_cache(root: str, run_dir: str) -> None:
    try:
        dir_fd = os.open(
            _inside(root, "/sandbox/mpl"), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
        )
    except OSError:
        return
    try:
        for name in os.listdir(dir_fd):
            data = (
                _read_bounded(dir_fd, name, FONT_CACHE_BYTES)
                if FONT_CACHE_NAME.match(name)
                else None
            )
            if data:
                with open(os.path.join(run_dir, "out", name), "wb") as fh:
                    fh.write(data)
    finally:
        os.close(dir_fd)


def copy_results(root: str, run_dir: str, cfg: dict[str, Any]) -> list[str]:
    """Copy the runner's results out of /sandbox/out: named files only, regular files only,
    bounded sizes; whatever the program left there is treated as hostile."""
    skipped: list[str] = []
    try:
        dir_fd = os.open(
            _inside(root, "/sandbox/out"), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
        )
    except OSError:
        return ["no output folder"]
    if cfg.get("keep_font_cache"):
        _keep_font_cache(root, run_dir)
    try:
        names = sorted(n for n in os.listdir(dir_fd) if OUT_NAME.match(n) and n != "status.json")
        for name in ["status.json", *names[: int(cfg["max_images"])]]:
            limit = STATUS_BYTES if name == "status.json" else int(cfg["max_image_bytes"])
            data = _read_bounded(dir_fd, name, limit)
            if data is None:
                skipped.append(name)
                continue
            with open(os.path.join(run_dir, "out", name), "wb") as fh:
                fh.write(data)
    finally:
        os.close(dir_fd)
    return skipped


def wait_child(pid: int, wall: float) -> tuple[int, Any, bool]:
    timed_out = False

    def on_alarm(signum: int, frame: Any) -> None:
        nonlocal timed_out
        timed_out = True
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, wall)
    _, status, usage = os.wait4(pid, 0)
    signal.setitimer(signal.ITIMER_REAL, 0)
    return status, usage, timed_out


def run(run_dir: str) -> dict[str, Any]:
    with open(os.path.join(run_dir, "config.json")) as fh:
        cfg = json.load(fh)
    cfg["run_dir"] = run_dir
    root = os.path.join(run_dir, "root")
    report: dict[str, Any] = {"setup_error": None}
    try:
        abi = landlock_abi()
        mode = enter_namespaces()
        if mode == "root":
            uid = gid = 100_000 + secrets.randbelow(900_000)
        else:
            uid, gid = os.geteuid(), os.getegid()
        rules = build_root(root, cfg, uid, gid)
    except Exception as exc:
        report["setup_error"] = str(exc) if isinstance(exc, SetupError) else repr(exc)
        return report
    report.update(mode=mode, landlock_abi=abi, uid=uid)

    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child ends in execve or _exit
        try:
            os.close(err_r)
            child(cfg, root, (uid, gid), rules, abi, err_w)
        except BaseException as exc:
            message = str(exc) if isinstance(exc, SetupError) else repr(exc)
            os.write(err_w, message.encode("utf-8", "replace")[:2000])
        os._exit(127)
    os.close(err_w)
    failure = b""
    while chunk := os.read(err_r, 4096):
        failure += chunk
    os.close(err_r)
    status, usage, timed_out = wait_child(pid, max(0.1, cfg["wall_seconds"]))
    report.update(
        elapsed=round(time.monotonic() - started, 3),
        timed_out=timed_out,
        exit_code=os.waitstatus_to_exitcode(status),
        cpu_seconds=round(usage.ru_utime + usage.ru_stime, 3),
        maxrss_kb=usage.ru_maxrss,
    )
    if failure:
        report["setup_error"] = failure.decode("utf-8", "replace")
        return report
    report["skipped"] = copy_results(root, run_dir, cfg)
    return report


def main() -> None:
    run_dir = sys.argv[1]
    try:
        report = run(run_dir)
    except Exception as exc:
        report = {"setup_error": repr(exc)}
    tmp = os.path.join(run_dir, "status.json.tmp")
    with open(tmp, "w") as fh:
        json.dump(report, fh)
    os.replace(tmp, os.path.join(run_dir, "status.json"))


if __name__ == "__main__":
    main()
