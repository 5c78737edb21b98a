"""The jail: `python -I -S _jail.py RUN_DIR`, started by run_code in a new session.

Standard library only; it runs as its own process (the server imports it only for the input
files' checks and bounds, which both sides apply). It
1. enters new mount, network, pid, IPC and UTS namespaces (with a user namespace too when it is
   not root), so the run has no network interface but a loopback that is down;
2. builds a new root on a small tmpfs holding only read-only bind mounts of the interpreter, its
   libraries and site-packages, the shared-library directories, /etc/ld.so.cache and four
   devices, plus /sandbox, a size-limited tmpfs (work/ is the working folder, empty but for
   the run's input files, RUN_DIR/inputs.json and inputs.bin, which it writes there);
3. forks the child that becomes pid 1 of the new pid namespace: it chroots into that root, sets
   resource limits, drops to an unprivileged user id of its own (when root), sets no_new_privs,
   restricts itself with Landlock (file system, TCP, signals) when the kernel has it, loads the
   system call filter (seccomp, built with libseccomp; see SYSCALLS_REFUSED), hands the
   filter's notification descriptor to the jail, closes every other file descriptor and
   executes the runner with a minimal environment;
4. waits for it with the wall-clock limit, answering each refused system call with EPERM and
   noting its name, kills it when the limit passes (when pid 1 of a pid namespace dies the
   kernel kills every other process in it before the wait returns), copies the runner's
   bounded results out of /sandbox/out without following links, and writes
   RUN_DIR/status.json.

Any failure to set up a layer is reported as `setup_error` and nothing of the program runs.
"""

import ctypes
import json
import os
import re
import resource
import secrets
import select
import signal
import socket
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


# --- The system call filter (seccomp, through libseccomp) ---------------------------------

