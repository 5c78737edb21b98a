"""Agentic-MME: the agent harness for a model under test (paper §2.5, §3.1, App. B and E.1),
written after the released runners (``atomic/run_atomic_tools_openai.py`` and
``general/run_general_script_openai.py`` in ChoS3nE11ven/Agentic-MME).

**Atm mode** offers the atomic image operations and the four retrieval tools as OpenAI
functions (:mod:`benchmark.evaluation.mme_tools`). **Gen mode** offers the retrieval tools as
functions and runs the model's ``<code>`` blocks in the sandbox
(:mod:`benchmark.evaluation.mme_gen`).

The loop, round by round (at most ``settings.max_rounds``, 15 by default):

1. the model gets the conversation and, unless tools are switched off, the tool specs;
2. a reply without a tool call (and, in Gen mode, without code) is the final answer: the text
   inside ``<answer>`` (or the whole reply); an empty reply is asked again, once per round;
3. a reply with tool calls has them run in order, each answered by a tool message; new images
   follow in one user message, each labelled ``[Image N: ...]``, so the model sees them next
   round. Malformed arguments, an unknown tool, a bad image index or bad parameters are
   answered with an error the model can correct (nothing crashes);
4. **no final answer in the same turn as a tool call** (E.1): such an answer is not taken; the
   tools run and the model is asked again, as the released Atm runner does (the run's
   warnings say so). The released Gen runner took the answer after running the code; here both
   modes follow the rule the prompt states;
5. **budgets**: the call that would be number ``max_tool_calls + 1`` is not run; tools are
   switched off and the model is asked for its final answer. After the second-to-last round the
   model is told one round remains and tools are switched off (as released). If the rounds end
   without an answer, one last call without tools asks for it.

Calls the released runner leaves out of ``tool_use_list.json`` are left out here too: image
operations that failed, and (our addition) calls whose arguments were not JSON. Retrieval calls
are logged with their error. In Gen mode code blocks do not count against the tool-call budget
(as released), and neither code nor tool calls run once tools are switched off.

Each item's run is written in the released run format (``tool_use_list.json``,
``model_answer.txt``, ``run_meta.json``, ``tool_images/``, plus ``orig.png``,
``image_index.json`` with every image's sha256 and recipe, and ``conversation.json``), and is
scored by :func:`benchmark.metrics.agentic_mme.score_run` against the item's task record.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmark.formats._jsonio import indented_json
from benchmark.metrics import agentic_mme as mme

from .base import (
    Chat,
    Column,
    EvalItem,
    EvalSettings,
    EvaluationError,
    ModelReply,
    Outcome,
    Ratio,
    Status,
    ToolCall,
    ToolLayer,
    image_part,
)
from .mme_gen import Runner, default_runner, extract_code, run_block, traced_ops
from .mme_tools import (
    IMAGE_TOOLS,
    RETRIEVAL_TOOLS,
    ToolError,
    WorkImage,
    Workspace,
    call_retrieval,
    image_tool_specs,
    model_text,
    retrieval_tool_specs,
)

MODES = ("atm", "gen")
ANSWER_FORMAT = "<answer>YOUR_FINAL_ANSWER</answer>"
_ANSWER_TAG = re.compile(r"<answer>", re.IGNORECASE)

_COMMON = """\
## Images
- Images are numbered: Image 0 is the input (with several inputs, Images 0, 1, ...); every \
result gets the next number.
- Image N (counting results from 1) is saved as transformed_image_N.png.
- After each step you see the new image with its number.

## Retrieval tools (function calls)
- google_search(query, gl?, hl?): web search.
- google_lens_search(image_index?): reverse image search with one of the images (default 0).
- fetch_webpage(url, max_chars?): the text of a web page.
- download_image(url): bring an image from the web in as a new image (at most 5 per task).

## Rules
- Never give the final answer in the same reply as a tool call{code}: wait for the results.
- When you are sure, answer in exactly this form: """

SYSTEM_ATM = (
    """\
You are a multimodal agent. You solve a question about one or more images with image tools \
and web retrieval tools, step by step.

