"""ATP-Bench: a model under test plans an interleaved answer (paper §3, §5.1) and is scored
against the verified ground truth (§5.2, Table 6, Figure 4).

Prompt (ours, after the paper's setting: the same tool boundary as the ground-truth prompt,
zero-shot by default, N-shot on request). One model call:

* a system message: the task (answer the query as interleaved text and images; put a tool
  call where an image materially helps, right after the text it illustrates, at a paragraph
  boundary), the tag form ``<tool>{"tool_name", "description", "params"}</tool>`` with a JSON
  payload, and the five tools (Reference, Diffusion, Search, Code, Edit) with their
  parameters and boundaries;
* for N-shot (``settings.shots`` > 0), the first N of ``settings.examples`` (verified items),
  each as a user turn built like the real one and an assistant turn holding its ground-truth
  answer (``gt``);
* the user turn: each document's text followed by its images, every image preceded by its
  ``img_index`` (counted over the record's ``images`` list, the order the ground truth uses),
  then the query and, for a VQA item, the query image (which has no ``img_index``).

The output is the model's response text (``Outcome.output``). Scores of one item (shares in
percent, 0-100), from ``benchmark.metrics.tag_scores`` (the scorer of ``manage.py
score_responses``):

* ``format_valid``: 100 when the answer holds at least one tool call and every call is
  well-formed (App. B.1 metric 2c, as ``answer_facts`` decides: closed tag, strict JSON
  payload, a tool of the toolset, the schema's parameters with their types), else 0. An
  answer without any call, with broken JSON or an unknown tool scores 0.
* ``n_calls``, ``n_well_formed``: the calls (every opening tag) and the well-formed ones; the
  summary pools them into ``format_correctness`` (2c per call).
* ``adoption_<tool>``: 100 when the answer makes a readable call of the tool (§5.2 "Tool
  Adoption Rate").
* ``precision``, ``recall``, ``f1``: the answer's tool set against the tool set of the
  verified ground truth (``truth["gt"]``), per ``tool_set_scores`` (§5.2, Table 6); only
  when ``truth`` holds a ground-truth answer.
* ``calls_per_answer``: the number of calls (Figure 3).

The summary's figures are those scores over the answered items (means; P/R/F1 are therefore
the macro average over queries that Table 6 reports), plus counts. MAM's FS, SR and MI
(Tables 3-5) come from the MAM judge run over the written answers (``review/judges``), so
they are not columns here. ``write_outputs`` writes ``<model>.jsonl`` with one
``{"trace_id", "model", "answer"}`` per answered item: what ``manage.py score_responses``,
the judges and the rendering read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    tool_set_figures,
    write_json,
)
from benchmark.formats import atp as atp_format
from benchmark.formats.base import FormatError, ItemRecord
from benchmark.tags import ATP_TOOLSET, Toolset

__all__ = ["PROTOCOL", "AtpProtocol", "build_messages", "score_answer"]

#: The five tools, lower-case as the scorer names them, in the paper's order.
TOOLS: tuple[str, ...] = ("reference", "diffusion", "search", "code", "edit")

#: How each tool is shown to the model: its name as the tag writes it, what it is for and
#: where its boundary lies (paper §3, in our words).
TOOL_GUIDE: tuple[tuple[str, str], ...] = (
    (
        "Reference",
        "show one of the document images as it is, as evidence for the paragraph it follows. "
        "It cannot change the picture (use Edit) nor show what the documents do not contain.",
    ),
    (
        "Diffusion",
        "generate a new picture from a detailed prompt: concept illustrations, artistic or "
        "imagined scenes that no document shows. Not for evidence about a real, specific "
        "person, product or place, and not for exact data.",
    ),
    (
        "Search",
        "find an existing real-world photo with a web image search, to show how a real "
        "entity, place or product looks. Give a short, precise query.",
    ),
    (
        "Code",
        "draw a chart, plot or diagram by running Python (matplotlib), for data-driven "
        "visuals whose values must be exact. Not for photos or illustrations.",
    ),
    (
        "Edit",
        "change one document image locally: add labels or arrows, highlight or circle a "
        "region. It needs a document image to start from.",
    ),
)

TAG_FORM = (
    '<tool>{"tool_name": "<Tool>", "description": "<what the image shows>", "params": {...}}</tool>'
)


def _param_list(toolset: Mapping[str, Any], name: str) -> str:
    params = toolset.get(name.lower(), {}).get("params", ())
    return ", ".join(f'"{p["name"]}": <{p.get("type") or "str"}>' for p in params)


def system_prompt(toolset: Mapping[str, Any] = ATP_TOOLSET) -> str:
    lines = [
        "You answer the user's query as an interleaved document of text and images. You do "
        "not draw images yourself: wherever an image would materially help the reader (it "
        "conveys details words cannot, speeds up understanding of a procedure or a layout, "
        "or makes a structure explicit), you write a tool call that stands for that image. "
        "Put each call on its own line right after the text it illustrates, at a paragraph "
        "boundary, never inside a sentence. Add no decorative or redundant images, and do "
        "not describe the calls in the text.",
        "",
        "A tool call is exactly this tag, with a JSON object inside (double quotes, no "
        "trailing commas, no code fences around it):",
        TAG_FORM,
        "",
        "Tools (tool_name, what it is for, and its params):",
    ]
    for name, guide in TOOL_GUIDE:
        lines.append(f"- {name}: {guide} params: {{{_param_list(toolset, name)}}}")
    lines += [
        "",
        "img_index counts the document images from 0, in the order they are numbered in the "
        "user's message; an image attached to the query itself has no img_index. The "
        "description says in a few words what the image shows. Reply with the answer only, "
        "in Markdown, with the tool calls in place.",
    ]
    return "\n".join(lines)


def _parsed(item: EvalItem, where: str) -> ItemRecord:
    """The item's record read by the ATP-Bench reader; bad records name the item."""
    try:
        return atp_format.parse_record(dict(item.record))
    except FormatError as exc:
        raise EvaluationError(f"{where} {item.id}: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise EvaluationError(f"{where} {item.id}: not an ATP-Bench record ({exc})") from None


def user_content(item: EvalItem, *, where: str = "item") -> Content:
    """The documents with their images by ``img_index``, then the query (and its image)."""
    record = _parsed(item, where)
    indexed = [ref for ref in record.images if ref.role == "document"]
    indexed.sort(key=lambda ref: ref.position)
    index_of: dict[str, int] = {}
    for ref in indexed:
        index_of.setdefault(ref.path, ref.position)
    content = Content(item.id, item.images)
    shown: set[int] = set()

    def show(position: int, path: str) -> None:
        content.text(f"\n[img_index {position}]\n")
        content.image(path, f"document image img_index {position}")
        shown.add(position)

    if record.documents:
        content.text("Documents:\n")
    for number, document in enumerate(record.documents, start=1):
        content.text(f"\nDocument {number}:\n{str(document.get('text') or '').strip()}\n")
        for path in document.get("images") or ():
            position = index_of.get(path)
            if position is not None and position not in shown:
                show(position, path)
    rest = [ref for ref in indexed if ref.position not in shown]
    if rest:
        content.text("\nMore document images:\n")
        for ref in rest:
            show(ref.position, ref.path)
    content.text(f"\nQuery:\n{record.query}\n")
    for ref in (r for r in record.images if r.role == "query"):
        content.text("\nImage attached to the query (no img_index):\n")
        content.image(ref.path, "the query image")
    return content


def _examples(settings: EvalSettings) -> Sequence[EvalItem]:
    shots = settings.shots
    if shots < 0:
        raise EvaluationError(f"shots must be 0 or more, not {shots}")
    if shots > len(settings.examples):
        raise EvaluationError(
            f"{shots}-shot needs {shots} example items, but {len(settings.examples)} "
            "were given; mark more verified items as examples or lower the shots"
        )
    return settings.examples[:shots]


def build_messages(
    item: EvalItem, settings: EvalSettings, *, toolset: Mapping[str, Any] | None = None
) -> tuple[list[dict[str, Any]], dict[str, bytes]]:
    """The messages of the one model call and the images they refer to (by sha256)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(toolset or ATP_TOOLSET)}
    ]
    images: dict[str, bytes] = {}
    for example in _examples(settings):
        if example.id == item.id:
            raise EvaluationError(f"item {item.id} is its own few-shot example; pick others")
        answer = example.record.get("gt")
        if not isinstance(answer, str) or not answer.strip():
            raise EvaluationError(
                f"example item {example.id} has no ground-truth answer (gt) to show"
            )
        shown = user_content(example, where="example item")
        messages.append(shown.message())
        messages.append({"role": "assistant", "content": answer})
        images.update(shown.images)
    content = user_content(item)
    messages.append(content.message())
    images.update(content.images)
    return messages, images


def _gold(truth: Mapping[str, Any] | None) -> str | None:
    if truth is None:
        return None
    gold = truth.get("gt")
    return gold if isinstance(gold, str) else None


def score_answer(
    answer: str, gold: str | None, *, toolset: Toolset | None = None
) -> dict[str, Any]:
    """One item's scores (see the module docstring); ``gold`` the verified ground-truth
    answer (None: no P/R/F1). Never raises on the answer's text."""
    facts = facts_of(answer, "atp", toolset)
    scores: dict[str, Any] = {
        "n_calls": facts.n_calls,
        "n_well_formed": facts.n_well_formed,
        "format_valid": 100.0 if facts.n_calls and facts.n_well_formed == facts.n_calls else 0.0,
        "calls_per_answer": float(facts.n_calls),
        "tools": sorted(facts.tools),
        **adoption_scores(facts, TOOLS),
    }
    if gold is not None:
        gold_tools = facts_of(gold, "atp", toolset).tools
        scores["gt_tools"] = sorted(gold_tools)
        scores.update(tool_set_figures(facts.tools, gold_tools))
    return scores


class AtpProtocol:
    """ATP-Bench's protocol for a model under test (see the module docstring)."""

    settings: tuple[str, ...] = ("shots",)
    #: Solved: the item's tool-set F1 is 100 % (the answer calls exactly the tools the verified
    #: answer calls; ATP-Bench scores tool use, not the answer's prose).
    solved: str = "f1"
    columns: tuple[Column, ...] = (
        Column("precision", "Tool-set precision"),
        Column("recall", "Tool-set recall"),
        Column("f1", "Tool-set F1"),
        Column("format_valid", "Format validity"),
        Column(
            "format_correctness",
            "Format correctness (per call)",
            pooled=("n_well_formed", "n_calls"),
        ),
        *(Column(f"adoption_{tool}", f"Adoption: {tool.capitalize()}") for tool in TOOLS),
        Column("calls_per_answer", "Calls per answer", percent=False),
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
        toolset = settings.extra.get("toolset")
        messages, images = build_messages(item, settings, toolset=toolset)
        outcome = Outcome(item=item.id, status=Status.OK)
        reply = chat(messages, images=images)  # EvaluationError goes to the caller
        outcome.count(reply)
        answer = reply.text or ""
        outcome.output = answer
        outcome.trace = [*messages, reply.assistant_message()]
        outcome.scores = score_answer(answer, _gold(truth), toolset=toolset)
        return outcome

    def summarize(self, outcomes: list[Outcome]) -> dict[str, Any]:
        summary = summarize_scores(outcomes, self.columns, totals=("n_calls", "n_well_formed"))
        summary["n_scored"] = sum(1 for o in outcomes if o.status == Status.OK and "f1" in o.scores)
        return summary

    def ratios(self, outcomes: list[Outcome]) -> dict[str, Ratio]:
        """Every column's figure as a ratio of per-item sums (for the bootstrap)."""
        return column_ratios(outcomes, self.columns)

    def write_outputs(self, outcomes: list[Outcome], out_dir: str, *, model: str) -> list[str]:
        rows = [
            {"trace_id": o.item, "model": model, "answer": o.output or ""}
            for o in outcomes
            if o.status == Status.OK
        ]
        path = Path(out_dir) / f"{model_file_name(model)}.jsonl"
        return [write_json(path, rows, lines=True)]


PROTOCOL: EvalProtocol = AtpProtocol()
