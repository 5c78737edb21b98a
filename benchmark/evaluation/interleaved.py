"""What the two interleaved-answer protocols (ATP-Bench, LLM-I) share: building a message's
content from text and images, the tool-tag facts of one answer, the summary of per-item
scores in the leaderboard's terms, and writing answer files.

The convention of the summaries (``summarize_scores``): a column's figure is the mean of the
items' scores under the same key, over the answered items that have one (``Status.OK``
outcomes; an item whose run failed has no answer and is only counted), except a *pooled*
column (``Column.pooled = (numerator, denominator)``), whose figure is the sum of the items'
numerators over the sum of their denominators, times 100 (a rate over tool calls rather than
over items). Shares are percentages (0-100), as in the papers' tables. Beside each mean
column's figure, ``n_<key>`` says how many items have it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmark.evaluation.base import (
    Column,
    EvaluationError,
    Outcome,
    Ratio,
    Status,
    image_part,
    sha256,
)
from benchmark.metrics.tag_scores import AnswerFacts, answer_facts, tool_set_scores
from benchmark.tags import Syntax, Toolset

__all__ = [
    "Content",
    "adoption_scores",
    "column_ratios",
    "facts_of",
    "model_file_name",
    "percent",
    "summarize_scores",
    "tool_set_figures",
    "write_json",
]


class Content:
    """A user message's content as OpenAI parts: text runs joined, images as
    ``image_part(sha256)`` with their bytes collected in ``images``."""

    def __init__(self, item_id: str, available: Mapping[str, bytes]) -> None:
        self.item_id = item_id
        self.available = available
        self.parts: list[dict[str, Any]] = []
        self.images: dict[str, bytes] = {}

    def text(self, text: str) -> None:
        if not text:
            return
        if self.parts and self.parts[-1]["type"] == "text":
            self.parts[-1]["text"] += text
        else:
            self.parts.append({"type": "text", "text": text})

    def image(self, name: str, what: str) -> None:
        """The image the record calls ``name``; ``what`` says which one, for the message
        when its bytes were not given."""
        data = self.available.get(name)
        if data is None:
            raise EvaluationError(
                f"item {self.item_id}: the bytes of {what} ({name!r}) were not given; "
                "store the image with the item, or fix its path in the record"
            )
        digest = sha256(data)
        self.images[digest] = data
        self.parts.append(image_part(digest))

    def message(self, role: str = "user") -> dict[str, Any]:
        """The message: a plain string when it holds no image."""
        if all(part["type"] == "text" for part in self.parts):
            return {"role": role, "content": "".join(p["text"] for p in self.parts)}
        return {"role": role, "content": list(self.parts)}


def percent(value: float) -> float:
    return 100.0 * value


def facts_of(
    text: str, syntax: Syntax, toolset: Toolset | None, *, input_images: int = 0
) -> AnswerFacts:
    """The calls of one answer as the existing answer scoring reads them."""
    return answer_facts(text, syntax, toolset, input_images=input_images)


def adoption_scores(facts: AnswerFacts, tools: Sequence[str]) -> dict[str, float]:
    """``adoption_<tool>``: 100 when the answer makes a readable call of the tool, else 0."""
    used = facts.tools
    return {f"adoption_{tool}": 100.0 if tool in used else 0.0 for tool in tools}


def tool_set_figures(
    pred: frozenset[str], gold: frozenset[str], *, prefix: str = ""
) -> dict[str, float]:
    """Tool-set precision, recall and F1 of one item in percent (``tool_set_scores``)."""
    p, r, f = tool_set_scores(pred, gold)
    return {
        f"{prefix}precision": percent(p),
        f"{prefix}recall": percent(r),
        f"{prefix}f1": percent(f),
    }


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def summarize_scores(
    outcomes: Sequence[Outcome], columns: Iterable[Column], *, totals: Sequence[str] = ()
) -> dict[str, Any]:
    """Counts and each column's figure over the outcomes (see the module docstring);
    ``totals``: per-item counts to sum as well (``n_calls``, ...). A figure no item has is
    None."""
    answered = [o for o in outcomes if o.status == Status.OK]
    summary: dict[str, Any] = {
        "n_items": len(outcomes),
        "n_answered": len(answered),
        "n_errors": sum(1 for o in outcomes if o.status == Status.ERROR),
        "model_calls": sum(o.model_calls for o in outcomes),
        "prompt_tokens": sum(o.prompt_tokens for o in outcomes),
        "completion_tokens": sum(o.completion_tokens for o in outcomes),
    }
    for key in totals:
        summary[key] = sum(int(o.scores.get(key) or 0) for o in answered)
    for column in columns:
        if column.pooled is not None:
            num_key, den_key = column.pooled
            num = sum(_number(o.scores.get(num_key)) or 0.0 for o in answered)
            den = sum(_number(o.scores.get(den_key)) or 0.0 for o in answered)
            summary[column.key] = 100.0 * num / den if den else None
            continue
        values = [v for o in answered if (v := _number(o.scores.get(column.key))) is not None]
        summary[column.key] = math.fsum(values) / len(values) if values else None
        summary[f"n_{column.key}"] = len(values)
    return summary


def column_ratios(outcomes: Sequence[Outcome], columns: Iterable[Column]) -> dict[str, Ratio]:
    """Each column's figure of :func:`summarize_scores` as a ratio of per-item sums (for the
    bootstrap, ``benchmark.evaluation.base.RatioFigures``): a mean column is (score, 1) for
    the answered items that have a score and (0, 0) for the others; a pooled column is the
    answered items' (numerator, denominator), times 100."""
    out: dict[str, Ratio] = {}
    answered = [o.status == Status.OK for o in outcomes]
    for column in columns:
        if column.pooled is not None:
            num_key, den_key = column.pooled
            out[column.key] = Ratio(
                tuple(
                    (_number(o.scores.get(num_key)) or 0.0) if ok else 0.0
                    for o, ok in zip(outcomes, answered, strict=True)
                ),
                tuple(
                    (_number(o.scores.get(den_key)) or 0.0) if ok else 0.0
                    for o, ok in zip(outcomes, answered, strict=True)
                ),
                100.0,
            )
            continue
        values = [
            _number(o.scores.get(column.key)) if ok else None
            for o, ok in zip(outcomes, answered, strict=True)
        ]
        out[column.key] = Ratio(
            tuple(v or 0.0 for v in values), tuple(0.0 if v is None else 1.0 for v in values)
        )
    return out


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def model_file_name(model: str) -> str:
    """A file or folder name for a model name (``org/model:tag`` -> ``org_model_tag``)."""
    name = _UNSAFE.sub("_", model.strip()).strip("._")
    return name or "model"


def write_json(path: Path, value: Any, *, lines: bool = False) -> str:
    """Write ``value`` as UTF-8 JSON (``lines``: one JSON object per line) and return the
    path written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if lines:
        text = "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in value)
    else:
        text = json.dumps(value, ensure_ascii=False, indent=2) + "\n"
    path.write_text(text, encoding="utf-8")
    return str(path)
