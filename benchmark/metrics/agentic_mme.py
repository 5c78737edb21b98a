"""Agentic-MME run scoring: Acc, S, V (split into V_tool and V_true), tool calls, the efficiency
penalty and Overthink, aggregates per level, and the paper's failure-mode taxonomy. No Django.

Mirrors the released scorer, ``evaluation/eval_runs_search.py`` and ``verifiers.py`` in
ChoS3nE11ven/Agentic-MME, where the paper (§2.2, App. A, App. E) and the code agree, and says
where it differs.

**Acc** (``check_final_answer_only``): the answer is first taken from ``<answer>...</answer>`` if
present (the released runners do this before writing ``model_answer.txt``), then stripped.

* ``exact``: equal strings after stripping (case-sensitive, as released);
* ``contains`` (the default): case-insensitive substring; a golden value of one or two digits
  must appear as a whole number (``\\b``), preferably in an "answer is ..." phrase, so "1" does
  not match "2017";
* ``numeric``: ``float(answer)`` within ``tolerance`` of the golden value (the whole answer must
  be a number: "1,284.50" or "$1284.50" fail, as released);
* anything else: case-insensitive substring.

Accepted variants: ``golden_answer.accepted_variants`` (a list, as Benchwright's task files write
it; ``accepted_answers`` is read too; our extension, the released schema has none) and the ``accepted=`` argument; the answer is correct if it matches the golden value or
any variant under the same match type.

**S** (search checkpoints). Released: a ``google_search`` checkpoint goes to an LLM judge with all
not-yet-used search queries and results, ``google_lens_search`` passes on any unused Lens call,
other tools fail. Here the judge is the injected ``search_check(checkpoint, queries, contexts)``;
without one, a proxy for the judge's decisive "stage 2": the checkpoint passes if some unused
search result text contains the expected finding (``search_check.expected``, else the
description's "(expected to find: X)"), compared case- and whitespace-insensitively. With no
expected finding known the result is undetermined (counted as not passed). As released, the
matched call is the *first* unused search, and each tool call satisfies at most one checkpoint.

**V** (visual checkpoints without ``answer_check``): as released, a checkpoint with both a
``code_check`` and a ``visual_check`` needs both. We report the halves separately:

* **V_tool** (the tool intent): ``verify_<op>_ast`` verifiers for crop, rotate, resize, enhance
  and flip pass on the first call of that op (any call, not only unused ones: the released
  ``require_op``); failing that, the first unused call of the op named in the verifier; failing
  that, the first unused call of a tool in ``tools``. An empty verifier passes (released quirk).
* **V_true** (the artifact shows the evidence), any-pass over the run's produced images
  (App. A.2). With an injected ``visual_check(image_path, question, expected) -> bool | None``:
  passed if any image gets True; undetermined if none is True and some are None. Without a
  judge, a geometric proxy: the reference trajectory is rebuilt from the checkpoints (each
  V checkpoint with an image op makes the next image from ``code_check.image_index``, or from
  the latest image when that is missing), so every checkpoint's reference artifact is known as a
  region of the original image plus an orientation (the D4 group of 90-degree turns and flips).
  The agent's images get the same from their logged calls. A checkpoint passes if an agent image
  derived through one of the checkpoint's ops has the reference orientation and its region
  overlaps the reference region with IoU >= 0.5, or covers >= 90% of it while being at most
  25 times its area (:class:`ProxyThresholds`). Photometric ops keep the frame, resize keeps
  normalized coordinates, rotations other than multiples of 90 degrees make the frame unknown
  (undetermined). The proxy cannot judge legibility (a dark crop of the right place passes).

**Tool calls** C_agent: ``effective_tool_calls`` from ``run_meta.json`` when given (the released
scorer's source); otherwise the logged events minus ``script_exec`` events (Gen mode's per-turn
code runs, which the released runner leaves out) and ``declared_only`` ones (nothing ran).
**Penalty** ``min(1, max(0, C_agent - C_ref) * penalty_per_extra_call)``, 1 when ``max_tool_calls``
is exceeded. **Overthink** (paper, App. A.3): ``max(0, C_agent - C_human) / (C_human + 1)`` with
C_human = ``reference_tool_calls``; the released scorer reports ``C_agent / C_human`` instead
(its "overthink ratio") and classifies runs as overthink / underthink / optimal.
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from PIL import Image

from benchmark.imaging import ops

JSON = Mapping[str, Any]
VisualCheck = Callable[[Path, str, str], bool | None]
SearchCheck = Callable[[JSON, Sequence[str], Sequence[str]], bool | None]

SEARCH_TOOLS = ("google_search", "google_lens_search", "fetch_webpage", "download_image")
RELEASED_VERIFIER_OPS = ("crop", "rotate", "resize", "enhance", "flip")
"""The ops the released ``verify_<op>_ast`` verifiers map to (``ast_ops.PRIMITIVES``)."""
IMAGE_FILE_SUFFIXES = (".png", ".jpg", ".jpeg")

# --------------------------------------------------------------------------- answers

_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)
_ANSWER_UNCLOSED_RE = re.compile(r"<answer>(.*)", re.IGNORECASE | re.DOTALL)
_FINAL_ANSWER_PATTERNS = (
    r"therefore[,\s]+(?:the\s+)?answer\s+is\s+([^\.\n]+)",
    r"(?:the\s+)?answer\s+is\s+([^\.\n]+)",
    r"answer:\s*([^\.\n]+)",
    r"final\s+answer:\s*([^\.\n]+)",
)


def extract_answer(text: str) -> str:
    """The text inside ``<answer>`` (closed or not), else the whole text, stripped."""
    raw = text or ""
    for pattern in (_ANSWER_RE, _ANSWER_UNCLOSED_RE):
        match = pattern.search(raw)
        if match:
            return (match.group(1) or "").strip()
    return raw.strip()


def answer_matches(
    answer: str, golden: str, match_type: str = "contains", tolerance: float = 0.0
) -> bool:
    """One candidate against one golden value, as the released ``check_final_answer_only``."""
    ans = (answer or "").strip()
    value = str(golden).strip()
    if match_type == "exact":
        return ans == value
    if match_type == "numeric":
        try:
            return abs(float(ans) - float(value)) <= tolerance
        except ValueError:
            return False
    if match_type == "contains":
        is_numeric = value.replace(".", "").replace("-", "").replace("+", "").isdigit()
        if is_numeric and len(value) <= 2:
            word = r"\b" + re.escape(value) + r"\b"
            for pattern in _FINAL_ANSWER_PATTERNS:
                match = re.search(pattern, ans.lower())
                if match and re.search(word, match.group(1)):
                    return True
            return bool(re.search(word, ans))
    return value.lower() in ans.lower()


def accepted_answers(golden_answer: JSON, extra: Iterable[str] = ()) -> list[str]:
    """The golden value followed by its accepted variants."""
    values = [str(golden_answer.get("value", ""))]
    variants: list[Any] = []
    for key in ("accepted_variants", "accepted_answers"):
        found = golden_answer.get(key) or []
        variants.extend([found] if isinstance(found, str) else found)
    for v in [*variants, *extra]:
        if str(v) not in values:
            values.append(str(v))
    return values


def final_answer_correct(task: JSON, answer: str, accepted: Iterable[str] = ()) -> bool:
    """Acc for one run: the extracted answer matches the golden value or a variant."""
    golden = task.get("golden_answer") or {}
    match_type = str(golden.get("match_type", "contains"))
    tolerance = float(golden.get("tolerance", 0.0) or 0.0)
    ans = extract_answer(answer)
    return any(
        answer_matches(ans, v, match_type, tolerance) for v in accepted_answers(golden, accepted)
    )


def checkpoint_answer_passes(answer_check: JSON, answer: str) -> bool:
    """An ``answer_check`` checkpoint, as the released ``check_answer`` (which differs from
    Acc: ``contains`` is case-sensitive here). Informational; the released scorer leaves
    these checkpoints out of V."""
    ans = extract_answer(answer)
    low = ans.lower()
    match_type = answer_check.get("match_type", "exact")
    target = str(answer_check.get("target", ""))
    if match_type in ("exact", "exact_match"):
        return ans == target
    if match_type == "contains":
        return target in ans
    if match_type == "string":
        return target.lower() in low or low in target.lower()
    if match_type == "numeric":
        try:
            tol = float(answer_check.get("tolerance", 0.0) or 0.0)
            return abs(float(ans) - float(target or "0")) <= tol
        except ValueError:
            return False
    if match_type == "keyword_inclusion":
        keywords = [str(k).lower() for k in answer_check.get("keywords", [])]
        return sum(k in low for k in keywords) >= int(answer_check.get("min_matches", 1))
    if match_type == "extraction_match":
        targets = answer_check.get("targets") or []
        numbers = [float(n) for n in re.findall(r"\d+(?:\.\d+)?", ans)]
        return bool(targets) and all(
            any(
                abs(n - float(t.get("value", "nan"))) <= float(t.get("tolerance", 0))
                for n in numbers
            )
            for t in targets
        )
    return bool(target) and target.lower() in low


# --------------------------------------------------------------------------- events and runs


def is_declared_only(event: JSON) -> bool:
    return bool((event.get("output") or {}).get("declared_only"))


def is_script_exec(event: JSON) -> bool:
    return (event.get("raw_tool_name") or "").lower() == "script_exec" or (
        event.get("tool_name") or ""
    ).lower() == "run_visual_processing_code"


def event_names(event: JSON) -> list[str]:
    """Every name an event answers to: tool_name, raw_tool_name, and arguments' tool_name,
    raw_tool_name and op (Gen mode logs ``python_image_processing`` with ``op``)."""
    names: list[str] = []
    args = event.get("arguments") or {}
    for source, keys in (
        (event, ("tool_name", "raw_tool_name")),
        (args, ("tool_name", "raw_tool_name", "op")),
    ):
        for key in keys:
            value = source.get(key)
            if isinstance(value, str) and value.strip():
                names.append(value.strip().lower())
    return names


def event_op(event: JSON) -> str:
    """The operation an event performed: ``arguments.op`` (Gen mode), else ``tool_name``."""
    args = event.get("arguments") or {}
    op = args.get("op") if isinstance(args.get("op"), str) else ""
    return (op or event.get("tool_name") or "").strip().lower()


def event_ok(event: JSON) -> bool:
    out = event.get("output") or {}
    if not isinstance(out, Mapping):
        return True
    return str(out.get("ok", "true")).lower() not in ("false", "0") and not out.get("error")


def count_tool_calls(events: Sequence[JSON], effective_tool_calls: int | None = None) -> int:
    """C_agent: ``effective_tool_calls`` when the run says it, else events that ran a tool."""
    if effective_tool_calls is not None:
        return int(effective_tool_calls)
    return sum(1 for ev in events if not is_script_exec(ev) and not is_declared_only(ev))


def _natural_key(path: Path) -> tuple[Any, ...]:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.name))


@dataclass(frozen=True)
class RunRecord:
    """One model run: the logged events, the final answer, and where its images are."""

    events: tuple[JSON, ...]
    final_answer: str
    run_dir: Path | None = None
    effective_tool_calls: int | None = None
    run_id: str = ""

    @classmethod
    def from_dir(cls, path: str | Path) -> RunRecord:
        """Read ``tool_use_list.json``, ``model_answer.txt`` and, if present, ``run_meta.json``."""
        run_dir = Path(path)
        files = {
            name: (run_dir / name).read_bytes()
            for name in ("tool_use_list.json", "model_answer.txt", "run_meta.json")
            if (run_dir / name).is_file()
        }
        return cls.from_files(files, run_dir=run_dir, where=str(run_dir / "tool_use_list.json"))

    @classmethod
    def from_files(
        cls,
        files: Mapping[str, bytes],
        *,
        run_dir: Path | None = None,
        run_id: str = "",
        where: str = "tool_use_list.json",
    ) -> RunRecord:
        """The run from its folder's files given as bytes (``{name: bytes}``), as
        :meth:`from_dir` reads them. Without ``run_dir`` the run has no image files to read:
        score it so only where :func:`run_needs_files` says the scorer reads none."""
        raw_events = files.get("tool_use_list.json")
        events = json.loads(raw_events.decode("utf-8")) if raw_events is not None else []
        raw_answer = files.get("model_answer.txt")
        answer = raw_answer.decode("utf-8").strip() if raw_answer is not None else ""
        effective = None
        raw_meta = files.get("run_meta.json")
        if raw_meta is not None:
            meta = json.loads(raw_meta.decode("utf-8"))
            if isinstance(meta, Mapping) and meta.get("effective_tool_calls") is not None:
                effective = int(meta["effective_tool_calls"])
        if not isinstance(events, list):
            raise ValueError(f"{where}: expected a JSON list of events")
        name = run_id or (run_dir.name if run_dir is not None else "")
        return cls(tuple(events), answer, run_dir, effective, name)

    @property
    def tool_calls(self) -> int:
        return count_tool_calls(self.events, self.effective_tool_calls)

    def event_image_path(self, event: JSON) -> Path | None:
        """The image an event wrote, if it exists (relative paths are under ``run_dir``)."""
        out = event.get("output") or {}
        if not isinstance(out, Mapping):
            return None
        for key in ("output_path", "saved_path", "image_path"):
            value = out.get(key)
            if not isinstance(value, str) or not value:
                continue
            path = Path(value)
            candidates = [path] if path.is_absolute() else []
            if self.run_dir is not None:
                if not path.is_absolute():
                    candidates.append(self.run_dir / path)
                candidates.append(self.run_dir / "tool_images" / path.name)
            for candidate in candidates:
                if candidate.is_file():
                    return candidate
        return None

    def produced_images(self) -> list[Path]:
        """Every image the run produced: event outputs in order, then any other image files
        in ``tool_images/`` (the released scorer judges all of them)."""
        seen: dict[Path, None] = {}
        for ev in self.events:
            if is_declared_only(ev):
                continue
            path = self.event_image_path(ev)
            if path is not None:
                seen.setdefault(path.resolve(), None)
        if self.run_dir is not None and (self.run_dir / "tool_images").is_dir():
            files = [
                p
                for p in (self.run_dir / "tool_images").iterdir()
                if p.is_file() and p.suffix.lower() in IMAGE_FILE_SUFFIXES
            ]
            for p in sorted(files, key=_natural_key):
                seen.setdefault(p.resolve(), None)
        return list(seen)


# --------------------------------------------------------------------------- geometry (proxy)


@dataclass(frozen=True)
class Frame:
    """Where an image's pixels come from in the original image (image 0): a point ``(x, y)``
    of this image, on the 0-1000 scale, is ``(a*x + b*y + c, d*x + e*y + f)`` of the original,
    also on the 0-1000 scale. Crops, flips and quarter turns keep this axis-aligned."""

    a: float = 1.0
    b: float = 0.0
    c: float = 0.0
    d: float = 0.0
    e: float = 1.0
    f: float = 0.0

    def then(self, inner: Frame) -> Frame:
        """This frame after an operation whose output point maps to our point by ``inner``."""
        return Frame(
            self.a * inner.a + self.b * inner.d,
            self.a * inner.b + self.b * inner.e,
            self.a * inner.c + self.b * inner.f + self.c,
            self.d * inner.a + self.e * inner.d,
            self.d * inner.b + self.e * inner.e,
            self.d * inner.c + self.e * inner.f + self.f,
        )

    def region(self) -> tuple[float, float, float, float]:
        """The part of the original this image shows, as a 0-1000 box."""
        s = ops.BBOX_SCALE
        xs = (self.c, self.a * s + self.b * s + self.c)
        ys = (self.f, self.d * s + self.e * s + self.f)
        return (min(xs), min(ys), max(xs), max(ys))

    def orientation(self) -> tuple[int, int, int, int]:
        """Signs of the linear part: equal for two images turned and mirrored alike."""

        def sign(v: float) -> int:
            return 0 if abs(v) < 1e-12 else (1 if v > 0 else -1)

        return (sign(self.a), sign(self.b), sign(self.d), sign(self.e))


IDENTITY = Frame()
_S = float(ops.BBOX_SCALE)
_FLIPS = {
    "horizontal": Frame(-1, 0, _S, 0, 1, 0),
    "vertical": Frame(1, 0, 0, 0, -1, _S),
    "both": Frame(-1, 0, _S, 0, -1, _S),
}
_QUARTER_TURNS = {  # counter-clockwise degrees -> output point to input point
    0: IDENTITY,
    90: Frame(0, -1, _S, 1, 0, 0),
    180: Frame(-1, 0, _S, 0, -1, _S),
    270: Frame(0, 1, 0, -1, 0, _S),
}


def frame_after(frame: Frame | None, op: str, params: JSON) -> Frame | None:
    """The frame of ``op``'s output given its input's frame; None when it cannot be told."""
    if frame is None or op not in ops.OPS:
        return None
    if op == "crop":
        bbox = params.get("bbox_2d")
        try:
            x1, y1, x2, y2 = (float(v) for v in bbox)  # type: ignore[union-attr]
        except (TypeError, ValueError):
            return None
        x1, x2 = sorted((min(max(x1, 0.0), _S), min(max(x2, 0.0), _S)))
        y1, y2 = sorted((min(max(y1, 0.0), _S), min(max(y2, 0.0), _S)))
        if x2 <= x1 or y2 <= y1:
            return None
        return frame.then(Frame((x2 - x1) / _S, 0, x1, 0, (y2 - y1) / _S, y1))
    if op == "flip":
        direction = str(params.get("direction") or "horizontal").strip().lower()
        spec = ops.OPS["flip"].param("direction")
        inner = _FLIPS.get(spec.aliases.get(direction, direction))
        return frame.then(inner) if inner is not None else None
    if op == "rotate":
        try:
            angle = float(params.get("angle"))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
        if not math.isfinite(angle) or not float(angle).is_integer() or angle % 90:
            return None
        turn = int(angle) % 360
        if turn in (90, 270) and params.get("expand", True) is False:
            return None  # the canvas keeps its shape, the picture does not fit it
        return frame.then(_QUARTER_TURNS[turn])
    return frame  # resize keeps normalized coordinates; photometric ops keep everything


def box_area(box: Sequence[float]) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def box_intersection(a: Sequence[float], b: Sequence[float]) -> float:
    return box_area((max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])))


def box_iou(a: Sequence[float], b: Sequence[float]) -> float:
    inter = box_intersection(a, b)
    union = box_area(a) + box_area(b) - inter
    return inter / union if union > 0 else 0.0


def box_coverage(target: Sequence[float], by: Sequence[float]) -> float:
    """The share of ``target`` inside ``by``."""
    area = box_area(target)
    return box_intersection(target, by) / area if area > 0 else 0.0


@dataclass(frozen=True)
class ProxyThresholds:
    """When an agent's artifact region counts as showing a reference region."""

    min_iou: float = 0.5
    min_coverage: float = 0.9
    max_area_ratio: float = 25.0

    def passes(self, agent: Sequence[float], reference: Sequence[float]) -> bool:
        if box_iou(agent, reference) >= self.min_iou:
            return True
        ref_area = box_area(reference)
        return (
            ref_area > 0
            and box_coverage(reference, agent) >= self.min_coverage
            and box_area(agent) / ref_area <= self.max_area_ratio
        )


