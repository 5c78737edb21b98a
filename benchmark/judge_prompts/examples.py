"""Worked examples in a judge's prompt: corrections people made to a judge, written into a new
version of its template (pure code, no Django).

A :class:`WorkedExample` is one case where people's answer differs from the judge's: what the
judge saw (a short summary of the input), the people's answer as the judge is asked to write it,
what the judge said, and a short reason. :func:`examples_block` writes them as one block of text;
:func:`with_examples` appends that block to a template's system text (brace-escaped, so the
template keeps exactly its placeholders and still renders). Adding examples again replaces the
block written before (the text between :data:`BEGIN` and :data:`END`), so a template never
carries two blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .base import Template

__all__ = [
    "BEGIN",
    "END",
    "MAX_SUMMARY_CHARS",
    "WorkedExample",
    "examples_block",
    "shorten",
    "with_examples",
]

BEGIN = "### Worked examples (corrections by people)"
END = "### End of worked examples"
#: At most this many characters of one example's input summary (and of its reason).
MAX_SUMMARY_CHARS = 600
DEFAULT_INTRO = (
    "In these cases a judge answered differently from the people who checked its work. "
    "Answer as the people did in cases like them."
)


@dataclass(frozen=True)
class WorkedExample:
    """One correction: ``summary`` is what the judge was shown (short), ``answer`` the people's
    answer written as the judge is asked to answer, ``judge_answer`` what the judge said."""

    unit: str
    summary: str
    answer: str
    reason: str
    judge_answer: str = ""


def shorten(text: str, limit: int = MAX_SUMMARY_CHARS) -> str:
    """``text`` on one line of at most ``limit`` characters (an ellipsis marks a cut)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)].rstrip() + "…"


def examples_block(
    examples: Sequence[WorkedExample],
    *,
    intro: str = DEFAULT_INTRO,
    answer_chars: int | None = 200,
) -> str:
    """The examples as one block of plain text (no template escaping), numbered in order; each
    answer on one line cut at ``answer_chars``, or with None written whole on the lines after
    "Correct answer:" (a corrected report in the agent's own output format)."""
    lines = [BEGIN, intro]
    for n, example in enumerate(examples, start=1):
        lines.append("")
        lines.append(f"Example {n}")
        lines.append(f"Input: {shorten(example.summary)}")
        if example.judge_answer:
            lines.append(f"A judge answered: {shorten(example.judge_answer, 200)}")
        if answer_chars is None:
            lines.append("Correct answer:")
            lines.append(example.answer.strip())
        else:
            lines.append(f"Correct answer: {shorten(example.answer, answer_chars)}")
        if example.reason:
            lines.append(f"Why: {shorten(example.reason)}")
    lines.append(END)
    return "\n".join(lines)


def _escaped(text: str) -> str:
    """``text`` as literal template text: every brace doubled."""
    return text.replace("{", "{{").replace("}", "}}")


def without_examples(text: str) -> str:
    """``text`` without a block :func:`with_examples` added (and the blank line before it)."""
    start = text.find(BEGIN)
    if start < 0:
        return text
    end = text.find(END, start)
    tail = text[end + len(END) :] if end >= 0 else ""
    return (text[:start].rstrip("\n") + tail).rstrip("\n")


def with_examples(template: Template, block: str) -> Template:
    """``template`` with ``block`` at the end of its system text (replacing a block added
    before); the user text and the placeholders are unchanged."""
    base = without_examples(template.system)
    system = f"{base}\n\n{_escaped(block)}" if base else _escaped(block)
    return Template(
        id=template.id, system=system, user=template.user, description=template.description
    )
