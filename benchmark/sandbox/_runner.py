"""The runner: executed inside the sandbox as `python -I /.bw/runner.py MARK MAX_IMAGES`.

Standard library (and matplotlib, Pillow when the program uses them) only; never imported by
the server (the zygote imports it and calls serve() in each program process). It runs
/.bw/program.py in /sandbox/work with matplotlib's Agg backend, plt.show()
saving the open figures, and writes /sandbox/out/img-NNN.png (the figures the program showed
or saved, in that order; else the figures still open at the end) and /sandbox/out/status.json.
Nothing here is a security boundary: the program runs in this same process and may undo any of
it; the jail around the process is the boundary. The audit hook only names what failed.
"""

import builtins
import errno
import io
import json
import os
import signal
import sys
import traceback
from typing import Any

OUT = "/sandbox/out"
WORK = "/sandbox/work"
PROGRAM = "/.bw/program.py"
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp", ".tif", ".tiff")
NETWORK_ERRNOS = {
    errno.ENETUNREACH,
    errno.ENETDOWN,
    errno.EHOSTUNREACH,
    errno.ECONNREFUSED,
    errno.EADDRNOTAVAIL,
    errno.EACCES,
    errno.EPERM,
}
NETWORK_EVENTS = {
    "socket.connect",
    "socket.bind",
    "socket.sendto",
    "socket.sendmsg",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.gethostbyaddr",
}


class Run:
    def __init__(self, max_images: int) -> None:
        self.max_images = max_images
        self.pid = os.getpid()
        self.events: list[tuple[str, Any]] = []  # ("figure", png bytes) or ("file", path)
        self.saved_figures: set[int] = set()
        self.network = False
        self.forked = False
        self.savefig: Any = None
        self.inputs = self.file_stamps()  # the input files, there before the program started

    @staticmethod
    def file_stamps() -> dict[str, tuple[int, int, int]]:
        """path -> (inode, size, modification time) of every regular file in the working folder."""
        stamps = {}
        for folder, _dirs, files in os.walk(WORK):
            for name in files:
                path = os.path.join(folder, name)
                try:
                    info = os.lstat(path)
                except OSError:
                    continue
                stamps[path] = (info.st_ino, info.st_size, info.st_mtime_ns)
        return stamps

    def audit(self, event: str, args: Any) -> None:
        if event in NETWORK_EVENTS:
            self.network = True
        elif event in ("os.fork", "os.forkpty", "os.posix_spawn", "subprocess.Popen"):
            self.forked = True

    def figure_png(self, figure: Any) -> bytes:
        buffer = io.BytesIO()
        self.savefig(figure, buffer, format="png")
        return buffer.getvalue()

    def patch_matplotlib(self) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.figure import Figure

        run = self
        self.savefig = Figure.savefig

        def savefig(figure: Any, fname: Any, *args: Any, **kwargs: Any) -> Any:
            run.saved_figures.add(id(figure))
            result = run.savefig(figure, fname, *args, **kwargs)
            if isinstance(fname, str | os.PathLike):
                run.events.append(("file", os.path.abspath(os.fspath(fname))))
            return result

        def show(*args: Any, **kwargs: Any) -> None:
            for number in plt.get_fignums():
                figure = plt.figure(number)
                if id(figure) not in run.saved_figures:
                    run.events.append(("figure", run.figure_png(figure)))
            plt.close("all")

        Figure.savefig = savefig  # type: ignore[method-assign,assignment]
        plt.show = show

    def open_figures(self) -> list[bytes]:
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None or self.savefig is None:
            return []
        figures = [plt.figure(n) for n in plt.get_fignums()]
        return [self.figure_png(f) for f in figures if id(f) not in self.saved_figures]

    def image_files(self) -> list[str]:
        """Image files the program wrote in the working folder, oldest first; an input file
        it left as it was is not one."""
        found = []
        for path, stamp in self.file_stamps().items():
            name = os.path.basename(path)
            image = name.lower().endswith(IMAGE_SUFFIXES) and not os.path.islink(path)
            if image and self.inputs.get(path) != stamp:
                found.append((stamp[2], path))
        return [path for _, path in sorted(found)]

    def images(self) -> list[bytes]:
        ordered: list[tuple[str, Any]] = []
        seen_files: set[str] = set()
        for kind, value in self.events:
            if kind == "file":
                if value in seen_files:
                    continue
                seen_files.add(value)
            ordered.append((kind, value))
        ordered += [("file", p) for p in self.image_files() if p not in seen_files]
        images = [png for png in (self.to_png(k, v) for k, v in ordered) if png]
        return images or self.open_figures()

    def to_png(self, kind: str, value: Any) -> bytes | None:
        if kind == "figure":
            return value
        if not os.path.isfile(value) or os.path.islink(value):
            return None
        with open(value, "rb") as fh:
            data = fh.read()
        if data.startswith(b"\x89PNG\r\n\x1a\n"):
            return data
        try:
            from PIL import Image

            with Image.open(io.BytesIO(data)) as image:
                buffer = io.BytesIO()
                image.convert("RGBA").save(buffer, format="PNG")
                return buffer.getvalue()
        except Exception:
            return None

    def classify(self, exc: BaseException) -> tuple[str, str]:
        text = traceback.format_exception_only(type(exc), exc)[-1].strip()
        if isinstance(exc, MemoryError):
            return "memory", text
        if isinstance(exc, OSError):
            name_lookup = type(exc).__module__ == "socket"  # gaierror, herror
            if self.network and (name_lookup or exc.errno in NETWORK_ERRNOS):
                return "forbidden", "network"
            if self.forked and isinstance(exc, BlockingIOError):
                return "forbidden", "processes"
            filename = exc.filename if isinstance(exc.filename, str) else ""
            if filename and isinstance(exc, FileNotFoundError | PermissionError):
                absolute = os.path.abspath(filename)
                if not absolute.startswith(("/sandbox/", "/.bw/")):
                    return "forbidden", f"files:{absolute}"
        return "error", text

    def write_status(self, status: dict[str, Any]) -> None:
        with open(os.path.join(OUT, "status.json"), "w") as fh:
            json.dump(status, fh)


