"""Input files of the code sandbox (run_code's `files`): written into the working folder before
the program starts, where the program reads and changes them; a name that would leave the
working folder, or more than the total limit, is refused with a message naming it and nothing
runs; and no file of one run reaches the next. Every run test runs against the warm zygote
and the one-shot jail, as tests/benchmark/sandbox/test_sandbox.py does."""

import hashlib
import io
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from benchmark.sandbox import SandboxLimits, _jail, run_code
from benchmark.sandbox.run import (
    MAX_CODE_BYTES,
    MAX_FILE_DEPTH,
    MAX_FILES,
    MAX_FILES_BYTES,
    ZYGOTE_ENV,
    SandboxFilesError,
    check_files,
    shutdown,
    zygote_pids,
)
from tests.required import missing

pytestmark = pytest.mark.slow

FAST = SandboxLimits(wall_seconds=10.0, cpu_seconds=4, memory_mb=512)
MB = 1024 * 1024


@pytest.fixture(scope="module", autouse=True, params=["zygote", "one-shot"])
def sandbox_mode(request: pytest.FixtureRequest) -> Iterator[str]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ZYGOTE_ENV, "1" if request.param == "zygote" else "0")
        yield request.param
        shutdown()
    assert zygote_pids() == []


@pytest.fixture(scope="module", autouse=True)
def _sandbox_available(sandbox_mode: str) -> None:
    result = run_code("print('ready')", limits=FAST)
    if result.kind == "unavailable":
        missing(f"the sandbox is unavailable here: {result.reason}")


def png(size: tuple[int, int], colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, "PNG")
    return buffer.getvalue()


def noise_png(side: int) -> bytes:
    """A PNG that does not compress: about 3 bytes a pixel."""
    buffer = io.BytesIO()
    Image.frombytes("RGB", (side, side), os.urandom(side * side * 3)).save(buffer, "PNG")
    return buffer.getvalue()


# --- The program reads them -------------------------------------------------------------


def test_the_program_reads_its_files_where_it_runs_and_may_change_them():
    code = (
        "import os, hashlib\n"
        "print(os.getcwd(), sorted(os.listdir('.')), os.listdir('tool_images'))\n"
        "print(open('notes/a.txt').read())\n"
        "print(hashlib.sha256(open('big.bin', 'rb').read()).hexdigest())\n"
        "st = os.stat('notes/a.txt')\n"
        "print(st.st_uid == os.geteuid(), oct(st.st_mode & 0o777))\n"
        "open('notes/a.txt', 'a').write(' and more')\n"
        "print(open('notes/a.txt').read())\n"
        "os.remove('big.bin')\n"
        "open('tool_images/new.txt', 'w').write('x')\n"
        "print(sorted(os.listdir('.')), sorted(os.listdir('tool_images')))\n"
    )
    big = os.urandom(3 * MB)  # over the program limit: it could never travel inside the text
    files = {"notes/a.txt": b"hello", "big.bin": big, "tool_images/keep.txt": b"k"}
    result = run_code(code, limits=FAST, files=files)
    assert result.kind == "no_figure", (result.reason, result.stderr)
    assert result.stdout.splitlines() == [
        "/sandbox/work ['big.bin', 'notes', 'tool_images'] ['keep.txt']",
        "hello",
        hashlib.sha256(big).hexdigest(),
        "True 0o600",
        "hello and more",
        "['notes', 'tool_images'] ['keep.txt', 'new.txt']",
    ]


def test_an_image_over_the_program_limit_is_read_and_only_what_the_program_wrote_comes_back():
    photo = noise_png(700)  # about 1.5 MB
    assert len(photo) > MAX_CODE_BYTES
    code = (
        "from PIL import Image\n"
        "img = Image.open('orig.png')\n"
        "print(img.size)\n"
        "img.crop((0, 0, 10, 20)).save('tool_images/transformed_image_1.png')\n"
    )
    files = {"orig.png": photo, "tool_images/transformed_image_0.png": png((4, 4), (9, 9, 9))}
    result = run_code(code, limits=FAST, files=files)
    assert result.kind == "ok", (result.reason, result.stderr)
    assert result.stdout == "(700, 700)\n"
    # The inputs it left as they were are not results; the crop is.
    assert [Image.open(io.BytesIO(i)).size for i in result.images] == [(10, 20)]


def test_an_input_image_the_program_rewrites_is_a_result():
    code = "from PIL import Image\nImage.new('RGB', (3, 5)).save('orig.png')\n"
    result = run_code(code, limits=FAST, files={"orig.png": png((8, 8), (1, 2, 3))})
    assert result.kind == "ok", result.reason
    assert [Image.open(io.BytesIO(i)).size for i in result.images] == [(3, 5)]