## Image tools (function calls)
Every image tool takes image_index (the image to work on) and an optional label, and makes a \
new image. crop takes bbox_2d, [x1, y1, x2, y2] on a 0-1000 scale of the image ((0, 0) is the \
top left, (1000, 1000) the bottom right; [250, 250, 750, 750] is the centre) and zoom_scale. \
The others: rotate, flip, resize, enhance, grayscale, autocontrast, blur, sharpen, denoise, \
edge_detect, invert, equalize, threshold.

"""
    + _COMMON.format(code="")
    + ANSWER_FORMAT
)

SYSTEM_GEN = (
    """\
You are a multimodal agent. You solve a question about one or more images step by step: you \
process images by writing Python, and you search the web with function calls.

## Code
Put Python in a <code>...</code> block; it runs, and you then see its printed output and the \
images it saved. PIL, numpy, scipy, matplotlib (and OpenCV where installed) are available.
- os.environ['ORIGINAL_IMAGE_PATH'] is the input image (Image 0).
- Save results in os.environ['PROCESSED_IMAGE_SAVE_PATH'] as transformed_image_1.png, \
transformed_image_2.png, ... (Image N is transformed_image_N.png); earlier results are there \
to read.
- Print values with print(); do not call display() or plt.show().

"""
    + _COMMON.format(code=" or a <code> block")
    + ANSWER_FORMAT
)


def _utc_now() -> str:
    return datetime.now(UTC).isoformat()


# --------------------------------------------------------------------------- inputs


def task_images(item: EvalItem) -> list[tuple[str, bytes]]:
    """The item's input images in the order its record names them (``input.image``, a name
    or a list), else in name order. EvaluationError names an image the record names but the
    item lacks."""
    record_input = item.record.get("input") if isinstance(item.record, Mapping) else None
    named = record_input.get("image") if isinstance(record_input, Mapping) else None
    names = [named] if isinstance(named, str) else named if isinstance(named, list) else []
    names = [n for n in names if isinstance(n, str) and n.strip()]
    if not names:
        return sorted(item.images.items())
    missing = [n for n in names if n not in item.images]
    if missing:
        raise EvaluationError(f"item {item.id}: input.image names {missing[0]}, which it lacks")
    return [(n, item.images[n]) for n in names]


def task_prompt(item: EvalItem) -> str:
    record_input = item.record.get("input") if isinstance(item.record, Mapping) else None
    prompt = record_input.get("prompt") if isinstance(record_input, Mapping) else None
    if not isinstance(prompt, str) or not prompt.strip():
        raise EvaluationError(f"item {item.id}: input.prompt is missing")
    return prompt


# --------------------------------------------------------------------------- one run


class _Run:
    """One item's conversation with the model (see the module docstring)."""

    def __init__(
        self,
        item: EvalItem,
        settings: EvalSettings,
        chat: Chat,
        tools: ToolLayer,
        runner: Runner,
        now: Callable[[], str],
    ) -> None:
        if settings.mode not in MODES:
            raise EvaluationError(f"mode must be atm or gen, not {settings.mode!r}")
        for name in ("max_rounds", "max_tool_calls"):
            if getattr(settings, name) < 1:
                raise EvaluationError(f"{name} must be at least 1")
        self.item, self.settings, self.chat, self.tools = item, settings, chat, tools
        self.runner, self.now = runner, now
        self.gen = settings.mode == "gen"
        self.workspace = Workspace(task_images(item))
        self.prompt = task_prompt(item)
        self.specs = retrieval_tool_specs() if self.gen else image_tool_specs()
        if not self.gen:
            self.specs += retrieval_tool_specs()
        self.images: dict[str, bytes] = {}
        self.messages: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.op_events: list[dict[str, Any]] = []
        self.exec_events: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.unavailable: set[str] = set()
        self.calls = 0
        self.tools_off = False
        self.answer = ""
        self.outcome = Outcome(item=item.id, status=Status.OK)

    # ---- the conversation

    def run(self) -> None:
        self._start()
        rounds = self.settings.max_rounds
        for turn in range(rounds):
            reply = self._ask(tools=not self.tools_off)
            if self._turn(reply, turn):
                break
        if not self.answer:
            self._say(f"Give your final answer now, from everything gathered, as {ANSWER_FORMAT}.")
            reply = self._ask(tools=False)
            self.messages.append(reply.assistant_message())
            self.answer = mme.extract_answer(reply.text)

    def _start(self) -> None:
        content: list[dict[str, Any]] = []
        for image in self.workspace.images:
            content.append(self._image(image))
        count = len(self.workspace.images)
        names = "Image 0" if count == 1 else ", ".join(f"Image {i}" for i in range(count))
        what = "original input" if count == 1 else "original inputs"
        content.append({"type": "text", "text": f"[{names}: {what}]\n\n{self.prompt}"})
        system = SYSTEM_GEN if self.gen else SYSTEM_ATM
        self.messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": content},
        ]

    def _image(self, image: WorkImage) -> dict[str, Any]:
        self.images[image.sha256] = image.data
        return image_part(image.sha256)

    def _ask(self, *, tools: bool) -> ModelReply:
        reply = self.chat(
            list(self.messages), images=dict(self.images), tools=self.specs if tools else None
        )
        self.outcome.count(reply)
        return reply

    def _say(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def _request_answer(self, reason: str) -> None:
        self.tools_off = True
        self._say(
            f"{reason} Give your final answer now, with no more tool calls, as {ANSWER_FORMAT}."
        )

    def _turn(self, reply: ModelReply, turn: int) -> bool:
        """One round; True when the run has its answer (or must stop)."""
        code = extract_code(reply.text) if self.gen else ""
        last = turn >= self.settings.max_rounds - 1
        self.messages.append(reply.assistant_message())
        if not reply.tool_calls and not code:
            self.answer = mme.extract_answer(reply.text)
            if self.answer:
                return True
            self.warnings.append(f"[turn {turn}] empty reply with no tool call")
            if not last:
                self._request_answer("Your previous reply was empty.")
            return last
        if _ANSWER_TAG.search(reply.text or ""):
            self.warnings.append(
                f"[turn {turn}] an answer given in the same turn as a tool call is not accepted; "
                "the tools ran and the model was asked again"
            )
        over = self._tool_calls(reply.tool_calls, turn)
        if code:
            self._code(code, turn)
        if over:
            if not last:
                self._request_answer(
                    f"The tool-call budget ({self.settings.max_tool_calls}) is used up."
                )
            return last
        if turn == self.settings.max_rounds - 2:
            self._request_answer("Only one model round remains.")
        return False

    # ---- tool calls

    def _tool_calls(self, calls: tuple[ToolCall, ...], turn: int) -> bool:
        """Run the calls; True when one was over the budget."""
        new: list[WorkImage] = []
        over = False
        for call in calls:
            if self.tools_off or over:
                self._answer_call(call, "Not run: no more tool calls are allowed now.")
                continue
            self.calls += 1
            if self.calls > self.settings.max_tool_calls:
                over = True
                self.warnings.append(
                    f"[turn {turn}] over max_tool_calls={self.settings.max_tool_calls}"
                )
                self._answer_call(call, "Not run: the tool-call budget is used up.")
                continue
            self.outcome.tool_calls += 1
            content, images = self._one_call(call, turn)
            self._answer_call(call, content)
            new += images
        if new:
            parts: list[dict[str, Any]] = []
            for image in new:
                parts += [
                    self._image(image),
                    {"type": "text", "text": f"[Image {image.index}: {image.label}]"},
                ]
            self.messages.append({"role": "user", "content": parts})
        return over

    def _answer_call(self, call: ToolCall, content: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call.id, "content": content})

    def _log(self, name: str, arguments: Any, output: Any, turn: int) -> None:
        self.events.append(
            {
                "index": len(self.events),
                "tool_name": name,
                "raw_tool_name": name,
                "arguments": arguments,
                "output": output,
                "turn": turn,
                "timestamp": self.now(),
            }
        )

    def _one_call(self, call: ToolCall, turn: int) -> tuple[str, list[WorkImage]]:
        try:
            arguments = call.parsed()
        except ValueError as exc:
            return f"Error: {exc}. Send the arguments as one JSON object.", []
        name = call.name
        if not self.gen and name in IMAGE_TOOLS:
            try:
                out = self.workspace.apply(name, arguments)
            except ToolError as exc:
                return json.dumps({"ok": "false", "error": str(exc)}, ensure_ascii=False), []
            self._log(name, arguments, out, turn)
            shown = {
                k: out[k]
                for k in (
                    "ok",
                    "op",
                    "source_image_index",
                    "new_image_index",
                    "output_path",
                    "size",
                    "label",
                )
            }
            return json.dumps(shown, ensure_ascii=False), [
                self.workspace.images[out["new_image_index"]]
            ]
        if name in RETRIEVAL_TOOLS:
            image: WorkImage | None = None
            try:
                out, image = call_retrieval(
                    self.tools, self.item.id, self.workspace, name, arguments
                )
            except ToolError as exc:
                out = {"ok": False, "error": str(exc)}
            if isinstance(out, Mapping) and out.get("not_available"):
                self.unavailable.add(name)
            self._log(name, arguments, out, turn)
            text = json.dumps(out, ensure_ascii=False) if image is not None else model_text(out)
            return text, [image] if image is not None else []
        known = ", ".join(spec["function"]["name"] for spec in self.specs)
        out = {"ok": False, "error": f"Unknown tool: {name} (the tools are: {known})"}
        self._log(name, arguments, out, turn)
        return f"Error: {out['error']}", []

    # ---- Gen mode code

    def _code(self, code: str, turn: int) -> None:
        if self.tools_off:
            self._say("Not run: no more code is run now.")
            return
        run = run_block(code, self.workspace, turn, self.runner)
        self.exec_events.append(
            {
                "tool_name": "run_visual_processing_code",
                "raw_tool_name": "script_exec",
                "arguments": {"turn": turn, "code": code},
                "output": {
                    "ok": "true" if run.ok else "false",
                    "stdout": run.stdout[-4000:],
                    "stderr": (run.problem or run.stderr)[-4000:],
                },
                "turn": turn,
            }
        )
        saved = {image.path.split("/")[-1]: image.path for image in run.new_images}
        for op in traced_ops(code):
            path = saved.get(op["save"], "")
            self.op_events.append(
                {
                    "tool_name": op["op"],
                    "raw_tool_name": "python_image_processing",
                    "arguments": {"op": op["op"], "save": op["save"], "line": op["line"]},
                    "output": {
                        "ok": "true" if path else "false",
                        "output_path": path,
                        "output_paths": [path] if path else [],
                    },
                    "turn": turn,
                }
            )
        parts: list[dict[str, Any]] = []
        for image in run.new_images:
            parts += [
                self._image(image),
                {"type": "text", "text": f"[Image {image.index}: {image.path.split('/')[-1]}]"},
            ]
        parts.append({"type": "text", "text": run.observation()})
        self.messages.append({"role": "user", "content": parts})

    # ---- the run folder

    def tool_use_list(self) -> list[dict[str, Any]]:
        if not self.gen:
            return self.events
        combined = [*self.events, *self.op_events, *self.exec_events]
        stamp = self.now()
        return [
            dict(event, index=i, timestamp=event.get("timestamp") or stamp)
            for i, event in enumerate(combined)
        ]

    def meta(self) -> dict[str, Any]:
        effective = len(self.events) + len(self.op_events)
        searches: dict[str, int] = {}
        for event in self.events:
            if event["tool_name"] in RETRIEVAL_TOOLS:
                searches[event["tool_name"]] = searches.get(event["tool_name"], 0) + 1
        warnings = list(self.warnings)
        if self.unavailable:
            warnings.append(
                "not available here (no retrieval provider configured): "
                + ", ".join(sorted(self.unavailable))
            )
        record_id = (
            self.item.record.get("task_id") if isinstance(self.item.record, Mapping) else None
        )
        return {
            "task_id": str(record_id or self.item.id),
            "mode": "general_rollout" if self.gen else "atomic",
            "driver": "script_rollout" if self.gen else "tools",
            "model": "",
            "usage": {
                "api_calls": self.outcome.model_calls,
                "prompt_tokens": self.outcome.prompt_tokens,
                "completion_tokens": self.outcome.completion_tokens,
                "total_tokens": self.outcome.prompt_tokens + self.outcome.completion_tokens,
            },
            "effective_tool_calls": effective,
            "total_images": len(self.workspace.images),
            "budgets": {
                "max_rounds": self.settings.max_rounds,
                "max_tool_calls": self.settings.max_tool_calls,
            },
            "search_analysis": {
                "search_tool_calls": sum(searches.values()),
                "search_tool_hist": searches,
            },
            "not_available": sorted(self.unavailable),
            "warnings": warnings,
        }

    def files(self, events: list[dict[str, Any]], meta: dict[str, Any]) -> dict[str, bytes]:
        dump = indented_json
        files = self.workspace.files()
        files["tool_use_list.json"] = dump(events)
        files["model_answer.txt"] = self.answer.encode("utf-8")
        files["run_meta.json"] = dump(meta)
        files["image_index.json"] = dump(self.workspace.index_list())
        files["conversation.json"] = dump(
            {
                "task_id": meta["task_id"],
                "tools": [spec["function"]["name"] for spec in self.specs],
                "messages": self.messages,
                "final_answer": self.answer,
            }
        )
        return files