# Refused outright (the program gets EPERM, and the jail notes the name). Other processes'
# memory and the kernel's debugging interfaces; mounts, the root and file handles; namespaces;
# kernel interfaces with a history of exploits reachable without privileges (BPF,
# userfaultfd, io_uring, keyrings); the machine itself (modules, kexec, reboot, clocks, the
# kernel log, host name, raw I/O); and obsolete calls. A name this libseccomp does not know
# (a call newer than it) is skipped: this is a deny-list, and docs/reference/sandbox.md says what that leaves.
SYSCALLS_REFUSED = (
    *("ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp"),
    *("pidfd_getfd", "perf_event_open", "lookup_dcookie"),
    *("mount", "umount2", "pivot_root", "chroot", "mount_setattr", "fsopen", "fsconfig"),
    *("fsmount", "fspick", "move_mount", "open_tree", "open_by_handle_at", "name_to_handle_at"),
    *("quotactl", "quotactl_fd", "swapon", "swapoff", "acct", "fanotify_init"),
    *("unshare", "setns"),
    *("bpf", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register"),
    *("keyctl", "add_key", "request_key"),
    *("kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module"),
    *("create_module", "get_kernel_syms", "query_module", "reboot", "syslog", "vhangup"),
    *("settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname"),
    *("setdomainname", "iopl", "ioperm", "modify_ldt"),
    *("uselib", "ustat", "sysfs", "_sysctl", "nfsservctl", "afs_syscall", "tuxcall"),
    *("security", "vserver", "getpmsg", "putpmsg", "vm86", "vm86old"),
)
# clone with any of these flags makes a namespace; clone3 passes its flags in memory a filter
# cannot read, so it answers ENOSYS and the C library falls back to clone.
CLONE_NEW_FLAGS = {
    "CLONE_NEWNS": CLONE_NEWNS,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": CLONE_NEWUTS,
    "CLONE_NEWIPC": CLONE_NEWIPC,
    "CLONE_NEWUSER": CLONE_NEWUSER,
    "CLONE_NEWPID": CLONE_NEWPID,
    "CLONE_NEWNET": CLONE_NEWNET,
}
# Sockets: Unix, IPv4 and IPv6 (which the empty network namespace leaves unconnected) and
# netlink (the C library's interface and address lookups); every other address family (packet,
# AF_ALG, vsock, TIPC, RDS, ... : drivers a program never needs) is refused.
SOCKET_FAMILIES_ALLOWED = (1, 2, 10, 16)
SOCKET_FAMILIES_MAX = 64
# personality() only with 0 (Linux, the default): no other execution domain, and none of the
# flags that turn off address-space randomisation or make data executable.

SCMP_ACT_KILL_PROCESS = 0x80000000
SCMP_ACT_NOTIFY = 0x7FC00000
SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_ACT_ERRNO = 0x00050000
SCMP_FLTATR_ACT_BADARCH = 2
SCMP_CMP_NE = 1
SCMP_CMP_EQ = 4
SCMP_CMP_MASKED_EQ = 7
SCMP_API_NOTIFY = 5  # seccomp_api_get() from which user notification works
ENOSYS = 38
EPERM = 1
MAX_REFUSED = 16


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


class _SeccompData(ctypes.Structure):
    _fields_ = [
        ("nr", ctypes.c_int),
        ("arch", ctypes.c_uint32),
        ("instruction_pointer", ctypes.c_uint64),
        ("args", ctypes.c_uint64 * 6),
    ]


class _Notif(ctypes.Structure):
    _fields_ = [
        ("id", ctypes.c_uint64),
        ("pid", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("data", _SeccompData),
    ]


class _NotifResp(ctypes.Structure):
    _fields_ = [
        ("id", ctypes.c_uint64),
        ("val", ctypes.c_int64),
        ("error", ctypes.c_int32),
        ("flags", ctypes.c_uint32),
    ]


_seccomp: Any = None


def libseccomp() -> Any:
    """libseccomp (the library systemd, runc and Flatpak build their filters with), loaded once
    by its soname; SetupError when this machine has none."""
    global _seccomp
    if _seccomp is None:
        try:
            lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
        except OSError as exc:
            raise SetupError(
                f"the system call filter needs libseccomp (Debian: libseccomp2): {exc}"
            ) from exc
        vp, u32, i = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int
        for name, restype, argtypes in (
            ("seccomp_api_get", ctypes.c_uint, []),
            ("seccomp_init", vp, [u32]),
            ("seccomp_attr_set", i, [vp, i, u32]),
            ("seccomp_syscall_resolve_name", i, [ctypes.c_char_p]),
            ("seccomp_syscall_resolve_num_arch", vp, [u32, i]),
            ("seccomp_rule_add_array", i, [vp, u32, i, ctypes.c_uint, ctypes.POINTER(_ArgCmp)]),
            ("seccomp_load", i, [vp]),
            ("seccomp_notify_fd", i, [vp]),
            ("seccomp_notify_alloc", i, [ctypes.c_void_p, ctypes.c_void_p]),
            ("seccomp_notify_receive", i, [i, vp]),
            ("seccomp_notify_respond", i, [i, vp]),
        ):
            function = getattr(lib, name)
            function.restype, function.argtypes = restype, argtypes
        _seccomp = lib
    return _seccomp


class SyscallFilter:
    """The filter, built once (in the jail, or in the zygote before its first fork) and loaded
    by each program process as its last step before the program: every system call is allowed
    except the refused ones, which the jail (or the zygote's manager) answers with EPERM through
    user notification, naming them (with libseccomp's EPERM action where the kernel has no user
    notification); a system call of another architecture (32-bit int 0x80, x32) kills the
    process."""

    def __init__(self, *, notify: bool | None = None) -> None:
        lib = libseccomp()
        self.notify = lib.seccomp_api_get() >= SCMP_API_NOTIFY if notify is None else notify
        refuse = SCMP_ACT_NOTIFY if self.notify else SCMP_ACT_ERRNO | EPERM
        self.ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
        if not self.ctx:
            raise SetupError("seccomp_init failed")
        self._set(lib.seccomp_attr_set(self.ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS))
        for name in SYSCALLS_REFUSED:
            self._rule(refuse, name)
        for flag in CLONE_NEW_FLAGS.values():
            self._rule(refuse, "clone", (0, SCMP_CMP_MASKED_EQ, flag, flag))
        self._rule(SCMP_ACT_ERRNO | ENOSYS, "clone3")
        for family in range(SOCKET_FAMILIES_MAX):
            if family not in SOCKET_FAMILIES_ALLOWED:
                self._rule(refuse, "socket", (0, SCMP_CMP_EQ, family, 0))
        self._rule(refuse, "personality", (0, SCMP_CMP_NE, 0, 0))

    def _set(self, result: int, what: str = "seccomp_attr_set") -> None:
        if result < 0:
            raise SetupError(f"{what}: {os.strerror(-result)}")

    def _rule(self, action: int, name: str, *conditions: tuple[int, int, int, int]) -> None:
        lib = libseccomp()
        number = lib.seccomp_syscall_resolve_name(name.encode())
        if number == -1:  # __NR_SCMP_ERROR: a name this libseccomp does not know
            return
        array = (_ArgCmp * max(1, len(conditions)))(*(_ArgCmp(*c) for c in conditions))
        self._set(
            lib.seccomp_rule_add_array(self.ctx, action, number, len(conditions), array),
            f"seccomp rule for {name}",
        )

    def load(self) -> int | None:
        """Filter the calling process (and every process it starts) from now on; the
        notification descriptor (for the jail to answer on), None without user notification."""
        lib = libseccomp()
        self._set(lib.seccomp_load(self.ctx), "seccomp_load")
        if not self.notify:
            return None
        listener = lib.seccomp_notify_fd(self.ctx)
        if listener < 0:
            raise SetupError("seccomp: no notification descriptor")
        return listener


def _refused_name(data: _SeccompData) -> str:
    lib = libseccomp()
    pointer = lib.seccomp_syscall_resolve_num_arch(data.arch, data.nr)
    if pointer:
        name = ctypes.string_at(pointer).decode("ascii", "replace")
        libc.free(ctypes.c_void_p(pointer))
    else:
        name = f"number {data.nr}"
    if name == "clone":
        flags = [n for n, bit in CLONE_NEW_FLAGS.items() if data.args[0] & bit]
        return f"clone with {'|'.join(flags)}"
    if name == "socket":
        return f"socket (address family {data.args[0]})"
    if name == "personality":
        return f"personality ({data.args[0]:#x})"
    return name


class Refusals:
    """The jail's end of the filter's notifications: each refused system call is answered with
    EPERM (never let through) and its name kept (the first MAX_REFUSED distinct ones)."""

    def __init__(self, listener: int | None) -> None:
        self.fd = listener
        self.names: list[str] = []
        self._req = self._resp = None
        if listener is not None:
            req, resp = ctypes.c_void_p(), ctypes.c_void_p()
            if libseccomp().seccomp_notify_alloc(ctypes.byref(req), ctypes.byref(resp)) < 0:
                raise SetupError("seccomp_notify_alloc failed")
            self._req = ctypes.cast(req, ctypes.POINTER(_Notif))
            self._resp = ctypes.cast(resp, ctypes.POINTER(_NotifResp))

    def answer(self) -> None:
        """One pending notification (poll said there is one); a call whose process died in the
        meantime is skipped."""
        if self.fd is None or self._req is None or self._resp is None:
            return
        lib = libseccomp()
        ctypes.memset(self._req, 0, ctypes.sizeof(_Notif))
        if lib.seccomp_notify_receive(self.fd, self._req) < 0:
            return
        request = self._req.contents
        response = self._resp.contents
        response.id, response.val, response.error, response.flags = request.id, 0, -EPERM, 0
        lib.seccomp_notify_respond(self.fd, self._resp)
        name = _refused_name(request.data)
        if name not in self.names and len(self.names) < MAX_REFUSED:
            self.names.append(name)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def send_setup_error(channel: socket.socket, message: str) -> None:
    channel.send(b"E" + message.encode("utf-8", "replace")[:2000])


def send_listener(channel: socket.socket, listener: int | None) -> None:
    """Hand the filter's notification descriptor to the jail and close it here: the program
    must never hold it (it could answer its own refused calls)."""
    if listener is not None:
        socket.send_fds(channel, [b"L"], [listener])
        os.close(listener)


def read_setup(channel: socket.socket) -> tuple[bytes, int | None]:
    """What the program process said while it set itself up, until it closed the channel (on
    execve, or before the program starts): an error message, and the notification descriptor."""
    failure, listener = b"", None
    while True:
        data, fds, _flags, _addr = socket.recv_fds(channel, 4096, 4)
        for fd in fds:
            if listener is None and data == b"L":
                listener = fd
            else:
                os.close(fd)
        if not data and not fds:
            return failure, listener
        if data.startswith(b"E"):
            failure += data[1:]


# --- Input files ----------------------------------------------------------------------------

# Files given to run_code(files=...) are written into the working folder before the program
# starts. These bounds are checked by the server (run.check_files) and again here, where they
# are written as root: names relative to the working folder, no "." or ".." part, no empty
# part, no control character; at most MAX_INPUT_DEPTH parts of at most 255 bytes each.
MAX_INPUT_BYTES = 64 * 1024 * 1024
MAX_INPUT_FILES = 256
MAX_INPUT_NAME_BYTES = 1024
MAX_INPUT_PART_BYTES = 255
MAX_INPUT_DEPTH = 8
INPUT_HEADER_BYTES = 1024 * 1024
PAGE = 4096


def input_name_problem(name: Any) -> str | None:
    """Why `name` cannot be an input file's name (a path relative to the working folder), or
    None when it can."""
    if not isinstance(name, str):
        return "is not text"
    if not name:
        return "is empty"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "holds a control character (NUL, a line break, ...)"
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid UTF-8 text"
    if len(encoded) > MAX_INPUT_NAME_BYTES:
        return f"is longer than {MAX_INPUT_NAME_BYTES} bytes"
    if name.startswith("/"):
        return "is absolute (it must be relative to the working folder)"
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "has an empty, '.' or '..' part (it must stay inside the working folder)"
    if len(parts) > MAX_INPUT_DEPTH:
        return f"is more than {MAX_INPUT_DEPTH} folders deep"
    if any(len(part.encode("utf-8")) > MAX_INPUT_PART_BYTES for part in parts):
        return f"has a part longer than {MAX_INPUT_PART_BYTES} bytes"
    return None


def inputs_problem(entries: Any) -> str | None:
    """Why a list of input files [[name, size], ...] cannot be written, or None."""
    if not isinstance(entries, list) or len(entries) > MAX_INPUT_FILES:
        return f"more than {MAX_INPUT_FILES} input files"
    total = 0
    names: set[str] = set()
    folders: set[str] = set()
    for entry in entries:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], int)):
            return "a bad input file entry"
        name, size = entry
        problem = input_name_problem(name)
        if problem:
            return f"input file name {name!r} {problem}"
        if size < 0:
            return f"input file {name!r} has a negative size"
        parents = ["/".join(name.split("/")[:i]) for i in range(1, name.count("/") + 1)]
        if name in names or name in folders or any(p in names for p in parents):
            return f"input file {name!r} clashes with another input file or its folder"
        names.add(name)
        folders.update(parents)
        total += size
    if total > MAX_INPUT_BYTES:
        return f"input files of {total} bytes, over the {MAX_INPUT_BYTES} bytes limit"
    return None