def test_the_files_do_not_take_the_programs_working_space():
    """The working folder's tmpfs grows by the files' size: the program still has its whole
    `workdir_mb` to write in."""
    limits = SandboxLimits(wall_seconds=10, cpu_seconds=4, workdir_mb=2)
    code = "open('out.bin', 'wb').write(b'x' * (1024 * 1024 + 512 * 1024))\nprint('wrote')\n"
    result = run_code(code, limits=limits, files={"in.bin": bytes(3 * MB)})
    assert (result.kind, result.stdout) == ("no_figure", "wrote\n"), result.reason
    over = code.replace("1024 * 1024 + 512 * 1024", "3 * 1024 * 1024")
    result = run_code(over, limits=limits, files={"in.bin": bytes(3 * MB)})
    assert result.kind == "error" and "No space left on device" in result.reason


# --- Names and sizes --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("../outside.txt", "has an empty, '.' or '..' part"),
        ("a/../../outside.txt", "has an empty, '.' or '..' part"),
        ("/etc/passwd", "is absolute"),
        ("a//b", "has an empty, '.' or '..' part"),
        ("./a", "has an empty, '.' or '..' part"),
        ("a/", "has an empty, '.' or '..' part"),
        ("", "is empty"),
        ("a\x00b", "holds a control character"),
        ("a\nb", "holds a control character"),
        ("\ud800", "is not valid UTF-8 text"),
        ("/".join(["d"] * (MAX_FILE_DEPTH + 1)), f"is more than {MAX_FILE_DEPTH} folders deep"),
        ("x" * 256, "has a part longer than 255 bytes"),
        ("/".join(["y" * 200] * 6), "is longer than 1024 bytes"),
    ],
)
def test_a_name_outside_the_working_folder_is_refused_naming_it_and_nothing_runs(name, why):
    code = "print('RAN')\nopen('/sandbox/work/x', 'w')\n"
    result = run_code(code, limits=FAST, files={"ok.txt": b"1", name: b"secret"})
    assert (result.ok, result.kind, result.stdout) == (False, "error", "")
    assert result.reason.startswith(f"input file name {name!r} {why}")
    with pytest.raises(SandboxFilesError, match="input file name"):
        check_files({name: b""})


def test_names_at_the_limits_are_accepted():
    deep = "/".join(["d"] * (MAX_FILE_DEPTH - 1)) + "/" + "é" * 127  # 254 bytes in the last part
    code = f"print(len(open({deep!r}).read()))\n"
    result = run_code(code, limits=FAST, files={deep: b"abc", "-rf": b"", "a b.png": b""})
    assert (result.kind, result.stdout) == ("no_figure", "3\n"), result.reason


def test_other_bad_files_are_refused_with_a_clear_message():
    cases = [
        ({"a": b"1", "a/b": b"2"}, "input file 'a/b' clashes with another input file"),
        ({"a/b": b"1", "a": b"2"}, "input file 'a' clashes with another input file"),
        ({"a.txt": "text"}, "input file 'a.txt' is not bytes"),
        ({f"f{n}": b"" for n in range(MAX_FILES + 1)}, f"{MAX_FILES + 1} input files, over"),
        (["a.txt"], "the input files must be a mapping"),
    ]
    for files, reason in cases:
        result = run_code("print('RAN')", limits=FAST, files=files)  # type: ignore[arg-type]
        assert (result.kind, result.stdout) == ("error", ""), files
        assert result.reason.startswith(reason), result.reason


def test_more_than_the_total_limit_is_refused_and_the_limit_itself_runs():
    half = MAX_FILES_BYTES // 2
    over = run_code("print('RAN')", limits=FAST, files={"a": bytes(half), "b": bytes(half + 1)})
    assert (over.kind, over.stdout) == ("error", "")
    assert over.reason == (
        "the input files are 67,108,865 bytes in all, over the sandbox's limit of "
        "67,108,864 bytes (64 MB)"
    )
    code = "import os\nprint(os.path.getsize('a') + os.path.getsize('b'))\n"
    limits = SandboxLimits(wall_seconds=30, cpu_seconds=10, workdir_mb=1)
    at = run_code(code, limits=limits, files={"a": bytes(half), "b": bytes(half)})
    assert (at.kind, at.stdout) == ("no_figure", f"{MAX_FILES_BYTES}\n"), at.reason


# --- Nothing leaks between runs -----------------------------------------------------------


