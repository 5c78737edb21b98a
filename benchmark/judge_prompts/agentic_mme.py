"""Agentic-MME judges (Agentic-MME §3.1, App. A.1, A.2, A.4).

* **V judge** (visual checkpoints): the checkpoint's specific question is asked about each image
  the run produced from the checkpoint's match onwards, one call per image with the image
  attached. The judge answers on one line ``Answer: ...``. The checkpoint passes when the
  expected answer appears, case-insensitively, in any of the judge's answers (the released
  any-pass rule, App. A.2). Images whose judgment failed are excluded and counted; a checkpoint
  with no valid answer and no pass is undetermined (None).
* **S judge** (search checkpoints): receives the checkpoint's description, search keywords and
  expected finding, the agent's queries and the returned results, and answers PASS or FAIL
  alone on its first line (a reason may follow on later lines). Lenient on query wording,
  strict on whether the expected information was actually retrieved (App. A.4).

:func:`visual_check_from` and :func:`search_check_from` turn parsed judgments into the
``visual_check`` / ``search_check`` hooks of :func:`benchmark.metrics.agentic_mme.score_run`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import Call, JudgeOutputError, Judgment, Template, build_call, output_text

V_TEMPLATE = Template(
    id="agentic_mme.v_judge",
    description="Agentic-MME V judge: one checkpoint question about one produced image",
    system=(
        "You look at one image an agent produced while solving a visual task (a crop, a "
        "rotation, an enhanced view...) and answer one specific question about what this "
        "image itself shows. Do not guess from outside knowledge; if the image does not show "
        "it, say so.\nReply with one line and nothing else: Answer: <your short answer>"
    ),
    user="Question: {question}",
)

S_TEMPLATE = Template(
    id="agentic_mme.s_judge",
    description="Agentic-MME S judge: did the agent's search retrieve the expected finding",
    system=(
        "You check one search step of an agent. Be lenient about how the queries are worded "
        "and strict about whether the returned results actually contain the information the "
        "step was meant to find.\nReply with PASS or FAIL alone on the first line; you may "
        "give a short reason on the next line."
    ),
    user=(
        "Step description: {description}\n"
        "Search keywords: {keywords}\n"
        "Expected finding: {expected}\n\n"
        "Agent's queries:\n{queries}\n\n"
        "Returned results:\n{results}"
    ),
)


# --------------------------------------------------------------------------- V judge


@dataclass(frozen=True)
class VAnswer:
    answer: str


def parse_v(raw: str) -> VAnswer:
    """Exactly one non-empty line ``Answer: <text>``."""
    lines = [line.strip() for line in output_text(raw).splitlines() if line.strip()]
    if len(lines) != 1:
        raise JudgeOutputError(f"expected one line 'Answer: ...', got {len(lines)} lines")
    label, sep, answer = lines[0].partition(":")
    if not sep or label.strip() != "Answer":
        raise JudgeOutputError(f"expected a line 'Answer: ...', got {lines[0][:80]!r}")
    if not answer.strip():
        raise JudgeOutputError("the answer after 'Answer:' is empty")
    return VAnswer(answer=answer.strip())


def v_calls(
    *, question: str, images: Sequence[str], model: str, template: Template = V_TEMPLATE
) -> list[Call]:
    """One call per image (data URLs or references), labelled ``image 1``, ``image 2``..."""
    return [
        build_call(template, model, f"image {i}", {"question": question}, [ref])
        for i, ref in enumerate(images, start=1)
    ]


def answer_shows(answer: str, expected: str) -> bool:
    """The expected answer appears in the judge's answer, case-insensitively."""
    return bool(expected.strip()) and expected.strip().casefold() in answer.casefold()


@dataclass(frozen=True)
class VCheckpoint:
    passed: bool | None
    """True if any valid answer shows the expected answer; False if none does and some answer
    is valid; None when every image's judgment failed (or there were no images)."""
    n: int
    excluded: int
    passing: tuple[str, ...]
    """Labels of the images whose answer showed the expected answer."""


def v_checkpoint(judgments: Sequence[Judgment[VAnswer]], expected: str) -> VCheckpoint:
    """The any-pass rule over one checkpoint's per-image judgments."""
    valid = [j for j in judgments if j.value is not None]
    passing = tuple(j.label for j in valid if j.value and answer_shows(j.value.answer, expected))
    passed: bool | None = True if passing else (False if valid else None)
    return VCheckpoint(
        passed=passed, n=len(valid), excluded=len(judgments) - len(valid), passing=passing
    )


def visual_check_from(
    answers: Mapping[tuple[str, str], VAnswer | None],
) -> Callable[[Path, str, str], bool | None]:
    """A ``visual_check(image_path, question, expected)`` hook for the run scorer, answering
    from judged outputs keyed by (image file name, question); unknown or failed is None."""

    def check(path: Path, question: str, expected: str) -> bool | None:
        found = answers.get((path.name, question))
        return None if found is None else answer_shows(found.answer, expected)

    return check


# --------------------------------------------------------------------------- S judge


@dataclass(frozen=True)
class SVerdict:
    passed: bool
    reason: str


def parse_s(raw: str) -> SVerdict:
    """``PASS`` or ``FAIL`` alone on the first line; anything after is the reason."""
    first, _, rest = output_text(raw).partition("\n")
    word = first.strip()
    if word not in ("PASS", "FAIL"):
        raise JudgeOutputError(f"first line must be PASS or FAIL, got {word[:40]!r}")
    return SVerdict(passed=word == "PASS", reason=rest.strip())


def s_call(
    *,
    description: str,
    keywords: Sequence[str],
    expected: str,
    queries: Sequence[str],
    results: Sequence[str],
    model: str,
    template: Template = S_TEMPLATE,
) -> Call:
    values = {
        "description": description,
        "keywords": ", ".join(keywords) or "(none)",
        "expected": expected or "(not stated)",
        "queries": "\n".join(f"- {q}" for q in queries) or "(none)",
        "results": "\n\n".join(f"[{i}] {r}" for i, r in enumerate(results, start=1)) or "(none)",
    }
    return build_call(template, model, "search", values)


def search_check_from(
    verdicts: Mapping[str, SVerdict | None],
) -> Callable[[Mapping[str, Any], Sequence[str], Sequence[str]], bool | None]:
    """A ``search_check(checkpoint, queries, contexts)`` hook answering from judged verdicts
    keyed by checkpoint id; unknown or failed is None (undetermined)."""

    def check(
        cp: Mapping[str, Any], queries: Sequence[str], contexts: Sequence[str]
    ) -> bool | None:
        found = verdicts.get(str(cp.get("id")))
        return None if found is None else found.passed

    return check
