"""LLM-I / LLMI-Bench: a model under test writes an interleaved report with ``<imgen>`` tags
(paper §2.1.3) and is scored by rule (§2.2.2, §2.3, Table 2 "Tool Acc", Table 4 "Image num").

Prompt (ours, after LLM-I's system prompt: the same tag, tools and rules). One model call:

* a system message: write the answer as a document where images appear in the flow of the
  text; each image is a raw ``<imgen>{'source': ..., 'description': ..., 'params': {...}}
  </imgen>`` tag (no code fences); the four tools with their parameters: search (``query``),
  diffusion (``prompt``), code (``code``: Python drawing one matplotlib figure) and edit
  (``img_index``, ``prompt``; the index counts the input images from 0, then the images of
  earlier tags);
* the user turn: the prompt's text (a training row's ``extra_info.question``, else its
  prompt), the input images numbered by ``img_index``, and the item's image-number
  constraint where it has one (training rows' ``extra_info.image_num``: -1 no image, 0 any
  number, n exactly n, 99 or Inf at least one). LLM-I's own prompts leave the count implicit;
  ``settings.extra["image_count_in_prompt"] = False`` does the same here (the count is then
  still scored).

The output is the model's response text. Scores of one item, from the existing scorers
(``benchmark.metrics.tag_scores``, ``benchmark.tags.rule_score``):

* ``n_tags``, ``n_tags_passed``: the tags (every opening ``<imgen>``) and those passing the
  tool-call check (§2.3; ``llmi_tag_checks``: LLM-I's own test that a tag yields an image,
  as far as it can be made without running a tool). Pooled over items they give
  ``tool_acc``, Table 2's "Tool Acc" (success rate of tool invocation). ``tool_check`` is 100
  when every tag of the answer passes (the answer survives §2.3's filter), else 0.
* ``n_gen``: the images the answer yields (N_gen); with a constraint, ``r_rule`` (eq. 1, on
  0-1) and ``image_num`` (100 when the constraint is met exactly, Table 4's "Image num").
* with the row's target tools (``extra_info.tools``): ``tool_precision``, ``tool_recall``,
  ``tool_f1`` of the answer's tool set (Figure 6's tool F1; ``tool_set_scores``).
* ``adoption_<tool>`` and ``calls_per_answer`` as for ATP-Bench.

The rubric (Table 2 "Rubric") and the LLM / MLLM judges (Table 4) are judge runs over the
written answers (``review/judges``), not columns here. ``write_outputs`` writes
``<model>/json_results/evaluation_results.json`` in LLM-I's result layout (``sample_index``,
``answer``) with ``input_file``, ``id`` and ``model``: what ``manage.py score_responses``,
the judges, the rendering and the LLM-I importer read.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmark.evaluation.base import (
    Chat,
    Column,
    EvalItem,
    EvalProtocol,
    EvalSettings,
    EvaluationError,
    Outcome,
    Ratio,
    Status,
    ToolLayer,
)
from benchmark.evaluation.interleaved import (
    Content,
    adoption_scores,
    column_ratios,
    facts_of,
    model_file_name,
    summarize_scores,
    write_json,
)
from benchmark.formats import llmi as llmi_format
from benchmark.formats.base import FormatError, ItemRecord
from benchmark.metrics.tag_scores import llmi_tag_checks, tool_set_scores
from benchmark.tags import Toolset, parse_image_num, rule_score

__all__ = ["PROTOCOL", "LlmiProtocol", "build_messages", "constraint_text", "score_answer"]

TOOLS: tuple[str, ...] = ("search", "diffusion", "code", "edit")

TOOL_GUIDE: tuple[tuple[str, str, str], ...] = (
    (
        "search",
        "a real photo from a web image search: real people, places, landmarks, products, "
        "events, or anything that must look authentic or current",
        "{'query': '<a short web image-search query>'}",
    ),
    (
        "diffusion",
        "a new image from a text-to-image model: original, stylised, imagined or abstract "
        "scenes that do not exist as photos",
        "{'prompt': '<a detailed image prompt>'}",
    ),
    (
        "code",
        "a chart, plot or graph drawn by running Python, for data that must be shown "
        "exactly; write plain Python that draws one matplotlib figure (import what you use; "
        "do not call plt.show() or plt.savefig())",
        "{'code': '<the Python source>'}",
    ),
    (
        "edit",
        "a change to an image that already exists: an input image or one made by an earlier "
        "tag of your answer",
        "{'img_index': <int>, 'prompt': '<what to change>'}",
    ),
)


def system_prompt() -> str:
    lines = [
        "You write documents in which images appear naturally within the text. You do not "
        "make the images yourself: where an image belongs, you write a tag that stands for "
        "it, and each tag is replaced by the image a tool produces for it.",
        "",
        "The tag is written exactly so, as raw text in the flow of the document (never inside "
        "a code block or fenced with ```):",
        "<imgen>{'source': '<tool>', 'description': '<a short, specific title of the image>', "
        "'params': {...}}</imgen>",
        "",
        "Choose the tool (source) that fits each image; params depend on it:",
    ]
    for name, guide, params in TOOL_GUIDE:
        lines.append(f"- '{name}': {guide}. params: {params}")
    lines += [
        "",
        "img_index is 0-based: the input images come first (img_index 0, 1, ...), then the "
        "images of your earlier tags in order. Give params exactly the keys shown, nothing "
        "else. Reply with the document only.",
    ]
    return "\n".join(lines)


def constraint_text(image_num: Any) -> str:
    """The image-number constraint in words ('' when the value is not one)."""
    try:
        n_req = parse_image_num(image_num)
    except ValueError:
        return ""
    if n_req == -1:
        return "Do not include any image in this answer: write text only, with no <imgen> tag."
    if n_req == 0:
        return "Use as many images as the answer needs (none is fine)."
    if math.isinf(n_req):
        return "Include at least one image."
    n = int(n_req)
    return f"Include exactly {n} image{'s' if n != 1 else ''}."


def _parsed(record: Mapping[str, Any], item_id: str, where: str = "item") -> ItemRecord:
    try:
        return llmi_format.parse_record(dict(record))
    except FormatError as exc:
        raise EvaluationError(f"{where} {item_id}: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise EvaluationError(f"{where} {item_id}: not an LLM-I row ({exc})") from None


def _inputs(record: ItemRecord) -> list[str]:
    refs = sorted((r for r in record.images if r.role == "input"), key=lambda r: r.position)
    return [r.path for r in refs]


def build_messages(
    item: EvalItem, settings: EvalSettings
) -> tuple[list[dict[str, Any]], dict[str, bytes]]:
    """The messages of the one model call and the images they refer to (by sha256)."""
    record = _parsed(item.record, item.id)
    content = Content(item.id, item.images)
    content.text(record.query.strip() + "\n")
    for index, path in enumerate(_inputs(record)):
        content.text(f"\n[img_index {index}]\n")
        content.image(path, f"input image img_index {index}")
    if settings.extra.get("image_count_in_prompt", True) and "image_num" in record.constraints:
        rule = constraint_text(record.constraints["image_num"])
        if rule:
            content.text(f"\n{rule}\n")
    messages = [{"role": "system", "content": system_prompt()}, content.message()]
    return messages, content.images


def score_answer(
    answer: str,
    *,
    input_images: int = 0,
    image_num: Any = None,
    required_tools: list[str] | None = None,
    toolset: Toolset | None = None,
) -> dict[str, Any]:
    """One item's scores (see the module docstring). Never raises on the answer's text."""
    facts = facts_of(answer, "llmi", toolset, input_images=input_images)
    checks = llmi_tag_checks(answer, input_images)
    n_tags = facts.n_calls
    passed = min(sum(checks), n_tags)
    scores: dict[str, Any] = {
        "n_tags": n_tags,
        "n_tags_passed": passed,
        "tool_acc": 100.0 * passed / n_tags if n_tags else None,
        "tool_check": 100.0 if passed == n_tags else 0.0,
        "n_gen": facts.n_gen,
        "calls_per_answer": float(n_tags),
        "tools": sorted(facts.tools),
        **adoption_scores(facts, TOOLS),
    }
    if image_num is not None and constraint_text(image_num):
        r_rule = rule_score(facts.n_gen or 0, image_num)
        scores["image_num_required"] = image_num
        scores["r_rule"] = r_rule
        scores["image_num"] = 100.0 if r_rule >= 1.0 else 0.0
    if required_tools is not None:
        gold = frozenset(t.strip().lower() for t in required_tools)
        p, r, f = tool_set_scores(facts.tools, gold)
        scores.update(
            required_tools=sorted(gold),
            tool_precision=100.0 * p,
            tool_recall=100.0 * r,
            tool_f1=100.0 * f,
        )
    return scores


_ROW_ID = re.compile(r"^(?P<stem>.+)#(?P<n>[0-9]+)$")


class LlmiProtocol:
    """LLM-I's protocol for a model under test (see the module docstring)."""

    settings: tuple[str, ...] = ()
    #: Solved: R_rule = 1 (the answer has the image count the item asks for); items with no
    #: image-number constraint have no R_rule and are unscored.
    solved: str = "r_rule"
    columns: tuple[Column, ...] = (
        Column("tool_acc", "Tool Acc", pooled=("n_tags_passed", "n_tags")),
        Column("image_num", "Image num"),
        Column("r_rule", "R_rule", percent=False),
        Column("tool_check", "Passes the tool-call check"),
        Column("tool_f1", "Tool F1"),
        Column("tool_precision", "Tool precision"),
        Column("tool_recall", "Tool recall"),
        *(Column(f"adoption_{tool}", f"Adoption: {tool}") for tool in TOOLS),
        Column("calls_per_answer", "Tags per answer", percent=False),
    )

    def run_item(
        self,
        item: EvalItem,
        *,
        settings: EvalSettings,
        chat: Chat,
        tools: ToolLayer,
        truth: Mapping[str, Any] | None = None,
    ) -> Outcome:
        messages, images = build_messages(item, settings)
        record = _parsed(item.record, item.id)
        target = record
        if truth is not None:
            target = _parsed(truth, item.id, "ground truth of item")
        outcome = Outcome(item=item.id, status=Status.OK)
        reply = chat(messages, images=images)  # EvaluationError goes to the caller
        outcome.count(reply)
        answer = reply.text or ""
        outcome.output = answer
        outcome.trace = [*messages, reply.assistant_message()]
        required = target.constraints.get("tools")
        outcome.scores = score_answer(
            answer,
            input_images=len(_inputs(record)),
            image_num=record.constraints.get("image_num"),
            required_tools=list(required) if isinstance(required, list) else None,
            toolset=settings.extra.get("toolset"),
        )
        return outcome

    def summarize(self, outcomes: list[Outcome]) -> dict[str, Any]:
        summary = summarize_scores(outcomes, self.columns, totals=("n_tags", "n_tags_passed"))
        answered = [o for o in outcomes if o.status == Status.OK]
        summary["n_constrained"] = sum(1 for o in answered if "r_rule" in o.scores)
        return summary

    def ratios(self, outcomes: list[Outcome]) -> dict[str, Ratio]:
        """Every column's figure as a ratio of per-item sums (for the bootstrap)."""
        return column_ratios(outcomes, self.columns)

    def write_outputs(self, outcomes: list[Outcome], out_dir: str, *, model: str) -> list[str]:
        rows = []
        for o in outcomes:
            if o.status != Status.OK:
                continue
            row: dict[str, Any] = {"id": o.item}
            match = _ROW_ID.match(o.item)
            if match is not None:
                row["input_file"] = f"{match['stem']}.json"
                row["sample_index"] = int(match["n"])
            row.update(answer=o.output or "", model=model)
            rows.append(row)
        folder = Path(out_dir) / model_file_name(model) / "json_results"
        return [write_json(folder / "evaluation_results.json", rows)]


PROTOCOL: EvalProtocol = LlmiProtocol()
