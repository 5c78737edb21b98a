"""The prompts of model drafting, built from plain values (no queries here).

Queries follow ATP-Bench §4.1: given a category and a visual-critical intent, synthesize
natural, conversational queries that intrinsically need images in the answer, not explicit
tool-oriented requests. Answers follow the ground-truth stage (§4.2): text with a tool call
placed right after the text it illustrates, only where an image materially helps. Rubrics
follow LLMI-Bench (App. C): ten checkable criteria. Plans follow m&m's (§3.2): the JSON form
of a plan over the project's tools."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def tool_lines(tools: Iterable[Mapping[str, Any]], *, with_io: bool = False) -> str:
    """One line per tool: name, what it does, its parameters (and, for plans, its inputs and
    outputs)."""
    lines = []
    for tool in tools:
        params = ", ".join(
            f"{p.get('name')}: {p.get('type', 'str')}"
            + ("" if p.get("required", True) else " (optional)")
            for p in tool.get("parameters") or []
            if isinstance(p, Mapping) and p.get("name")
        )
        line = f"- {tool['name']}({params})"
        if tool.get("description"):
            line += f": {' '.join(str(tool['description']).split())}"
        if with_io:
            outputs = ", ".join(str(o) for o in tool.get("output_names") or [])
            line += f" [outputs: {outputs or 'none'}]"
        lines.append(line)
    return "\n".join(lines) or "- (the project's toolset has no tools)"


def queries_prompt(
    *, category: str, intent: str, n: int, description: str = "", examples: Sequence[str] = ()
) -> str:
    parts = [
        "You write user queries for a benchmark of interleaved text-and-image answers "
        "(ATP-Bench). A good query is visual-critical: a helpful answer to it needs images "
        "(a photo, a diagram, a generated illustration), yet it is phrased the way a person "
        "would naturally ask, in a conversational tone, never as an explicit request to "
        "search, draw or call a tool.",
        f"Category: {category}",
        f"Intent: {intent}" + (f" ({description})" if description else ""),
    ]
    if examples:
        parts.append("Queries already in the benchmark for this intent (do not repeat them):")
        parts.extend(f"- {e}" for e in examples)
    parts.append(
        f"Write {n} different queries for this category and intent. Each must be clear, "
        "unambiguous and self-contained. Reply with a JSON list of "
        f"{n} strings and nothing else."
    )
    return "\n\n".join(parts)


def answer_prompt(
    *,
    tag: str,
    query: str,
    documents: Sequence[Mapping[str, Any]],
    tools: str,
    image_constraint: str = "",
) -> str:
    """``tag``: the form of a tool call in the benchmark's syntax (``answer_tag_form``)."""
    parts = [
        "Write the ground-truth answer to the user's query as interleaved text and images. "
        "Where an image materially improves understanding, put a tool call right after the "
        "text it illustrates, at a paragraph boundary, in exactly this form:",
        tag,
        "Available tools:",
        tools,
        "Use correct parameters for each tool; do not add redundant images. Reply with the "
        "answer only (Markdown text with the tool calls).",
    ]
    if image_constraint:
        parts.append(image_constraint)
    index = 0
    for n, doc in enumerate(documents, start=1):
        text = doc.get("text") or doc.get("content") or ""
        images = doc.get("images") if isinstance(doc.get("images"), list) else []
        where = ""
        if images:
            last = index + len(images) - 1
            where = f" (its images are img_index {index}" + (
                f" to {last})" if last > index else ")"
            )
            index = last + 1
        if isinstance(text, str) and text.strip():
            parts.append(f"Document {n}{where}:\n{text.strip()}")
    parts.append(f"Query:\n{query}")
    return "\n\n".join(parts)


def rubric_prompt(*, query: str) -> str:
    return "\n\n".join(
        [
            "You write the evaluation rubric of a benchmark prompt for interleaved "
            "text-and-image generation (LLMI-Bench): ten criteria a judge checks an answer "
            "against. Each criterion is one checkable sentence about the answer (its content, "
            "its images, how text and images fit together), specific to this prompt, never "
            "vague.",
            f"Prompt:\n{query}",
            "Reply with a JSON list of exactly 10 strings (criteria r1 to r10) and nothing else.",
        ]
    )


def plan_prompt(*, query: str, tools: str, inputs: Sequence[str] = ()) -> str:
    example = [
        {"id": 0, "name": "image captioning", "args": {"image": "2339720.jpg"}},
        {"id": 1, "name": "image generation", "args": {"text": "<node-0>.text"}},
    ]
    parts = [
        "Plan the tool calls that fulfil the user's request (m&m's). A plan is a JSON list of "
        'steps {"id": K, "name": tool, "args": {...}}, ids counting from 0. An argument may '
        "use an earlier step's output as <node-K>.output_name, alone or inside text.",
        "Available tools (with their arguments and outputs):",
        tools,
        f"Example of the form: {json.dumps(example)}",
    ]
    if inputs:
        parts.append("Input files: " + ", ".join(inputs))
    parts.append(f"Request:\n{query}")
    parts.append("Reply with the JSON plan only.")
    return "\n\n".join(parts)