def _execute(run: Run, source: str) -> dict[str, Any]:
    if "matplotlib" in source or "pyplot" in source:
        run.patch_matplotlib()
    sys.argv = ["program.py"]
    namespace = {"__name__": "__main__", "__file__": "program.py", "__builtins__": builtins}
    try:
        code = compile(source, "program.py", "exec")
        exec(code, namespace)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            return {"kind": "error", "error": f"SystemExit: {exc.code}"}
    except BaseException as exc:
        if os.getpid() != run.pid:
            raise
        traceback.print_exception(
            type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None
        )
        kind, error = run.classify(exc)
        return {"kind": kind, "error": error}
    return {"kind": "ok"}


def main() -> None:
    with open(PROGRAM, encoding="utf-8", errors="replace") as fh:
        source = fh.read()
    serve(source, int(sys.argv[2]))


def serve(source: str, max_images: int) -> None:
    """Run `source` as the program and write the results; ends the process (os._exit). The
    zygote (_zygote.py) calls this in each forked program process."""
    run = Run(max_images=max_images)
    sys.addaudithook(run.audit)

    def on_cpu_limit(signum: int, frame: Any) -> None:
        # As pid 1 of its namespace the runner would ignore SIGXCPU; the hard limit (one second
        # later) kills it anyway, this only stops it sooner and says why.
        run.write_status({"kind": "timeout", "error": "cpu"})
        os._exit(1)

    signal.signal(signal.SIGXCPU, on_cpu_limit)
    exit_code = 1
    try:
        exit_code = _run_and_collect(run, source)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        if os.getpid() != run.pid:
            os._exit(1)
    os._exit(exit_code)


def _run_and_collect(run: Run, source: str) -> int:
    """Run the program, write its images and status; the exit code (0 when it succeeded)."""
    try:
        status = _execute(run, source)
        if os.getpid() != run.pid:
            return 1
        exit_code = 1
        if status["kind"] == "ok":
            images = run.images()
            for index, png in enumerate(images[: run.max_images]):
                with open(os.path.join(OUT, f"img-{index:03d}.png"), "wb") as fh:
                    fh.write(png)
            status.update(images=len(images))
            exit_code = 0
        run.write_status(status)
        return exit_code
    except MemoryError:
        if os.getpid() == run.pid:
            run.write_status({"kind": "memory", "error": "MemoryError"})
    except Exception as exc:
        traceback.print_exc()
        if os.getpid() == run.pid:  # an exception in a process the program forked: not ours
            text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            run.write_status({"kind": "error", "error": f"collecting the figures failed: {text}"})
    return 1


if __name__ == "__main__":
    main()