def _checkpoint_ops(cp: JSON) -> list[str]:
    """Image ops a checkpoint asks for: the op in its verifier's name, then its image tools."""
    found: list[str] = []
    verifier = str((cp.get("code_check") or {}).get("verifier") or "").lower()
    for name in sorted(ops.OPS, key=len, reverse=True):
        if name in verifier:
            found.append(name)
            break
    for tool in cp.get("tools") or []:
        name = str(tool).strip().lower()
        if name in ops.OPS and name not in found:
            found.append(name)
    return found


def reference_frames(task: JSON) -> dict[str, Frame | None]:
    """The frame of each V checkpoint's reference artifact, by replaying the checkpoints as
    the human trajectory: each one with an image op makes the next image from
    ``code_check.image_index`` (or from the latest image) with the op's ``code_check``
    parameters (``bbox_2d``, ``angle``, ``direction``)."""
    images: list[Frame | None] = [IDENTITY]
    out: dict[str, Frame | None] = {}
    for cp in (task.get("process_evaluation") or {}).get("checkpoints") or []:
        if cp.get("axis") != "V" or "answer_check" in cp:
            continue
        cp_ops = _checkpoint_ops(cp)
        if not cp_ops:
            continue
        cc = cp.get("code_check") or {}
        index = _as_index(cc.get("image_index"))
        source = images[index] if index is not None and 0 <= index < len(images) else images[-1]
        frame = frame_after(source, cp_ops[0], cc)
        images.append(frame)
        out[str(cp.get("id"))] = frame
    return out