def inputs_room(entries: list[list[Any]]) -> int:
    """Bytes the input files take in a tmpfs (whole pages, one per folder), so the working
    folder can be made that much larger and the program keeps its whole `workdir_mb`."""
    folders = {"/".join(n.split("/")[:i]) for n, _ in entries for i in range(1, n.count("/") + 1)}
    pages = sum(-(-size // PAGE) + 1 for _, size in entries) + len(folders)
    return pages * PAGE


def write_inputs(work: str, entries: list[list[Any]], read: Any, ids: tuple[int, int]) -> None:
    """Write the input files into the fresh working folder `work` (a tmpfs nothing else has
    written to yet), owned by the run's user; `read(n)` gives the next n bytes of their
    contents, in order. No link is followed and no existing file is replaced."""
    problem = inputs_problem(entries)
    if problem:
        raise SetupError(problem)
    uid, gid = ids
    dir_flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    for name, size in entries:
        *folders, base = name.split("/")
        dir_fd = os.open(work, dir_flags)
        try:
            for part in folders:
                try:
                    os.mkdir(part, 0o700, dir_fd=dir_fd)
                    os.chown(part, uid, gid, dir_fd=dir_fd, follow_symlinks=False)
                except FileExistsError:
                    pass
                inner = os.open(part, dir_flags, dir_fd=dir_fd)
                os.close(dir_fd)
                dir_fd = inner
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(base, flags, 0o600, dir_fd=dir_fd)
            try:
                os.fchown(fd, uid, gid)
                left = size
                while left:
                    chunk = read(min(left, 1 << 20))
                    if not chunk:
                        raise SetupError(f"input file {name!r} ended early")
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(fd, view) :]
                    left -= len(chunk)
            finally:
                os.close(fd)
        finally:
            os.close(dir_fd)


def _inputs_from_run_dir(run_dir: str) -> list[list[Any]]:
    path = os.path.join(run_dir, "inputs.json")
    if not os.path.exists(path):
        return []
    with open(path, "rb") as fh:
        entries = json.loads(fh.read(INPUT_HEADER_BYTES))
    problem = inputs_problem(entries)
    if problem:
        raise SetupError(problem)
    return entries


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


def sandbox_options(cfg: dict[str, Any], entries: list[list[Any]]) -> str:
    """The /sandbox tmpfs's mount options: `workdir_mb` for the program, plus the room its
    input files take."""
    size = int(cfg["workdir_mb"]) * 1024 * 1024 + inputs_room(entries)
    return f"size={size},nr_inodes=16384,mode=0755"


def build_root(root: str, cfg: dict[str, Any], uid: int, gid: int) -> list[tuple[str, int]]:
    """Mount the new root; return the Landlock rules for it (paths as seen after chroot)."""
    rules = bind_system(root, cfg)
    read = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
    sandbox = _inside(root, "/sandbox")
    os.mkdir(sandbox, 0o755)
    entries = _inputs_from_run_dir(cfg["run_dir"])
    _mount("tmpfs", sandbox, "tmpfs", MS_NOSUID | MS_NODEV, sandbox_options(cfg, entries))
    for name in ("work", "out", "mpl"):
        os.mkdir(os.path.join(sandbox, name), 0o700)
        os.chown(os.path.join(sandbox, name), uid, gid)
    if entries:
        with open(os.path.join(cfg["run_dir"], "inputs.bin"), "rb") as fh:
            write_inputs(os.path.join(sandbox, "work"), entries, fh.read, (uid, gid))
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
    cfg: dict[str, Any],
    root: str,
    ids: tuple[int, int],
    layers: tuple[list, int, SyscallFilter],
    channel: socket.socket,
) -> None:
    """Pid 1 of the new pid namespace; ends in execve of the runner or raises."""
    uid, gid = ids
    rules, abi, syscall_filter = layers
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
    send_listener(channel, syscall_filter.load())
    keep = channel.fileno()  # close-on-exec: the jail reads its end until the execve
    os.closerange(3, keep)
    os.closerange(keep + 1, 65536)
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