def test_files_of_one_run_never_reach_the_next(sandbox_mode):
    first = run_code(
        "open('mine.txt', 'w').write('mine')\nprint(sorted(__import__('os').listdir('.')))\n",
        limits=FAST,
        files={"secret.txt": b"one", "tool_images/transformed_image_1.png": b"x"},
    )
    assert first.stdout == "['mine.txt', 'secret.txt', 'tool_images']\n", first.reason
    zygotes = zygote_pids()
    look = (
        "import os\n"
        "print(sorted(os.listdir('.')))\n"
        "print(os.path.exists('/sandbox/work/secret.txt'), os.path.exists('tool_images'))\n"
    )
    alone = run_code(look, limits=FAST)
    assert alone.stdout == "[]\nFalse False\n", alone.reason
    other = run_code(look, limits=FAST, files={"other.txt": b"two"})
    assert other.stdout == "['other.txt']\nFalse False\n", other.reason
    if sandbox_mode == "zygote":
        assert zygote_pids() == zygotes  # the same zygote ran all three


def test_a_program_cannot_reach_the_host_through_its_files(monkeypatch):
    """The files are plain copies in the run's tmpfs: a link among them leads nowhere outside
    it, and the server's copy (a one-shot run's folder) is gone after the run."""
    made: list[str] = []
    mkdtemp = tempfile.mkdtemp

    def recording(*args, **kwargs):
        made.append(mkdtemp(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(tempfile, "mkdtemp", recording)
    code = (
        "import os\n"
        "os.symlink('/etc/passwd', 'link')\n"
        "try:\n"
        "    print(open('link').read()[:4])\n"
        "except OSError as exc:\n"
        "    print('refused', type(exc).__name__)\n"
        "open('a.txt', 'w').write('changed')\n"
        "print(os.listdir('/sandbox'), os.path.realpath('a.txt'))\n"
    )
    result = run_code(code, limits=FAST, files={"a.txt": b"original"})
    assert result.stdout.splitlines() == [
        "refused FileNotFoundError",
        "['mpl', 'out', 'work'] /sandbox/work/a.txt",
    ], (result.reason, result.stderr)
    assert [path for path in made if os.path.exists(path)] == []


# --- Writing them (the jail's side, as root, before the program) --------------------------


def test_writing_the_files_follows_no_link_and_replaces_nothing(tmp_path: Path):
    """Defence in depth: the working folder is a fresh tmpfs nobody has written to, but the
    writer itself neither follows a link nor replaces an existing file."""
    outside = tmp_path / "outside"
    outside.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    (work / "a").symlink_to(outside)
    (work / "there.txt").write_bytes(b"before")
    ids = (os.getuid(), os.getgid())
    stream = io.BytesIO(b"xyz")
    with pytest.raises(OSError):
        _jail.write_inputs(str(work), [["a/b.txt", 3]], stream.read, ids)
    assert list(outside.iterdir()) == []
    with pytest.raises(FileExistsError):
        _jail.write_inputs(str(work), [["there.txt", 3]], io.BytesIO(b"xyz").read, ids)
    assert (work / "there.txt").read_bytes() == b"before"
    with pytest.raises(_jail.SetupError, match="has an empty, '.' or '..' part"):
        _jail.write_inputs(str(work), [["../escape", 1]], io.BytesIO(b"x").read, ids)
    assert not (tmp_path / "escape").exists()
    with pytest.raises(_jail.SetupError, match="over the 67108864 bytes limit"):
        _jail.write_inputs(str(work), [["big", MAX_FILES_BYTES + 1]], io.BytesIO().read, ids)
    with pytest.raises(_jail.SetupError, match="'short.txt' ended early"):
        _jail.write_inputs(str(work), [["short.txt", 5]], io.BytesIO(b"ab").read, ids)
    _jail.write_inputs(str(work), [["new/c.txt", 3]], io.BytesIO(b"abc").read, ids)
    assert (work / "new" / "c.txt").read_bytes() == b"abc"


def test_images_larger_in_all_than_64_mb_come_back_when_the_working_folder_holds_them():
    """A run's images come out of its tmpfs, so what may come back grows with `workdir_mb` and
    the input files (Agentic-MME Gen mode saves several crops of a photo of some MB)."""
    code = (
        "import io\n"
        "from PIL import Image\n"
        "buffer = io.BytesIO()\n"
        "Image.new('RGB', (2, 3)).save(buffer, 'PNG')\n"
        "for n in range(4):\n"
        "    with open(f'big_{n}.png', 'wb') as fh:\n"
        "        fh.write(buffer.getvalue() + bytes(20 * 1024 * 1024))\n"
    )
    limits = SandboxLimits(wall_seconds=30, cpu_seconds=10, workdir_mb=200, max_image_bytes=25 * MB)
    result = run_code(code, limits=limits, files={"orig.png": bytes(MB)})
    assert result.kind == "ok", result.reason
    assert [len(image) // MB for image in result.images] == [20, 20, 20, 20]