@dataclass(frozen=True)
class AgentImage:
    index: int
    frame: Frame | None
    lineage: frozenset[str]
    event_index: int | None


def agent_images(events: Sequence[JSON]) -> dict[int, AgentImage]:
    """The run's images by index (0 = the input) with their frames and the ops behind them,
    from the logged ``image_index`` / ``new_image_index`` and arguments."""
    images: dict[int, AgentImage] = {0: AgentImage(0, IDENTITY, frozenset(), None)}
    for position, ev in enumerate(events):
        op = event_op(ev)
        if is_declared_only(ev) or op not in ops.OPS or not event_ok(ev):
            continue
        args = ev.get("arguments") or {}
        out = ev.get("output") or {}
        source = _as_index(args.get("image_index", out.get("source_image_index", 0)))
        new = _as_index(out.get("new_image_index"))
        if new is None:
            new = max(images) + 1
        parent = images.get(source) if source is not None else None
        frame = frame_after(parent.frame if parent else None, op, args)
        lineage = (parent.lineage if parent else frozenset()) | {op}
        images[new] = AgentImage(new, frame, lineage, _as_index(ev.get("index", position)))
    return images


def _as_index(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


# --------------------------------------------------------------------------- results


@dataclass
class CheckpointResult:
    id: str
    axis: str
    kind: Literal["search", "visual", "answer", "other"]
    passed: bool
    hit_index: int | None = None
    has_tool_check: bool = False
    tool_passed: bool | None = None
    has_visual_check: bool = False
    visual_passed: bool | None = None
    """None with ``has_visual_check``: undetermined (no judge verdict and no usable proxy)."""
    method: str | None = None
    """How the deciding check ran: judge, bbox_proxy, search_proxy, require_op, ..."""
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RunScore:
    task_id: str
    run_id: str
    level: int | None
    answer: str
    golden: str
    acc: bool
    S: float | None
    V: float | None
    V_tool: float | None
    V_true: float | None
    R: float
    """The released scorer's internal ordering score (share of ordering constraints met; not
    in its output, nor in the paper). As released, a constraint that runs through a V-axis
    answer checkpoint never holds."""
    calls: int
    reference_calls: int
    excess_calls: int
    penalty: float
    exceeded_max: bool
    overthink: float
    """The paper's max(0, C_agent - C_human) / (C_human + 1)."""
    overthink_ratio: float | None
    """The released scorer's C_agent / C_human (None when C_human is 0)."""
    base: float
    pqs: float
    checkpoints: list[CheckpointResult] = field(default_factory=list)
    undetermined: int = 0

    @property
    def overthink_category(self) -> Literal["overthink", "underthink", "optimal"] | None:
        """The released scorer's classification (None when there is no reference)."""
        if self.reference_calls <= 0:
            return None
        if self.calls > self.reference_calls:
            return "overthink"
        if self.calls < self.reference_calls:
            return "underthink"
        return "optimal"

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "checkpoints"}
        out["overthink_category"] = self.overthink_category
        out["checkpoints"] = [c.to_dict() for c in self.checkpoints]
        return out


