"""Agentic-MME Gen mode: the model's ``<code>`` blocks run in Benchwright's sandbox
(:mod:`benchmark.sandbox`) with the task's images, and the images they save become the run's
artifacts.

Each code block becomes one sandbox program: a prologue writes the input images (``orig.png``,
or ``orig_0.png``, ``orig_1.png``, ... with several) and the artifacts of earlier turns the code
may read (``tool_images/transformed_image_N.png``, :func:`needed_images`) into the sandbox's
working folder and sets the
environment variables the released prompt names (``ORIGINAL_IMAGE_PATH``,
``PROCESSED_IMAGE_SAVE_PATH``, ``LOCAL_INPUT_IMAGE_PATH``); the model's code runs with
``exec`` (an exception is printed as a traceback, the way a script's error would be, and the
run goes on to collect what was saved); an epilogue prints a manifest of the files in
``tool_images/`` with their sha256, which matches the images the sandbox hands back to the
files they were saved as. New or changed ``transformed_image_N.png`` files become image N.

The inputs travel inside the program text, so their PNGs together must fit the sandbox's
program limit (1 MB, :data:`benchmark.sandbox.run.MAX_CODE_BYTES`); a block whose images do not
fit is answered with an error the model and the run both see.

The event stream follows the released Gen runner: a ``script_exec`` event per executed block
(not counted as a tool call), and one event per image operation found in the code by an AST
tracer (:func:`traced_ops`: PIL methods, ``ImageOps``/``ImageFilter``/``ImageEnhance`` and
OpenCV calls mapped to the atomic operations' names), with ``raw_tool_name``
``python_image_processing``, ``arguments`` ``{op, save, line}`` and the file it was saved to.
Unlike the released tracer, calls inside loops are not expanded to one event per iteration.
"""

from __future__ import annotations

import ast
import base64
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmark.sandbox import SandboxLimits, SandboxResult, run_code
from benchmark.sandbox.run import MAX_CODE_BYTES

from .base import sha256
from .mme_tools import TOOL_IMAGES_DIR, WorkImage, Workspace

MANIFEST = "@@benchwright-manifest@@"
WORK = "/sandbox/work"
_CODE_RE = re.compile(r"<code>(.*?)</code>", re.IGNORECASE | re.DOTALL)
_ARTIFACT_RE = re.compile(r"^transformed_image_(\d+)\.png$", re.IGNORECASE)
GEN_LIMITS = SandboxLimits(
    wall_seconds=60.0,
    cpu_seconds=30,
    memory_mb=1024,
    max_output_bytes=256 * 1024,
    max_image_bytes=40 * 1024 * 1024,
    max_images=64,
    workdir_mb=256,
)

Runner = Callable[[str], SandboxResult]


def default_runner(program: str) -> SandboxResult:
    return run_code(program, limits=GEN_LIMITS)


def extract_code(text: str) -> str:
    """The first ``<code>`` block, without a Markdown fence inside it."""
    match = _CODE_RE.search(text or "")
    if not match:
        return ""
    code = match.group(1).strip()
    code = re.sub(r"^```(?:python|py)?\s*\n?", "", code)
    code = re.sub(r"\n?```\s*$", "", code)
    return code.strip()


# --------------------------------------------------------------------------- the program

_PROLOGUE = """\
import base64 as _bw_b64, hashlib as _bw_hash, json as _bw_json, os as _bw_os
import traceback as _bw_tb
_bw_os.makedirs({tool_dir!r}, exist_ok=True)
for _bw_name, _bw_data in {files!r}.items():
    with open(_bw_name, "wb") as _bw_fh:
        _bw_fh.write(_bw_b64.b64decode(_bw_data))
_bw_os.environ["ORIGINAL_IMAGE_PATH"] = {original!r}
_bw_os.environ["PROCESSED_IMAGE_SAVE_PATH"] = {tool_dir!r}
_bw_os.environ["LOCAL_INPUT_IMAGE_PATH"] = {latest!r}
_bw_failed = False
try:
    exec(compile({code!r}, "model_code.py", "exec"), {{"__name__": "__main__"}})
except BaseException:
    _bw_failed = True
    _bw_tb.print_exc()
_bw_seen = {{}}
for _bw_name in sorted(_bw_os.listdir({tool_dir!r})):
    _bw_path = _bw_os.path.join({tool_dir!r}, _bw_name)
    if _bw_os.path.isfile(_bw_path):
        with open(_bw_path, "rb") as _bw_fh:
            _bw_seen[_bw_name] = _bw_hash.sha256(_bw_fh.read()).hexdigest()
print()
print({marker!r} + _bw_json.dumps({{"files": _bw_seen, "failed": _bw_failed}}))
"""


