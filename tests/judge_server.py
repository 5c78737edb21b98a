"""The fake model server with scripted replies for the judge pages' tests (page and browser):
each request is answered with ``script(system, user, model)``, where ``user`` is the text of
the last user message (its text parts, when images are attached) and ``model`` the model the
request names. Also the replies the tests script, and answer files to upload."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from tests.llm_server import FakeModelServer

GARBAGE = "I think it is fine."


def text_of(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
    return str(content)


class ScriptedServer(FakeModelServer):
    script: Callable[[str, str, str], str] = staticmethod(lambda system, user, model: GARBAGE)

    def _reply(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict]:
        status, payload, headers = super()._reply(path, body)
        if status == 200:
            messages = body["messages"]
            system = next((text_of(m["content"]) for m in messages if m["role"] == "system"), "")
            user = text_of([m for m in messages if m["role"] == "user"][-1]["content"])
            payload["choices"][0]["message"]["content"] = self.script(
                system, user, str(body.get("model", ""))
            )
        return status, payload, headers


def rubric(score: int, why: str = "because") -> str:
    return json.dumps({"score": score, "justification": why})


def criterion_of(user: str) -> str:
    """The criterion key a rubric call asks about ("r1", "r2", ...)."""
    return user.rsplit("Criterion ", 1)[1].split(":", 1)[0]


def jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode()


def tool(name: str, params: dict[str, Any]) -> str:
    payload = {"tool_name": name, "description": "d", "params": params}
    return "<tool>" + json.dumps(payload) + "</tool>"


def check(index: int, **scores: int) -> dict[str, Any]:
    """A Precision Inspector entry, every sub-check 2 unless given."""
    entry: dict[str, Any] = {
        "index": index,
        "necessity": 2,
        "position": 2,
        "structure": 2,
        "tool_choice": 2,
        "parameters": 2,
        "format": 2,
        "comment": "ok",
    }
    entry.update(scores)
    return entry


# --------------------------------------------------------------------------- model vs model


def prefer(system: str, user: str, model: str) -> str:
    """On a query saying POSITION always A (a position bias: flips); else the answer holding
    GOOD when only one does; a tie otherwise."""
    first, second = re.search(r"\[Answer A\]\n(.*)\n\n\[Answer B\]\n(.*)", user, re.S).groups()  # type: ignore[union-attr]
    if "POSITION" in user:
        return "A\nThe first one reads better."
    if "GOOD" in first and "GOOD" not in second:
        return "A\nIt answers the request."
    if "GOOD" in second and "GOOD" not in first:
        return "B\nIt answers the request."
    return "TIE\nBoth are as good."


#: Per item: alpha's answer (model A), the judge model's own (model B). q1 A wins (longer),
#: q2 B wins (longer), q3 flips (tie), q4 a tie, q5 A wins (shorter); q6 only alpha.
TEXTS = {
    "q1": ("GOOD " + "x" * 50, "short"),
    "q2": ("meh", "GOOD and longer"),
    "q3": ("one", "two"),
    "q4": ("plain a", "plain bb"),
    "q5": ("GOOD x", "a much longer answer without it"),
    "q6": ("alone", None),
}