# --------------------------------------------------------------------------- efficiency


def paper_overthink(c_agent: float, c_human: float) -> float:
    """Paper App. A.3: max(0, C_agent - C_human) / (C_human + 1)."""
    return max(0.0, c_agent - c_human) / (c_human + 1)


def overthink_ratio(c_agent: float, c_human: float) -> float | None:
    """Released scorer: C_agent / C_human, None without a reference."""
    return c_agent / c_human if c_human > 0 else None


def efficiency_penalty(
    c_agent: int, reference_calls: int, penalty_per_extra_call: float, max_tool_calls: int = 0
) -> float:
    """min(1, excess * per-call penalty), or 1 past the task's call budget."""
    if max_tool_calls > 0 and c_agent > max_tool_calls:
        return 1.0
    return min(1.0, max(0, c_agent - reference_calls) * penalty_per_extra_call)


# --------------------------------------------------------------------------- scoring

_EXPECTED_PATTERNS = (
    r"\(expected to find:\s*([^)]+)\)",
    r"\(expected answer:\s*([^)]+)\)",
    r"\(expected:\s*([^)]+)\)",
    r"expected to find:\s*([^\n\)]+)",
    r"expected answer:\s*([^\n\)]+)",
    r"expected:\s*([^\n\)]+)",
)


def expected_finding(cp: JSON) -> str | None:
    """What a search checkpoint expects to find: ``search_check.expected``, else parsed from
    the description the way the released search judge does."""
    sc = cp.get("search_check") or {}
    expected = sc.get("expected") if isinstance(sc, Mapping) else None
    if isinstance(expected, str | int | float) and str(expected).strip():
        return str(expected).strip()
    description = str(cp.get("description") or "")
    for pattern in _EXPECTED_PATTERNS:
        match = re.search(pattern, description, re.IGNORECASE)
        if match:
            return match.group(1).strip().rstrip(".,;:")
    return None


def _squash(text: str) -> str:
    return " ".join(text.casefold().split())


def search_result_text(out: Any) -> str:
    """A search call's output as the S judge reads it (context, text and the raw payload)."""
    return _search_text(out)


def _search_text(out: Any) -> str:
    if not isinstance(out, Mapping):
        return str(out or "")
    parts = [str(out.get(k) or "") for k in ("context", "text")]
    if out.get("raw") is not None:
        parts.append(json.dumps(out["raw"], ensure_ascii=False))
    return "\n".join(p for p in parts if p)


