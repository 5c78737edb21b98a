"""Step-wise oracle testing (Agentic-MME §2.4, model verification): the conversation that walks
a model through an item's reference trajectory. Pure: no Django.

The paper probes every task with a strong model "walking it through the human reference path,
providing the exact ground truth intermediate observations (e.g. the properly cropped image
region or the correct web text) at key steps"; a task is kept only if the model then reaches
the correct final answer. Here the walk is one user turn, interleaved in order:

1. the task's prompt with its input image(s), numbered Image 0, 1, ... as the task file's
   ``image_index`` numbers them;
2. every step (checkpoint) of the reference, in order: what was done (the step's description,
   its tool and arguments) and what it produced, the ground-truth observation:

   * a visual step that makes an image: that image, numbered next (Image k). The image is
     the one stored with the step (``reference_image``, saved in the trajectory editor), else
     the one the task file itself defines: the step's operation with its recorded arguments
     (``code_check``) applied to the image it names (``image_index``, or the latest image),
     as :func:`benchmark.metrics.agentic_mme.reference_frames` replays the trajectory. An
     operation recorded without arguments (an "enhance" of unknown strength) defines no image;
   * a search step: the recorded query (its keywords), the finding (``search_check.expected``
     or the description's "expected to find: ...") and the reference URLs, as text;
   * a step that makes nothing (the final "report the answer" step): its words only;

3. the ask for the final answer, with the task's format instruction, inside
   ``<answer></answer>`` (what the released runners extract before matching).

What the model is *not* given: the expected final answer, the visual checks' questions and
expected answers, answer checks. The final answer and its accepted variants are masked where
a step's description quotes them (as the paper's stepwise guidance masks answer keywords,
§4), so a test passes only if the evidence lets the model reach the answer; observations
(a finding that *is* the answer) are given as recorded.

A step whose observation cannot be given (no image stored and none defined, a search step
without a finding) makes the item untestable: :class:`OracleInputError` names every such
step and what to record. ``PROMPT_VERSION`` changes whenever the words change.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from annotation.trajectories.document import checkpoint_args, split_prompt
from benchmark.imaging import ops
from benchmark.imaging.recipe import Recipe, RecipeError
from benchmark.metrics.agentic_mme import SEARCH_TOOLS, expected_finding

PROMPT_VERSION = "oracle-1"
MASK = "[masked]"

SYSTEM = (
    "You are checking whether a visual question can be answered from the evidence that a "
    "reference solution gathers. You get the question with its image(s), then every step of a "
    "human reference solution: what was done and what it produced (a processed image, or what "
    "a web search found). Treat these results as correct and use them to answer. Finish with "
    "your final answer alone inside <answer></answer>, in the format the question asks for."
)
STEPS_INTRO = (
    "A reference solution takes the steps below. Each step says what was done; its result "
    "follows it."
)
FINAL_ASK = "Now answer the question: {question}"
ANSWER_TAGS = "Give only the final answer inside <answer></answer>."


class OracleInputError(ValueError):
    """The item cannot be walked through: ``problems`` say which step lacks what."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


# --------------------------------------------------------------------------- parts


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Picture:
    """An image by content hash, with the number the conversation gives it."""

    sha256: str
    index: int
    step_id: str = ""
    """The step that produced it; empty for an input image."""


Part = Text | Picture


@dataclass(frozen=True)
class StepImage:
    """The ground-truth image a visual step produces: ``sha256`` when one is stored with the
    step, else ``recipe`` (the JSON form) when the task file defines it; ``problem`` says why
    there is neither."""

    step_id: str
    index: int
    op: str
    sha256: str = ""
    recipe: dict[str, Any] | None = None
    problem: str = ""

    @property
    def derived(self) -> bool:
        return not self.sha256 and self.recipe is not None


@dataclass
class Conversation:
    """The oracle request: a system text and one user turn of ``parts``."""

    system: str
    parts: list[Part]
    notes: list[str] = field(default_factory=list)
    """What a reviewer should know about how it was built (an image derived from the task
    file's arguments rather than stored)."""

    @property
    def image_shas(self) -> list[str]:
        return [p.sha256 for p in self.parts if isinstance(p, Picture)]

    def messages(self) -> list[dict[str, Any]]:
        """The messages as stored: images as ``{"type": "image", "sha256", "index"}``."""
        content: list[dict[str, Any]] = []
        for part in self.parts:
            if isinstance(part, Picture):
                content.append({"type": "image", "sha256": part.sha256, "index": part.index})
            else:
                content.append({"type": "text", "text": part.text})
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": content},
        ]