def supervise(pid: int, deadline: float, refusals: Refusals) -> tuple[int, Any, bool]:
    """Wait for the program's pid 1, answering the filter's notifications meanwhile, and kill
    it at the deadline. (status, resource usage, whether it was killed for the time limit)."""
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    if refusals.fd is not None:
        poller.register(refusals.fd, select.POLLIN)
    timed_out = exited = False
    try:
        while not exited:
            now = time.monotonic()
            if not timed_out and now >= deadline:
                timed_out = True
                os.kill(pid, signal.SIGKILL)
            wait = 1.0 if timed_out else deadline - now
            for fd, event in poller.poll(max(0.0, wait) * 1000):
                if fd == pidfd:
                    exited = True
                elif event & select.POLLIN:
                    refusals.answer()
                else:  # every process under the filter is gone
                    poller.unregister(fd)
    finally:
        os.close(pidfd)
    _, status, usage = os.wait4(pid, 0)
    return status, usage, timed_out


def run(run_dir: str) -> dict[str, Any]:
    with open(os.path.join(run_dir, "config.json")) as fh:
        cfg = json.load(fh)
    cfg["run_dir"] = run_dir
    root = os.path.join(run_dir, "root")
    report: dict[str, Any] = {"setup_error": None}
    try:
        abi = landlock_abi()
        syscall_filter = SyscallFilter()
        mode = enter_namespaces()
        if mode == "root":
            uid = gid = 100_000 + secrets.randbelow(900_000)
        else:
            uid, gid = os.geteuid(), os.getegid()
        rules = build_root(root, cfg, uid, gid)
    except Exception as exc:
        report["setup_error"] = str(exc) if isinstance(exc, SetupError) else repr(exc)
        return report
    report.update(mode=mode, landlock_abi=abi, uid=uid, seccomp_notify=syscall_filter.notify)

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child ends in execve or _exit
        try:
            ours.close()
            child(cfg, root, (uid, gid), (rules, abi, syscall_filter), theirs)
        except BaseException as exc:
            send_setup_error(theirs, str(exc) if isinstance(exc, SetupError) else repr(exc))
        os._exit(127)
    theirs.close()
    failure, listener = read_setup(ours)
    ours.close()
    refusals = Refusals(listener)
    try:
        deadline = started + max(0.1, cfg["wall_seconds"])
        status, usage, timed_out = supervise(pid, deadline, refusals)
    finally:
        refusals.close()
    report.update(
        elapsed=round(time.monotonic() - started, 3),
        timed_out=timed_out,
        exit_code=os.waitstatus_to_exitcode(status),
        cpu_seconds=round(usage.ru_utime + usage.ru_stime, 3),
        maxrss_kb=usage.ru_maxrss,
        refused=refusals.names,
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