class _Scorer:
    def __init__(
        self,
        task: JSON,
        run: RunRecord,
        visual_check: VisualCheck | None,
        search_check: SearchCheck | None,
        thresholds: ProxyThresholds,
        original_image: Path | None,
    ):
        self.task = task
        self.run = run
        self.events = [ev for ev in run.events if isinstance(ev, Mapping)]
        self.visual_check = visual_check
        self.search_check = search_check
        self.thresholds = thresholds
        self.original_image = original_image
        self.used: set[int] = set()
        self._refs: dict[str, Frame | None] | None = None
        self._agent: dict[int, AgentImage] | None = None
        self._images: list[Path] | None = None

    def live_events(self) -> Iterable[tuple[int, JSON]]:
        for position, ev in enumerate(self.events):
            if not is_declared_only(ev):
                yield _as_index(ev.get("index", position)) or 0, ev

    # ---- S

    def search(self, cp: JSON, result: CheckpointResult) -> None:
        tools = {str(t).lower() for t in cp.get("tools") or []}
        if "google_search" in tools:
            hits = [
                (idx, ev)
                for idx, ev in self.live_events()
                if (ev.get("tool_name") or "").lower() == "google_search"
                and idx not in self.used
                and (ev.get("arguments") or {}).get("query")
            ]
            if not hits:
                result.detail["reason"] = "no unused google_search call"
                return
            queries = [str(ev["arguments"]["query"]) for _, ev in hits]
            contexts = [_search_text(ev.get("output")) for _, ev in hits]
            if self.search_check is not None:
                verdict = self.search_check(cp, queries, contexts)
                result.method = "judge"
            else:
                expected = expected_finding(cp)
                result.method = "search_proxy"
                result.detail["expected"] = expected
                verdict = (
                    None
                    if expected is None
                    else any(_squash(expected) in _squash(c) for c in contexts)
                )
            result.detail["queries"] = queries
            if verdict is None:
                result.detail["undetermined"] = True
            if verdict:
                result.passed = True
                result.hit_index = hits[0][0]
                self.used.add(hits[0][0])
            return
        if "google_lens_search" in tools:
            for idx, ev in self.live_events():
                if (
                    idx not in self.used
                    and (ev.get("tool_name") or "").lower() == "google_lens_search"
                ):
                    result.passed, result.hit_index, result.method = True, idx, "tool_called"
                    self.used.add(idx)
                    return
            result.detail["reason"] = "no unused google_lens_search call"
            return
        result.detail["error"] = "S-axis checkpoint must name google_search or google_lens_search"

    # ---- V_tool

    def tool_check(self, cp: JSON, result: CheckpointResult) -> None:
        result.has_tool_check = True
        verifier = str((cp.get("code_check") or {}).get("verifier") or "").strip()
        low = verifier.lower()
        verifier_op = next((p for p in RELEASED_VERIFIER_OPS if p in low), None)
        hit: int | None = None
        passed = False
        if not verifier:
            passed, result.method = True, "empty_verifier"
        elif verifier.startswith("require_op:") or (
            verifier_op and low.startswith("verify_") and low.endswith("_ast")
        ):
            op = verifier.split(":", 1)[1].strip().lower() if ":" in verifier else verifier_op
            for idx, ev in self.live_events():
                if (ev.get("tool_name") or "").lower() == op or event_op(ev) == op:
                    passed, hit, result.method = True, idx, "require_op"
                    break
        elif verifier.startswith("require_images"):
            parts = verifier.split(":")
            need = int(parts[1]) if len(parts) > 1 and parts[1].strip().isdigit() else 1
            passed = len(self.produced_images()) >= need
            result.method = "require_images"
        if not passed and verifier_op:
            for idx, ev in self.live_events():
                if idx not in self.used and (
                    (ev.get("tool_name") or "").lower() == verifier_op
                    or event_op(ev) == verifier_op
                ):
                    passed, hit, result.method = True, idx, "verifier_op"
                    break
        if not passed:
            tools = {str(t).lower() for t in cp.get("tools") or []}
            for idx, ev in self.live_events():
                if tools and idx not in self.used and tools & set(event_names(ev)):
                    passed, hit, result.method = True, idx, "tools_list"
                    break
        result.tool_passed = passed
        if passed and hit is not None:
            self.used.add(hit)
        result.hit_index = hit

    # ---- V_true

    def produced_images(self) -> list[Path]:
        if self._images is None:
            self._images = self.run.produced_images()
        return self._images

    def visual(self, cp: JSON, result: CheckpointResult) -> None:
        result.has_visual_check = True
        vc = cp.get("visual_check") or {}
        question = str(vc.get("question", ""))
        expected = str(vc.get("expected_answer", ""))
        if self.visual_check is not None:
            images = self.produced_images()
            if not images and self.original_image is not None:
                images = [self.original_image]  # released: judge the input when nothing else
            verdicts: list[dict[str, Any]] = []
            outcome: bool | None = False
            for path in images:
                verdict = self.visual_check(path, question, expected)
                verdicts.append({"image": path.name, "passed": verdict})
                if verdict:
                    outcome = True
                    break
                if verdict is None:
                    outcome = None
            result.visual_passed = outcome
            result.detail["visual"] = {"method": "judge", "images": verdicts}
            result.method = result.method or "judge"
            return
        result.visual_passed, proxy_detail = self.visual_proxy(cp)
        result.detail["visual"] = proxy_detail

    def visual_proxy(self, cp: JSON) -> tuple[bool | None, dict[str, Any]]:
        if self._refs is None:
            self._refs = reference_frames(self.task)
            self._agent = agent_images(self.events)
        assert self._agent is not None
        detail: dict[str, Any] = {"method": "bbox_proxy"}
        reference = self._refs.get(str(cp.get("id")))
        if reference is None:
            detail["reason"] = "reference artifact's region is unknown"
            return None, detail
        wanted = set(_checkpoint_ops(cp))
        ref_box = reference.region()
        detail["reference_region"] = [round(v, 2) for v in ref_box]
        best: tuple[tuple[bool, float, float], dict[str, Any]] | None = None
        for image in self._agent.values():
            if image.index == 0 or image.frame is None or (wanted and not wanted & image.lineage):
                continue
            box = image.frame.region()
            same_turn = image.frame.orientation() == reference.orientation()
            ok = same_turn and self.thresholds.passes(box, ref_box)
            candidate: dict[str, Any] = {
                "image_index": image.index,
                "event_index": image.event_index,
                "region": [round(v, 2) for v in box],
                "iou": round(box_iou(box, ref_box), 4),
                "coverage": round(box_coverage(ref_box, box), 4),
                "same_orientation": same_turn,
            }
            key = (ok, candidate["iou"], candidate["coverage"])
            if best is None or key > best[0]:
                best = (key, candidate)
        if best is not None and best[0][0]:
            detail["match"] = best[1]  # the best of the artifacts that pass
            return True, detail
        detail["closest"] = best[1] if best else None
        return False, detail


def run_needs_files(task: JSON, *, visual_check: VisualCheck | None = None) -> bool:
    """Whether :func:`score_run` reads the run's image files (its ``run_dir``) for ``task``:
    only a visual judge (``visual_check``, shown the produced images or the input) and a
    ``require_images`` verifier (which counts them) do; every other check reads the events
    and the answer alone."""
    if visual_check is not None:
        return True
    pe = task.get("process_evaluation") or {}
    for cp in pe.get("checkpoints") or []:
        if not isinstance(cp, Mapping):
            continue
        verifier = str((cp.get("code_check") or {}).get("verifier") or "").strip()
        if verifier.startswith("require_images"):
            return True
    return False