def build_program(code: str, workspace: Workspace) -> str:
    """The sandbox program for one code block (see the module docstring)."""
    tool_dir = f"{WORK}/{TOOL_IMAGES_DIR}"
    files = {
        f"{WORK}/{image.path}": base64.b64encode(image.data).decode("ascii")
        for image in needed_images(code, workspace)
    }
    return _PROLOGUE.format(
        tool_dir=tool_dir,
        files=files,
        original=f"{WORK}/{workspace.images[0].path}",
        latest=f"{WORK}/{workspace.images[-1].path}",
        code=code,
        marker=MANIFEST,
    )


_LISTS_FILES = re.compile(
    r"listdir|scandir|glob|walk|LOCAL_INPUT_IMAGE_PATH|_image_(?:\{|%|[\"']\s*\+)"
)


def needed_images(code: str, workspace: Workspace) -> list[WorkImage]:
    """The images a block gets: the inputs always; an earlier result when the code names its
    file, or may reach it by a computed name or a folder listing (all of them then)."""
    if _LISTS_FILES.search(code):
        return list(workspace.images)
    return [
        image
        for image in workspace.images
        if image.index < workspace.inputs or image.path.split("/")[-1] in code
    ]


@dataclass
class CodeRun:
    """What one code block did."""

    ok: bool
    stdout: str
    stderr: str
    new_images: list[WorkImage] = field(default_factory=list)
    problem: str = ""
    notes: list[str] = field(default_factory=list)

    def observation(self) -> str:
        """The text the model reads after the block, as released."""
        parts = []
        if self.problem:
            parts.append(f"[Code error]\n{self.problem}")
        elif self.ok:
            out = self.stdout.strip()
            parts.append(
                f"[Code output]\n{out[:2000]}" if out else "[Code executed successfully, no output]"
            )
        else:
            parts.append(f"[Code error]\n{(self.stderr or self.stdout)[-2000:]}")
            if self.stdout.strip():
                parts.append(f"[Code output]\n{self.stdout.strip()[:2000]}")
        parts += self.notes
        if self.new_images:
            names = ", ".join(f"Image {i.index}: {i.path.split('/')[-1]}" for i in self.new_images)
            parts.append(f"[New images: {names}]")
        return "\n".join(parts)


def _split_manifest(stdout: str) -> tuple[str, dict[str, Any] | None]:
    head, sep, tail = stdout.rpartition(MANIFEST)
    if not sep:
        return stdout, None
    try:
        manifest = json.loads(tail.strip().splitlines()[0])
    except (ValueError, IndexError):
        return head, None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        return head, None
    return head.rstrip("\n"), manifest


def run_block(code: str, workspace: Workspace, turn: int, runner: Runner) -> CodeRun:
    """Run one code block; its new ``transformed_image_N.png`` files join the workspace."""
    program = build_program(code, workspace)
    if len(program.encode("utf-8")) > MAX_CODE_BYTES:
        size = len(program.encode("utf-8")) / 1e6
        return CodeRun(
            False,
            "",
            "",
            problem=f"the task's images and earlier results ({size:.1f} MB as program text) do "
            f"not fit the sandbox's {MAX_CODE_BYTES // (1024 * 1024)} MB program limit; "
            "this block was not run",
        )
    result = runner(program)
    if result.kind not in ("ok", "no_figure"):
        return CodeRun(False, result.stdout, result.stderr, problem=result.reason)
    stdout, manifest = _split_manifest(result.stdout)
    if manifest is None:
        problem = "the program's output was too long to read which images it saved"
        return CodeRun(False, stdout, result.stderr, problem=problem)
    run = CodeRun(not manifest.get("failed"), stdout, result.stderr)
    _collect(run, manifest["files"], result.images, workspace, turn)
    return run