# --------------------------------------------------------------------------- reading the task


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def checkpoints_of(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    process = _obj(doc.get("process_evaluation"))
    found = process.get("checkpoints")
    return [cp for cp in found if isinstance(cp, dict)] if isinstance(found, list) else []


def step_op(cp: Mapping[str, Any]) -> str:
    """The image operation a visual step performs: its tool when that is an operation, else
    the operation its verifier names (``verify_crop_ast``); empty for none."""
    tools = cp.get("tools") if isinstance(cp.get("tools"), list) else []
    for tool in tools or []:
        name = str(tool).strip().lower()
        if name in ops.OPS:
            return name
    verifier = str(_obj(cp.get("code_check")).get("verifier") or "").lower()
    for name in sorted(ops.OPS, key=len, reverse=True):
        if name in verifier:
            return name
    return ""


def _index(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _label(cp: Mapping[str, Any], position: int) -> str:
    cid = str(cp.get("id") or "").strip()
    return f"step {position}" + (f" ({cid})" if cid else "")


def image_plan(doc: Mapping[str, Any], input_shas: Sequence[str]) -> list[StepImage]:
    """The image every visual step makes, numbered after the input images: stored, derivable
    from the task file, or neither (with why). Steps that make no image are left out."""
    slots: list[dict[str, Any] | None] = [
        Recipe.build(sha).to_dict() for sha in input_shas if _valid_sha(sha)
    ]
    slots += [None] * (len(input_shas) - len(slots))
    plan: list[StepImage] = []
    for position, cp in enumerate(checkpoints_of(doc), start=1):
        if str(cp.get("axis") or "V").upper() != "V" or "answer_check" in cp:
            continue
        op = step_op(cp)
        stored = _obj(cp.get("reference_image"))
        sha = str(stored.get("sha256") or "")
        if not op and not sha:
            continue
        step_id = str(cp.get("id") or f"step {position}")
        index = len(slots)
        if sha:
            recipe = _recipe(stored.get("recipe"))
            plan.append(StepImage(step_id, index, op, sha256=sha, recipe=recipe))
            slots.append(recipe)
            continue
        recipe, problem = _derivable(cp, op, slots, position)
        plan.append(StepImage(step_id, index, op, recipe=recipe, problem=problem))
        slots.append(recipe)
    return plan


def _valid_sha(sha: str) -> bool:
    return bool(re.fullmatch(r"[0-9a-f]{64}", sha or ""))


def _recipe(data: Any) -> dict[str, Any] | None:
    try:
        return Recipe.from_dict(data).to_dict() if isinstance(data, dict) else None
    except RecipeError:
        return None


def _derivable(
    cp: Mapping[str, Any], op: str, slots: list[dict[str, Any] | None], position: int
) -> tuple[dict[str, Any] | None, str]:
    label = _label(cp, position)
    fix = "store its ground-truth image in the trajectory editor"
    args = checkpoint_args(cp)
    raw_index = args.pop("image_index", None)
    index = _index(raw_index)
    if raw_index is not None and (index is None or not 0 <= index < len(slots)):
        return None, (
            f"{label}: no ground-truth image is stored, and its image_index {raw_index!r} "
            f"names no earlier image; {fix}"
        )
    source = slots[index] if index is not None else (slots[-1] if slots else None)
    if source is None:
        which = f"Image {index}" if index is not None else "the latest image"
        return None, (
            f"{label}: no ground-truth image is stored, and the image it works on ({which}) "
            f"is not known; {fix}"
        )
    spec = ops.OPS[op]
    if not args and spec.params:
        return None, (
            f"{label}: no ground-truth image is stored, and the task file records no "
            f"arguments for its {op}; {fix}"
        )
    try:
        recipe = Recipe.from_dict(source).then(op, args)
    except (RecipeError, ops.OpError) as exc:
        return None, (
            f"{label}: no ground-truth image is stored, and its recorded {op} arguments do not "
            f"make one ({exc}); {fix}"
        )
    return recipe.to_dict(), ""


# --------------------------------------------------------------------------- masking


def masker(values: Sequence[str]) -> re.Pattern[str] | None:
    """A pattern matching any of ``values`` as a whole word, case-insensitively; values shorter
    than two characters or without a letter or digit are not masked (they would hit words)."""
    words = sorted(
        {v.strip() for v in values if len(v.strip()) >= 2 and re.search(r"\w", v)},
        key=len,
        reverse=True,
    )
    if not words:
        return None
    alternatives = "|".join(re.escape(w) for w in words)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


def _mask(text: str, pattern: re.Pattern[str] | None) -> str:
    return pattern.sub(MASK, text) if pattern is not None else text


# --------------------------------------------------------------------------- the conversation


def _action(cp: Mapping[str, Any]) -> str:
    tools = [str(t) for t in (cp.get("tools") or []) if str(t).strip()]
    if not tools:
        return ""
    args = checkpoint_args(cp)
    if tools[0] in SEARCH_TOOLS:
        return f"Tool: {tools[0]}"
    if args:
        return f"Tool: {tools[0]} {json.dumps(args, ensure_ascii=False, sort_keys=True)}"
    return f"Tool: {tools[0]}"


def _search_observation(cp: Mapping[str, Any]) -> tuple[str, str]:
    """The search step's result text, or why there is none."""
    search = _obj(cp.get("search_check"))
    keywords = search.get("keywords")
    if isinstance(keywords, str):
        keywords = [keywords]
    query = "; ".join(str(k).strip() for k in keywords or [] if str(k).strip())
    finding = expected_finding(cp) or ""
    if not finding:
        return "", "the reference records no finding for this search"
    urls = search.get("urls")
    if isinstance(urls, str):
        urls = [urls]
    lines = []
    if query:
        lines.append(f"Searched for: {query}")
    lines.append(f"Found: {finding}")
    sources = [str(u).strip() for u in urls or [] if str(u).strip()]
    if sources:
        lines.append("Sources: " + ", ".join(sources))
    return "\n".join(lines), ""


def _step_parts(
    cp: Mapping[str, Any],
    position: int,
    step_image: StepImage | None,
    images: Mapping[str, str],
    pattern: re.Pattern[str] | None,
) -> tuple[list[Part], str, str]:
    """One step's parts (its words, then its result), a note, and a problem (its result is
    missing)."""
    label = _label(cp, position)
    description = _mask(" ".join(str(cp.get("description") or "").split()), pattern)
    lines = [f"Step {position}: {description or '(no description)'}"]
    action = _action(cp)
    if action:
        lines.append(action)
    parts: list[Part] = [Text("\n".join(lines))]
    if step_image is not None:
        sha = step_image.sha256 or images.get(step_image.step_id, "")
        if not sha:
            return parts, "", step_image.problem or f"{label}: its image was not derived"
        parts += [
            Text(f"Result: Image {step_image.index}"),
            Picture(sha, step_image.index, step_image.step_id),
        ]
        note = ""
        if step_image.derived:
            note = (
                f"{label}: no ground-truth image is stored; Image {step_image.index} was "
                "derived from the task file's recorded operation"
            )
        return parts, note, ""
    if str(cp.get("axis") or "V").upper() == "S":
        text, problem = _search_observation(cp)
        if problem:
            return parts, "", f"{label}: {problem}; record what it finds"
        parts.append(Text(f"Result:\n{text}"))
    return parts, "", ""


def _answer_pattern(golden: Mapping[str, Any]) -> re.Pattern[str] | None:
    variants = golden.get("accepted_variants") or golden.get("accepted_answers") or []
    if isinstance(variants, str):
        variants = [variants]
    return masker([str(golden.get("value") or ""), *[str(v) for v in variants]])


def build(
    doc: Mapping[str, Any],
    *,
    input_shas: Sequence[str],
    images: Mapping[str, str] | None = None,
) -> Conversation:
    """The oracle conversation of a task document (the item's Agentic-MME task file with its
    reference trajectory) whose input images are ``input_shas``. ``images`` maps a step id to
    the sha256 of the image derived for it (a step the plan found derivable); stored images
    come from the document. OracleInputError names every step whose observation is missing."""
    prompt = str(_obj(doc.get("input")).get("prompt") or "").strip()
    question, instruction = split_prompt(prompt)
    pattern = _answer_pattern(_obj(doc.get("golden_answer")))
    checkpoints = checkpoints_of(doc)

    problems: list[str] = []
    if not prompt:
        problems.append("the task has no question (input.prompt)")
    if not input_shas:
        problems.append("the task has no input image")
    if not checkpoints:
        problems.append("the reference trajectory has no steps")
    plan = {p.step_id: p for p in image_plan(doc, input_shas)}

    intro = f"Question: {prompt}\n\nThe question's image"
    intro += "s follow." if len(input_shas) > 1 else " follows."
    parts: list[Part] = [Text(intro)]
    for n, sha in enumerate(input_shas):
        parts += [Text(f"Image {n}:"), Picture(sha, n)]
    parts.append(Text(STEPS_INTRO))
    notes: list[str] = []
    for position, cp in enumerate(checkpoints, start=1):
        step_id = str(cp.get("id") or f"step {position}")
        step_parts, note, problem = _step_parts(
            cp, position, plan.get(step_id), images or {}, pattern
        )
        parts += step_parts
        notes += [note] if note else []
        problems += [problem] if problem else []

    final = FINAL_ASK.format(question=question.strip() or prompt)
    if instruction:
        final += f"\n{instruction.strip()}"
    parts.append(Text(f"{final}\n{ANSWER_TAGS}"))
    if problems:
        raise OracleInputError(problems)
    return Conversation(system=SYSTEM, parts=parts, notes=notes)