def score_run(  # noqa: PLR0915
    task: JSON,
    run: RunRecord,
    *,
    visual_check: VisualCheck | None = None,
    search_check: SearchCheck | None = None,
    accepted: Iterable[str] = (),
    thresholds: ProxyThresholds | None = None,
    original_image: Path | None = None,
) -> RunScore:
    """Score one run of one task (the task config in the released JSON shape)."""
    pe = task.get("process_evaluation") or {}
    checkpoints = [cp for cp in pe.get("checkpoints") or [] if isinstance(cp, Mapping)]
    scorer = _Scorer(
        task, run, visual_check, search_check, thresholds or ProxyThresholds(), original_image
    )
    results: list[CheckpointResult] = []
    for cp in checkpoints:
        cid, axis = str(cp.get("id")), str(cp.get("axis"))
        if axis == "S":
            result = CheckpointResult(cid, axis, "search", False)
            scorer.search(cp, result)
        elif axis in ("V", "R") and "answer_check" in cp:
            passed = checkpoint_answer_passes(cp["answer_check"], run.final_answer)
            result = CheckpointResult(cid, axis, "answer", passed, method="answer_check")
            if axis == "R":
                result.hit_index = len(run.events)
        elif axis == "V":
            result = CheckpointResult(cid, axis, "visual", False)
            if "code_check" in cp:
                scorer.tool_check(cp, result)
            if "visual_check" in cp:
                scorer.visual(cp, result)
            if not (result.has_tool_check or result.has_visual_check):
                result.detail["error"] = "V-axis checkpoint needs code_check or visual_check"
            result.passed = (
                (not result.has_tool_check or bool(result.tool_passed))
                and (not result.has_visual_check or result.visual_passed is True)
                and (result.has_tool_check or result.has_visual_check)
            )
        else:
            result = CheckpointResult(cid, axis, "other", False, detail={"error": f"axis {axis}"})
        results.append(result)

    by_id = {r.id: r for r in results}
    search_results = [r for r in results if r.kind == "search"]
    visual_results = [r for r in results if r.kind == "visual"]
    tool_checked = [r for r in visual_results if r.has_tool_check]
    visual_checked = [r for r in visual_results if r.has_visual_check]

    def share(
        items: Sequence[CheckpointResult], ok: Callable[[CheckpointResult], bool]
    ) -> float | None:
        return sum(1 for r in items if ok(r)) / len(items) if items else None

    S = share(search_results, lambda r: r.passed)
    V = share(visual_results, lambda r: r.passed)
    V_tool = share(tool_checked, lambda r: bool(r.tool_passed))
    V_true = share(visual_checked, lambda r: r.visual_passed is True)
    undetermined = sum(1 for r in visual_checked if r.visual_passed is None) + sum(
        1 for r in search_results if r.detail.get("undetermined")
    )

    ordering = [oc for oc in pe.get("ordering_constraints") or [] if isinstance(oc, Mapping)]
    r_pass = 0
    for oc in ordering:
        indices: list[int] = []
        ok = True
        for cid in oc.get("sequence") or []:
            res = by_id.get(str(cid))
            # As released, answer checkpoints on the V axis have no hit and so break a chain.
            if (
                res is None
                or not res.passed
                or res.hit_index is None
                or (res.kind == "answer" and res.axis == "V")
            ):
                ok = False
                break
            indices.append(res.hit_index)
        max_gap = int(oc.get("max_gap", 0) or 0)
        if ok and any(
            b < a or b - a - 1 > max_gap for a, b in zip(indices, indices[1:], strict=False)
        ):
            ok = False
        r_pass += ok
    R = r_pass / len(ordering) if ordering else 1.0

    eff = pe.get("efficiency") or {}
    reference = int(eff.get("reference_tool_calls", 0) or 0)
    per_call = float(eff.get("penalty_per_extra_call", 0.0) or 0.0)
    max_calls = int(eff.get("max_tool_calls", 0) or 0)
    calls = run.tool_calls
    penalty = efficiency_penalty(calls, reference, per_call, max_calls)
    valid = [x for x in (S, V) if x is not None]
    base = sum(valid) / len(valid) if valid else 0.0
    meta = task.get("meta") or {}
    level = meta.get("level")
    return RunScore(
        task_id=str(task.get("task_id", "")),
        run_id=run.run_id,
        level=int(level)
        if isinstance(level, int | float) and not isinstance(level, bool)
        else None,
        answer=extract_answer(run.final_answer),
        golden=str((task.get("golden_answer") or {}).get("value", "")),
        acc=final_answer_correct(task, run.final_answer, accepted),
        S=S,
        V=V,
        V_tool=V_tool,
        V_true=V_true,
        R=R,
        calls=calls,
        reference_calls=reference,
        excess_calls=max(0, calls - reference),
        penalty=penalty,
        exceeded_max=max_calls > 0 and calls > max_calls,
        overthink=paper_overthink(calls, reference),
        overthink_ratio=overthink_ratio(calls, reference),
        base=base,
        pqs=base * (1.0 - penalty),
        checkpoints=results,
        undetermined=undetermined,
    )


# --------------------------------------------------------------------------- aggregates