# --------------------------------------------------------------------------- scoring


def score_files(
    truth: Mapping[str, Any],
    files: Mapping[str, bytes],
    *,
    visual_check: mme.VisualCheck | None = None,
    search_check: mme.SearchCheck | None = None,
    run_id: str = "",
) -> mme.RunScore:
    """Score a run folder given as files, with the existing run scorer. Where the scorer reads
    the run's image files (``mme.run_needs_files``: a visual judge, a ``require_images``
    verifier) the folder is written to a temporary directory and scored there; otherwise
    the run is read from the files' bytes as the folder would give it (no copy on disk)."""
    if not mme.run_needs_files(truth, visual_check=visual_check):
        run = mme.RunRecord.from_files(files, run_id=run_id)
        return mme.score_run(truth, run, visual_check=visual_check, search_check=search_check)
    with tempfile.TemporaryDirectory(prefix="bw-mme-run-") as tmp:
        root = Path(tmp)
        for name, data in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        run = mme.RunRecord.from_dir(root)
        originals = sorted(root.glob("orig.*")) or sorted(root.glob("orig_0.*"))
        original = originals[0] if originals else None
        run = dataclasses.replace(run, run_dir=root, run_id=run_id or run.run_id)
        return mme.score_run(
            truth,
            run,
            visual_check=visual_check,
            search_check=search_check,
            original_image=original,
        )


