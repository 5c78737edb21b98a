"""Scoring uploaded model answers of an interleaved project against its verified ground truth.

Reads only: nothing is stored. The figures and their definitions come from
``benchmark.metrics.tag_scores``; this module finds the project's items, their verified
ground-truth answers (the newest saved version of the ground-truth response, else its
imported text), LLM-I image-number constraints and input image counts, and matches each
uploaded answer to its item.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from django.db.models import OuterRef, Subquery

from annotation.models import ResponseVersion
from benchmark.exceptions import ValidationFailed
from benchmark.formats.base import FormatError
from benchmark.metrics.tag_scores import (
    AnswerRecord,
    ItemIndex,
    ItemInfo,
    ResolvedAnswer,
    read_answer_file,
    score_answers,
)
from benchmark.models import Item, ItemStatus, Origin, Project, ProjectKind, Response
from benchmark.tags import Syntax, builtin_toolset, parse_image_num
from benchmark.toolset_specs import tag_toolset

#: Uploads are scored in the request; more than this goes through ``score_responses``.
MAX_SCORE_BYTES = 16 * 1024 * 1024
MAX_FILES = 20
#: How many unknown item ids the result lists.
UNKNOWN_SHOWN = 10


def ground_truth_texts(*, project: Project) -> dict[str, str]:
    """``{external id: text}`` of the verified items' ground-truth answers: per item its
    first ground-truth response, as its newest saved version (one query)."""
    latest = (
        ResponseVersion.objects.filter(response=OuterRef("pk")).order_by("-number").values("text")
    )
    rows = (
        Response.objects.filter(
            item__project=project,
            item__status=ItemStatus.VERIFIED,
            origin=Origin.GROUND_TRUTH,
        )
        .annotate(latest_text=Subquery(latest[:1]))
        .order_by("item_id", "position", "id")
        .values_list("item__external_id", "text", "latest_text")
    )
    out: dict[str, str] = {}
    for external_id, text, latest_text in rows:
        if external_id not in out:
            out[external_id] = latest_text if latest_text is not None else text
    return out


def _image_num(value: Any) -> Any:
    if value is None:
        return None
    try:
        parse_image_num(value)
    except ValueError:
        return None
    return value


def _items(project: Project, *, only_verified: bool) -> tuple[ItemIndex, dict[str, ItemInfo]]:
    rows = Item.objects.filter(project=project)
    if only_verified:
        rows = rows.filter(status=ItemStatus.VERIFIED)
    values = list(
        rows.order_by("position", "id").values_list(
            "external_id", "source_file", "query", "constraints", "image_refs"
        )
    )
    gold = ground_truth_texts(project=project)
    llmi = project.tag_syntax == "llmi"
    infos: dict[str, ItemInfo] = {}
    for external_id, _, _, constraints, refs in values:
        infos[external_id] = ItemInfo(
            gold=gold.get(external_id),
            image_num=_image_num((constraints or {}).get("image_num")) if llmi else None,
            input_images=sum(
                1 for r in refs or [] if isinstance(r, dict) and r.get("role") == "input"
            )
            if llmi
            else 0,
        )
    return ItemIndex((e, s, q) for e, s, q, _, _ in values), infos


def _tools(project: Project) -> tuple[dict[str, Any] | None, list[str]]:
    rows = tag_toolset(project.toolset)
    if rows:
        return rows, list(rows)
    return None, list(builtin_toolset(cast(Syntax, project.tag_syntax)))


def read_uploads(
    files: Sequence[tuple[str, bytes]], *, max_files: int | None = MAX_FILES
) -> list[AnswerRecord]:
    """Every answer of every ``(file name, content)``; a bad file raises ValidationFailed
    naming file, line and field."""
    if not files:
        raise ValidationFailed("choose at least one answer file")
    if max_files is not None and len(files) > max_files:
        raise ValidationFailed(f"{len(files)} files; at most {max_files} at a time")
    records: list[AnswerRecord] = []
    for name, data in files:
        try:
            records.extend(read_answer_file(name, data))
        except FormatError as exc:
            raise ValidationFailed(str(exc)) from None
    return records


def answers_score(
    *, project: Project, records: Sequence[AnswerRecord], only_verified: bool = False
) -> dict[str, Any]:
    """The figures of ``benchmark.metrics.tag_scores.score_answers`` for answers read with
    ``read_uploads``, plus what could not be matched: answers naming items the project does
    not have (or, with ``only_verified``, items that are not verified). A model answering
    the same item twice raises ValidationFailed naming both places."""
    if project.kind != ProjectKind.INTERLEAVED or not project.tag_syntax:
        raise ValidationFailed(
            "only interleaved projects (ATP-Bench, LLM-I) have tool tags to score"
        )
    syntax = cast(Syntax, project.tag_syntax)
    index, infos = _items(project, only_verified=only_verified)
    resolved: list[ResolvedAnswer] = []
    unknown: list[str] = []
    first_at: dict[tuple[str, str], AnswerRecord] = {}
    files: dict[str, dict[str, Any]] = {}
    for record in records:
        entry = files.setdefault(record.file, {"file": record.file, "n_answers": 0, "models": []})
        entry["n_answers"] += 1
        if record.model not in entry["models"]:
            entry["models"].append(record.model)
        item_id = index.resolve(record)
        if item_id is None:
            unknown.append(record.label)
            continue
        key = (record.model, item_id)
        if key in first_at:
            first = first_at[key]
            raise ValidationFailed(
                f"{record.file}, {record.where}: model {record.model!r} answers item {item_id} "
                f"a second time (first in {first.file}, {first.where}); keep one answer per "
                "item and model"
            )
        first_at[key] = record
        resolved.append(ResolvedAnswer(record.model, item_id, record.text))
    toolset, tool_names = _tools(project)
    result = score_answers(resolved, infos, syntax=syntax, toolset=toolset, tools=tool_names)
    result.update(
        {
            "project": project.name,
            "only_verified": only_verified,
            "files": list(files.values()),
            "n_read": len(records),
            "n_scored": len(resolved),
            "n_unknown": len(unknown),
            "unknown_ids": unknown[:UNKNOWN_SHOWN],
        }
    )
    return result