def _mean(values: Iterable[float | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return sum(present) / len(present) if present else None


def summarize(scores: Sequence[RunScore]) -> dict[str, Any]:
    """Means over runs: Acc, S, V, V_tool, V_true (each over the runs that have such
    checkpoints), penalty, calls, both Overthink forms, PQS, and the overthink classes."""
    n = len(scores)
    if n == 0:
        return {"n": 0}
    mean_calls = sum(s.calls for s in scores) / n
    mean_ref = sum(s.reference_calls for s in scores) / n
    categories = [s.overthink_category for s in scores]
    out: dict[str, Any] = {
        "n": n,
        "acc": sum(s.acc for s in scores) / n,
        "acc_count": sum(s.acc for s in scores),
        "S": _mean(s.S for s in scores),
        "s_cases": sum(s.S is not None for s in scores),
        "V": _mean(s.V for s in scores),
        "v_cases": sum(s.V is not None for s in scores),
        "V_tool": _mean(s.V_tool for s in scores),
        "V_true": _mean(s.V_true for s in scores),
        "penalty": sum(s.penalty for s in scores) / n,
        "pqs": sum(s.pqs for s in scores) / n,
        "calls": mean_calls,
        "reference_calls": mean_ref,
        "overthink": sum(s.overthink for s in scores) / n,
        "overthink_of_means": paper_overthink(mean_calls, mean_ref),
        "overthink_ratio": _mean(s.overthink_ratio for s in scores),
        "undetermined_checks": sum(s.undetermined for s in scores),
    }
    for name in ("overthink", "underthink", "optimal"):
        out[f"cases_{name}"] = categories.count(name)  # type: ignore[arg-type]
        out[f"pct_{name}"] = 100.0 * categories.count(name) / n  # type: ignore[arg-type]
    return out


def overthink_analysis(scores: Sequence[RunScore]) -> dict[str, Any]:
    """The released scorer's "OVERTHINK ANALYSIS" block, same keys, values unrounded.
    As released, the percentages are over all runs, including runs without a reference."""
    n = len(scores)
    if n == 0:
        return {}
    human = sum(s.reference_calls for s in scores)
    model = sum(s.calls for s in scores)
    categories = [s.overthink_category for s in scores]
    ratios = [s.overthink_ratio for s in scores if s.overthink_ratio is not None]
    return {
        "human_total_reference_calls": human,
        "human_avg_reference_calls": human / n,
        "model_total_calls": model,
        "model_avg_calls": model / n,
        "total_excess_calls": model - human,
        "avg_excess_calls": (model - human) / n,
        "avg_overthink_ratio": sum(ratios) / len(ratios) if ratios else 0.0,
        "cases_overthink": categories.count("overthink"),
        "cases_underthink": categories.count("underthink"),
        "cases_optimal": categories.count("optimal"),
        "cases_exceeded_max": sum(s.exceeded_max for s in scores),
        "pct_overthink": 100.0 * categories.count("overthink") / n,
        "pct_underthink": 100.0 * categories.count("underthink") / n,
        "pct_optimal": 100.0 * categories.count("optimal") / n,
    }


def aggregate(scores: Sequence[RunScore]) -> dict[str, Any]:
    """``{"overall": ..., "levels": {"L1": ..., ...}, "overthink_analysis": ...}``."""
    levels = sorted({s.level for s in scores if s.level is not None})
    return {
        "overall": summarize(scores),
        "levels": {f"L{lv}": summarize([s for s in scores if s.level == lv]) for lv in levels},
        "overthink_analysis": overthink_analysis(scores),
    }


# --------------------------------------------------------------------------- replaying artifacts

_NOT_OP_ARGS = {"image_index", "label", "op", "save", "line", "tool_name", "raw_tool_name"}


def event_to_step(event: JSON, *, prefer_logged_pixels: bool = True) -> tuple[str, dict[str, Any]]:
    """The ``(op, params)`` that re-applies a logged image call with :func:`ops.apply`.
    A crop whose output logged ``bbox_absolute`` is replayed with that pixel box (when
    ``prefer_logged_pixels``), which makes replay independent of how the logging tool turned
    0-1000 coordinates into pixels. Raises :class:`ops.OpError` for non-image events."""
    op = event_op(event)
    if op not in ops.OPS:
        raise ops.OpError(f"event {event.get('index')}: {op!r} is not an image operation", op=op)
    args = {k: v for k, v in (event.get("arguments") or {}).items() if k not in _NOT_OP_ARGS}
    out = event.get("output") or {}
    if op == "crop":
        absolute = out.get("bbox_absolute") if isinstance(out, Mapping) else None
        if prefer_logged_pixels and isinstance(absolute, list | tuple) and len(absolute) == 4:
            args.pop("bbox_2d", None)
            args["box"] = list(absolute)
        elif "bbox_2d" not in args and "box" not in args:
            args["bbox_2d"] = [0, 0, ops.BBOX_SCALE, ops.BBOX_SCALE]  # released default
    return op, args


@dataclass(frozen=True)
class PixelDiff:
    same_size: bool
    max_abs: int
    mean_abs: float

    @property
    def equal(self) -> bool:
        return self.same_size and self.max_abs == 0


def compare_pixels(a: Image.Image, b: Image.Image) -> PixelDiff:
    """Decoded pixels compared as RGB (RGBA if either has alpha)."""
    import numpy as np

    if a.size != b.size:
        return PixelDiff(False, 255, math.inf)
    mode = "RGBA" if "A" in a.mode or "A" in b.mode or "transparency" in b.info else "RGB"
    x = np.asarray(a.convert(mode), dtype=np.int16)
    y = np.asarray(b.convert(mode), dtype=np.int16)
    diff = np.abs(x - y)
    return PixelDiff(
        True, int(diff.max()) if diff.size else 0, float(diff.mean()) if diff.size else 0.0
    )


@dataclass(frozen=True)
class ArtifactCheck:
    event_index: int
    op: str
    params: dict[str, Any]
    output_path: Path | None
    diff: PixelDiff | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.diff is not None and self.diff.equal


def check_run_artifacts(
    run: RunRecord,
    original: Image.Image,
    *,
    chain: Literal["files", "memory"] = "files",
    normalize: Callable[[Image.Image], Image.Image] | None = None,
    prefer_logged_pixels: bool = True,
) -> list[ArtifactCheck]:
    """Re-apply every logged image operation and compare with the image it logged.

    Inputs are converted to RGB first, as the released tools do. ``chain="files"`` feeds each
    step the *logged* image it names (what the released harness did: it re-reads PNG files);
    ``"memory"`` feeds it our own previous result, so a run can be checked end to end from the
    input alone. ``normalize`` is applied to our result before comparing (e.g. a palette
    quantization the logged files went through)."""
    images: dict[int, Image.Image] = {0: original.convert("RGB")}
    checks: list[ArtifactCheck] = []
    for position, ev in enumerate(run.events):
        op = event_op(ev)
        if is_declared_only(ev) or op not in ops.OPS or not event_ok(ev):
            continue
        index = _as_index(ev.get("index", position)) or position
        args = ev.get("arguments") or {}
        out = ev.get("output") or {}
        path = run.event_image_path(ev)
        source = images.get(_as_index(args.get("image_index", 0)) or 0)
        new_index = _as_index(out.get("new_image_index"))
        try:
            op, params = event_to_step(ev, prefer_logged_pixels=prefer_logged_pixels)
            if source is None:
                raise ops.OpError(f"input image {args.get('image_index')} is unknown")
            produced = ops.apply(source.convert("RGB"), op, params)
        except ops.OpError as exc:
            checks.append(ArtifactCheck(index, op, dict(args), path, None, str(exc)))
            continue
        logged: Image.Image | None = None
        if path is not None:
            with Image.open(path) as img:
                logged = img.convert("RGB")
        if new_index is not None:
            images[new_index] = logged if chain == "files" and logged is not None else produced
        if logged is None:
            checks.append(ArtifactCheck(index, op, params, path, None, "logged image not found"))
            continue
        compared = normalize(produced) if normalize is not None else produced
        checks.append(ArtifactCheck(index, op, params, path, compare_pixels(compared, logged)))
    return checks


# --------------------------------------------------------------------------- failure modes (App. E)


class FailureMode(enum.StrEnum):
    """The seven failure modes of App. E, in the paper's order."""

    MISSING_SEARCH = "missing_search_tools"
    BAD_SEARCH_QUERY = "bad_search_query"
    UNFAITHFUL_VISUAL = "unfaithful_visual_tool_use"
    MISSING_VISUAL = "missing_visual_tool_use"
    OVERTHINKING_COLLAPSE = "overthinking_collapse"
    TOOL_MISEXECUTION = "tool_misexecution"
    POSTVISUAL_PERCEPTION = "postvisual_perception_deficit"

    @property
    def label(self) -> str:
        return _FAILURE_TEXT[self][0]

    @property
    def description(self) -> str:
        return _FAILURE_TEXT[self][1]


_FAILURE_TEXT: dict[FailureMode, tuple[str, str]] = {
    FailureMode.MISSING_SEARCH: (
        "Missing search tools",
        "The task needs open-web retrieval, but the agent never searches at the step where "
        "external knowledge is necessary, relying on passive inspection or image manipulation.",
    ),
    FailureMode.BAD_SEARCH_QUERY: (
        "Bad search query",
        "The agent searches, but the query is ineffective: wrong entity, missing the critical "
        "visual cue, too vague, or drifting to an unrelated attribute.",
    ),
    FailureMode.UNFAITHFUL_VISUAL: (
        "Unfaithful visual tool use",
        "The agent uses a visual tool, but the artifact does not expose the required evidence: "
        "wrong crop region, wrong rotation direction, over-enhanced into unreadability; it "
        "fails the V-axis check.",
    ),
    FailureMode.MISSING_VISUAL: (
        "Missing visual tool use",
        "The task needs an explicit visual manipulation, but the agent never performs it: it "
        "answers from the raw image, switches to search too early, or only reasons in text.",
    ),
    FailureMode.OVERTHINKING_COLLAPSE: (
        "Overthinking collapse",
        "A redundant exploration loop after the evidence could already have been obtained: "
        "near-duplicate crops, needless searches, repeated verification, trial and error that "
        "derails the trajectory and spends the interaction budget.",
    ),
    FailureMode.TOOL_MISEXECUTION: (
        "Tool misexecution",
        "Interface-level execution mistakes rather than reasoning: malformed code, invalid "
        "tool arguments, runtime errors, missing file saves.",
    ),
    FailureMode.POSTVISUAL_PERCEPTION: (
        "Post-visual perception deficit",
        "The agent produces a relevant artifact but still misreads the evidence in it: the "
        "right region was surfaced, the model cannot interpret it.",
    ),
}

DOMINANCE_ORDER: tuple[FailureMode, ...] = (
    FailureMode.TOOL_MISEXECUTION,
    FailureMode.MISSING_VISUAL,
    FailureMode.UNFAITHFUL_VISUAL,
    FailureMode.POSTVISUAL_PERCEPTION,
    FailureMode.MISSING_SEARCH,
    FailureMode.BAD_SEARCH_QUERY,
    FailureMode.OVERTHINKING_COLLAPSE,
)
"""Tie-break when two problems sit at the same step (our choice; App. E only says "earliest or
most consequential"): an interface failure blocks everything after it; visual evidence comes
before the retrieval it feeds (the paper's example puts an unfaithful crop before a bad query);
overthinking, by definition, happens after the evidence was within reach."""


@dataclass(frozen=True)
class FailureObservation:
    """One problem seen in a failed trajectory. ``step`` orders problems in time (an event or
    checkpoint position; None = unknown, after every known step). ``decisive`` marks the problem
    an annotator judged most consequential, which overrides time."""

    mode: FailureMode
    step: int | None = None
    decisive: bool = False
    note: str = ""


def dominant_failure_mode(observations: Iterable[FailureObservation]) -> FailureMode | None:
    """App. E's annotation rule: one dominant label per failed trajectory, the earliest or most
    consequential bottleneck. Decisive observations win; among the rest, the earliest step;
    ties go by :data:`DOMINANCE_ORDER`. None when there is nothing to label."""
    pool = list(observations)
    if any(o.decisive for o in pool):
        pool = [o for o in pool if o.decisive]
    if not pool:
        return None
    rank = {mode: i for i, mode in enumerate(DOMINANCE_ORDER)}
    best = min(pool, key=lambda o: (math.inf if o.step is None else o.step, rank[o.mode]))
    return best.mode


def suggest_failure_observations(
    task: JSON, run: RunRecord, score: RunScore
) -> list[FailureObservation]:
    """Failure modes the scores point at, for an annotator to confirm (nothing for a correct
    run). Steps are checkpoint positions in the reference order, so "earliest" means the first
    reference step that went wrong."""
    if score.acc:
        return []
    events = [ev for ev in run.events if isinstance(ev, Mapping) and not is_declared_only(ev)]
    failed_ops = {event_op(ev) for ev in events if not event_ok(ev)}
    called = {name for ev in events for name in event_names(ev)}
    checkpoints = (task.get("process_evaluation") or {}).get("checkpoints") or []
    found: list[FailureObservation] = []
    for position, (cp, res) in enumerate(zip(checkpoints, score.checkpoints, strict=False)):
        if res.kind == "visual" and not res.passed:
            cp_ops = set(_checkpoint_ops(cp))
            if res.has_tool_check and not res.tool_passed:
                mode = (
                    FailureMode.TOOL_MISEXECUTION
                    if cp_ops & failed_ops
                    else FailureMode.MISSING_VISUAL
                )
                found.append(FailureObservation(mode, position, note=f"{res.id}: op not used"))
            elif res.visual_passed is False:
                found.append(
                    FailureObservation(
                        FailureMode.UNFAITHFUL_VISUAL, position, note=f"{res.id}: artifact fails"
                    )
                )
        elif res.kind == "search" and not res.passed:
            tools = {str(t).lower() for t in cp.get("tools") or []}
            if tools & called:
                mode = FailureMode.BAD_SEARCH_QUERY
            elif tools & failed_ops:
                mode = FailureMode.TOOL_MISEXECUTION
            else:
                mode = FailureMode.MISSING_SEARCH
            found.append(FailureObservation(mode, position, note=f"{res.id}: search not satisfied"))
    if not found:
        end = len(checkpoints)
        if score.V_true:
            found.append(
                FailureObservation(
                    FailureMode.POSTVISUAL_PERCEPTION, end, note="evidence surfaced, answer wrong"
                )
            )
        if score.excess_calls > 0:
            found.append(
                FailureObservation(
                    FailureMode.OVERTHINKING_COLLAPSE,
                    end,
                    note=f"{score.calls} calls for a reference of {score.reference_calls}",
                )
            )
        if failed_ops:
            found.append(
                FailureObservation(FailureMode.TOOL_MISEXECUTION, None, note="tool errors")
            )
    return found
