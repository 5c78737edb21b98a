"""The scripted models of ``bench_evaluate.py``, served by ``tests/llm_server.py`` in a
process of its own (``--respond _scripted_models:reply``). Deterministic: the same request
always gets the same reply, so a replay of a run meets exactly the calls it recorded.

* Agentic-MME (the request offers the atomic image tools): task ``K`` (read from the prompt,
  "Task K: ...") makes ``3 + K % 5`` tool calls, one a round, each on the newest image
  (a crop first, then rotations, enhancements ...; on average 5 over tasks 0..5n-1), then
  answers ``<answer>CODE-K</answer>``.
* ATP-Bench (anything else): one interleaved answer with a Reference and a Diffusion call.
"""

from __future__ import annotations

import re
from typing import Any

OPERATIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("crop", {"bbox_2d": [120, 100, 880, 900], "zoom_scale": 1.0}),
    ("rotate", {"angle": 90}),
    ("enhance", {"brightness": 1.2, "contrast": 1.1}),
    ("flip", {"direction": "horizontal"}),
    ("grayscale", {}),
    ("autocontrast", {"cutoff": 1}),
    ("sharpen", {}),
)
_TASK = re.compile(r"Task (\d+):")

ATP_ANSWER = (
    "The method is smaller and more accurate than both baselines.\n\n"
    '<tool>{"tool_name": "Reference", "description": "the results table", '
    '"params": {"img_index": 0}}</tool>\n\n'
    "In noise it degrades more gracefully.\n\n"
    '<tool>{"tool_name": "Diffusion", "description": "a hearing aid in a noisy cafe", '
    '"params": {"prompt": "a hearing aid on a cafe table, photo"}}</tool>\n\n'
    "So it holds up in noisy rooms."
)


def _task(body: dict[str, Any]) -> int:
    for message in body.get("messages") or []:
        if message.get("role") != "user" or not isinstance(message.get("content"), list):
            continue
        for part in message["content"]:
            found = _TASK.search(str(part.get("text") or ""))
            if found:
                return int(found.group(1))
    return 0


def tool_calls_of(task: int) -> int:
    """How many tool calls the scripted model makes on task ``task`` (3 to 7)."""
    return 3 + task % 5


def mme_reply(body: dict[str, Any]) -> Any:
    task = _task(body)
    done = sum(
        1
        for m in body.get("messages") or []
        if m.get("role") == "assistant" and m.get("tool_calls")
    )
    if body.get("tools") and done < tool_calls_of(task):
        name, params = OPERATIONS[done % len(OPERATIONS)]
        return {
            "content": f"Step {done + 1}: {name}.",
            "tool_calls": [{"name": name, "arguments": {"image_index": done, **params}}],
        }
    return f"The code on the sign reads CODE-{task}. <answer>CODE-{task}</answer>"


def reply(body: dict[str, Any]) -> Any:
    names = {(t.get("function") or {}).get("name") for t in body.get("tools") or []}
    system = str((body.get("messages") or [{}])[0].get("content") or "")
    if "crop" in names or system.startswith("You are a multimodal agent"):
        return mme_reply(body)
    return ATP_ANSWER