def run_score_from_dict(data: Mapping[str, Any]) -> mme.RunScore:
    """A RunScore back from ``RunScore.to_dict()`` (what ``Outcome.scores`` holds)."""
    names = {f.name for f in fields(mme.RunScore)}
    values = {k: v for k, v in data.items() if k in names}
    values["checkpoints"] = [mme.CheckpointResult(**c) for c in data.get("checkpoints") or []]
    return mme.RunScore(**values)


# --------------------------------------------------------------------------- the protocol

LEVELS = (1, 2, 3)


def _columns() -> tuple[Column, ...]:
    out = [Column("acc", "Acc"), Column("S", "S"), Column("V", "V")]
    for level in LEVELS:
        out += [
            Column(f"L{level}_acc", f"Level {level} Acc"),
            Column(f"L{level}_S", f"Level {level} S"),
            Column(f"L{level}_V_tool", f"Level {level} V_tool"),
            Column(f"L{level}_V_true", f"Level {level} V_true"),
        ]
    out += [
        Column("overthink", "Overthink", percent=False),
        Column("calls", "Tool calls", percent=False),
    ]
    return tuple(out)


def _safe_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")
    return name or "item"


@dataclass
class AgenticMmeProtocol:
    """The Agentic-MME protocol (``benchmark.evaluation.base.EvalProtocol``). ``runner`` runs
    Gen-mode programs (the sandbox by default); ``now`` stamps events (tests fix it)."""

    settings: tuple[str, ...] = ("mode", "max_rounds", "max_tool_calls")
    #: Solved: Acc, the final answer is correct (a true/false score).
    solved: str = "acc"
    #: Its outputs are agent runs: a judge model judges them as runs (the S and V judges of
    #: run scoring), not as answer texts.
    judged_as: str = "runs"
    columns: tuple[Column, ...] = field(default_factory=_columns)
    runner: Runner = default_runner
    now: Callable[[], str] = _utc_now

    def run_item(
        self,
        item: EvalItem,
        *,
        settings: EvalSettings,
        chat: Chat,
        tools: ToolLayer,
        truth: Mapping[str, Any] | None = None,
    ) -> Outcome:
        try:
            run = _Run(item, settings, chat, tools, self.runner, self.now)
        except (EvaluationError, ToolError) as exc:
            return Outcome(item=item.id, status=Status.ERROR, error=str(exc))
        outcome = run.outcome
        try:
            run.run()
        except EvaluationError as exc:  # a model call failed, or a replay miss
            outcome.status, outcome.error = Status.ERROR, str(exc)
        events, meta = run.tool_use_list(), run.meta()
        outcome.files = run.files(events, meta)
        outcome.output = {"answer": run.answer, "tool_use_list": events, "run_meta": meta}
        outcome.trace = run.messages
        if truth is not None and outcome.status == Status.OK:
            score = score_files(
                truth,
                outcome.files,
                visual_check=settings.extra.get("visual_check"),
                search_check=settings.extra.get("search_check"),
                run_id=_safe_name(item.id),
            )
            outcome.scores = score.to_dict()
        return outcome

    def summarize(self, outcomes: list[Outcome]) -> dict[str, Any]:
        """Table 3's figures: Acc, S, V overall, and Acc, S, V_tool, V_true per level (shares
        0-1), Overthink and tool calls per task (means), over the scored runs; plus counts."""
        scores = [
            run_score_from_dict(o.scores) for o in outcomes if o.status == Status.OK and o.scores
        ]
        report = (
            mme.aggregate(scores)
            if scores
            else {"overall": {}, "levels": {}, "overthink_analysis": {}}
        )
        overall = report["overall"]
        out: dict[str, Any] = {
            "items": len(outcomes),
            "scored": len(scores),
            "errors": sum(o.status == Status.ERROR for o in outcomes),
            "tool_calls": sum(o.tool_calls for o in outcomes),
            "model_calls": sum(o.model_calls for o in outcomes),
            "prompt_tokens": sum(o.prompt_tokens for o in outcomes),
            "completion_tokens": sum(o.completion_tokens for o in outcomes),
            "not_available": sorted(
                {
                    name
                    for o in outcomes
                    if isinstance(o.output, dict)
                    for name in o.output["run_meta"]["not_available"]
                }
            ),
        }
        for key in ("acc", "S", "V", "V_tool", "V_true", "overthink", "calls", "pqs"):
            out[key] = overall.get(key)
        for level in LEVELS:
            summary = report["levels"].get(f"L{level}", {})
            out[f"L{level}_n"] = summary.get("n", 0)
            for key in ("acc", "S", "V", "V_tool", "V_true"):
                out[f"L{level}_{key}"] = summary.get(key)
        out["overthink_analysis"] = report["overthink_analysis"]
        return out

    def ratios(self, outcomes: list[Outcome]) -> dict[str, Ratio]:
        """Every column's figure of :meth:`summarize` as a ratio of per-item sums (for the
        bootstrap): each is a mean over the scored runs (of a level, for a level's
        column) that have the score, so a run is (score, 1) where it counts and (0, 0)
        where it does not."""
        scored = [o.scores if o.status == Status.OK and o.scores else None for o in outcomes]

        def mean(key: str, level: int | None = None) -> Ratio:
            nums, dens = [], []
            for scores in scored:
                value = None
                if scores is not None and (level is None or scores.get("level") == level):
                    value = scores.get(key)
                nums.append(0.0 if value is None else float(value))
                dens.append(0.0 if value is None else 1.0)
            return Ratio(tuple(nums), tuple(dens))

        out = {key: mean(key) for key in ("acc", "S", "V", "overthink", "calls")}
        for level in LEVELS:
            for key in ("acc", "S", "V_tool", "V_true"):
                out[f"L{level}_{key}"] = mean(key, level)
        return {column.key: out[column.key] for column in self.columns if column.key in out}

    def write_outputs(self, outcomes: list[Outcome], out_dir: str, *, model: str) -> list[str]:
        """One run folder per item, ``out_dir/<item>/``, in the released layout (the layout
        ``manage.py score_runs`` and the run import read). Runs that failed are not written."""
        root = Path(out_dir)
        written: list[str] = []
        for outcome in outcomes:
            if outcome.status != Status.OK or not outcome.files:
                continue
            folder = root / _safe_name(outcome.item)
            for name, data in outcome.files.items():
                if name == "run_meta.json":
                    meta = json.loads(data)
                    meta["model"] = model
                    data = indented_json(meta)
                path = folder / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
                written.append(str(path))
        return written


PROTOCOL = AgenticMmeProtocol()