def _collect(
    run: CodeRun,
    manifest: dict[str, str],
    images: Sequence[bytes],
    workspace: Workspace,
    turn: int,
) -> None:
    by_hash = {sha256(data): data for data in images}
    before = {
        i.path.split("/")[-1]: i.sha256 for i in workspace.images if i.index >= workspace.inputs
    }
    for name in sorted(manifest, key=_artifact_number):
        digest = manifest[name]
        if before.get(name) == digest:
            continue
        if not _ARTIFACT_RE.match(name):
            run.notes.append(f"[{name} is not named transformed_image_N.png; it is not shown]")
            continue
        data = by_hash.get(digest)
        if data is None:
            run.notes.append(f"[{name} was not saved as a PNG file; it is not shown]")
            continue
        number = _artifact_number(name)
        workspace.artifacts = max(workspace.artifacts, number)
        image = workspace.add(data, f"generated in turn {turn}", name=name, source=f"turn {turn}")
        run.new_images.append(image)


def _artifact_number(name: str) -> int:
    match = _ARTIFACT_RE.match(name)
    return int(match.group(1)) if match else 10**9


# --------------------------------------------------------------------------- tracing


_METHODS = {
    "crop": "crop",
    "rotate": "rotate",
    "resize": "resize",
    "thumbnail": "resize",
    "transpose": "flip",
    "enhance": "enhance",
    "point": "threshold",
}
_MODULE_CALLS = {
    "imageops.grayscale": "grayscale",
    "imageops.autocontrast": "autocontrast",
    "imageops.invert": "invert",
    "imageops.equalize": "equalize",
    "imageops.mirror": "flip",
    "imageops.flip": "flip",
    "cv2.canny": "edge_detect",
    "cv2.sobel": "edge_detect",
    "cv2.laplacian": "edge_detect",
    "cv2.threshold": "threshold",
    "cv2.adaptivethreshold": "threshold",
    "cv2.gaussianblur": "blur",
    "cv2.blur": "blur",
    "cv2.medianblur": "denoise",
    "cv2.fastnlmeansdenoising": "denoise",
    "cv2.fastnlmeansdenoisingcolored": "denoise",
    "cv2.equalizehist": "equalize",
    "cv2.flip": "flip",
    "cv2.rotate": "rotate",
    "cv2.warpaffine": "rotate",
    "cv2.resize": "resize",
    "cv2.bitwise_not": "invert",
}
_FILTERS = (
    ("gaussianblur", "blur"),
    ("boxblur", "blur"),
    ("blur", "blur"),
    ("unsharpmask", "sharpen"),
    ("sharpen", "sharpen"),
    ("medianfilter", "denoise"),
    ("find_edges", "edge_detect"),
    ("edge", "edge_detect"),
)
_SAVE_METHODS = ("save", "imwrite", "savefig")


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts)).lower()


def _call_op(node: ast.Call) -> str | None:
    name = _dotted(node.func)
    for key, op in _MODULE_CALLS.items():
        if name == key or name.endswith("." + key):
            return op
    if not isinstance(node.func, ast.Attribute) or name.startswith("cv2."):
        return None
    method = node.func.attr.lower()
    if method == "filter" and node.args:
        text = ast.unparse(node.args[0]).lower()
        return next((op for key, op in _FILTERS if key in text), None)
    if method == "convert" and node.args:
        first = node.args[0]
        if isinstance(first, ast.Constant) and first.value in ("L", "LA"):
            return "grayscale"
    return _METHODS.get(method)


def _file_name(node: ast.AST) -> str:
    """The image file name a save call writes, when it can be read from the code."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.replace("\\", "/").split("/")[-1]
    if isinstance(node, ast.JoinedStr):
        text = "".join(str(v.value) if isinstance(v, ast.Constant) else "{}" for v in node.values)
        return text.split("/")[-1]
    if isinstance(node, ast.BinOp):
        return _file_name(node.right)
    if isinstance(node, ast.Call) and node.args:
        return _file_name(node.args[-1])
    return ""


def _save_target(node: ast.Call) -> str | None:
    if not isinstance(node.func, ast.Attribute) or node.func.attr.lower() not in _SAVE_METHODS:
        return None
    if not node.args:
        return ""
    return _file_name(node.args[0])


def traced_ops(code: str) -> list[dict[str, Any]]:
    """The image operations in ``code``, in source order: ``{op, line, save}``, where
    ``save`` is the file name of the first save call on or after the operation's line (empty
    when none can be read)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found: list[tuple[int, int, str]] = []
    saves: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        target = _save_target(node)
        if target is not None:
            saves.append((node.lineno, target))
            continue
        op = _call_op(node)
        if op is not None:
            found.append((node.lineno, node.col_offset, op))
    saves.sort()
    out = []
    for line, _col, op in sorted(found):
        save = next((name for at, name in saves if at >= line), "")
        out.append({"op": op, "line": line, "save": save})
    return out
