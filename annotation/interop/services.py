"""Label Studio annotations as judgments, and judgments as Label Studio annotations.

Annotators are matched to existing Benchwright accounts by their Label Studio email or
username (case-insensitive); no placeholder accounts are made. Annotations by people with no
account are not imported and are reported by name, so an admin can create the accounts (or
fix the export) and import again: re-importing skips what was imported already.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.judging.models import Assignment, Judgment, JudgmentTask, Scheme
from annotation.judging.services import judgment_submit_once
from benchmark.exceptions import ValidationFailed
from benchmark.formats.label_studio import Annotation, JudgmentOut
from benchmark.models import Project

_TEXT_KINDS = {"textarea", "text"}


def _task(project: Project, task_name: str) -> JudgmentTask:
    task = JudgmentTask.objects.filter(project=project, name=task_name).first()
    if task is None:
        names = ", ".join(project.judgment_tasks.values_list("name", flat=True)) or "none"
        raise ValidationFailed(
            f"task: project {project.name!r} has no judgment task {task_name!r} (it has: {names})"
        )
    if task.has_units:
        raise ValidationFailed(
            f"task: {task_name!r} is judged unit by unit; only item-level tasks take "
            "Label Studio annotations"
        )
    return task


def _users(names: set[str]) -> dict[str, Any]:
    """Existing users by Label Studio email or username, lower-cased."""
    if not names:
        return {}
    lowered = {n.lower() for n in names}
    found: dict[str, Any] = {}
    query = Q()
    for name in lowered:
        query |= Q(email__iexact=name) | Q(username__iexact=name)
    for user in get_user_model().objects.filter(query):
        for key in (user.email.lower(), user.username.lower()):
            if key in lowered:
                found.setdefault(key, user)
    return found


def _label(task: JudgmentTask, values: tuple[str, ...]) -> Any:
    """The task's label for a Label Studio choice, or None when it maps to none."""
    if len(values) != 1:
        return None
    for candidate in task.label_values:
        if str(candidate) == values[0]:
            return candidate
    return None


def _check_labels(task: JudgmentTask, labels: Mapping[str, str]) -> None:
    """Every mapped value must be one of the task's values (of a task with labels)."""
    if labels and task.scheme in (Scheme.TEXT, Scheme.NUMBER, Scheme.SCORES):
        raise ValidationFailed(
            f"labels: {task.name!r} is a {task.scheme} task; a label mapping goes with "
            "tasks with labels (binary, nominal, ordinal)"
        )
    known = [str(v) for v in task.label_values]
    for choice, value in labels.items():
        if value not in known:
            raise ValidationFailed(
                f"labels: {choice!r} maps to {value!r}, which is not a value of task "
                f"{task.name!r} (its values: {', '.join(known) or 'none'})"
            )


def _mapped_label(task: JudgmentTask, a: Annotation, labels: Mapping[str, str]) -> Any:
    """With a label mapping, every choice must map (through ``labels``, or being one of
    the task's values already); one that does not raises ValidationFailed naming the Label
    Studio task and the label, so nothing is imported."""
    mapped = tuple(labels.get(v, v) for v in a.values)
    value = _label(task, mapped)
    if value is None:
        unmapped = [v for v in a.values if _label(task, (labels.get(v, v),)) is None]
        what = (
            f"label {unmapped[0]!r} maps to no value of task {task.name!r}"
            if unmapped
            else f"{len(a.values)} labels where task {task.name!r} takes one"
        )
        raise ValidationFailed(
            f"labels: Label Studio task {a.task_id or a.item_id} (item {a.item_id!r}, "
            f"{a.from_name or a.kind}): {what}; map it with LABEL=VALUE (mapped: "
            f"{', '.join(labels)}; task values: {', '.join(str(v) for v in task.label_values)})"
        )
    return value


def label_studio_judgments_import(
    *,
    project: Project,
    annotations: Iterable[Annotation],
    task_name: str,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Judgments of ``task_name`` from Label Studio annotations whose choice is one of the
    task's labels (for a text task: the text area). With ``labels`` (``{Label Studio choice:
    task value}``, e.g. ``{"Correct": "yes"}``) choices are mapped first, and every choice
    must then map: one that does not raises ValidationFailed naming the Label Studio task
    and the label, and nothing is written. Returns counts, and the Label Studio users with
    no account."""
    task = _task(project, task_name)
    labels = dict(labels or {})
    _check_labels(task, labels)
    annotations = list(annotations)
    items = dict(
        project.items.filter(external_id__in={a.item_id for a in annotations}).values_list(
            "external_id", "id"
        )
    )
    item_objs = {i.pk: i for i in project.items.filter(pk__in=items.values())}
    users = _users({a.user for a in annotations if a.user})
    text_task = task.scheme == Scheme.TEXT
    comments: dict[tuple[str, str], str] = {}
    votes: list[tuple[Annotation, Any]] = []
    report: dict[str, Any] = {
        "task": task.name,
        "judgments_created": 0,
        "judgments_existing": 0,
        "results_unmapped": 0,
        "items_missing": [],
        "unknown_users": [],
    }
    for a in annotations:
        if a.kind in _TEXT_KINDS and not text_task:
            comments[(a.item_id, a.user)] = "\n".join(a.values)
            continue
        if labels and a.kind not in _TEXT_KINDS:
            votes.append((a, _mapped_label(task, a, labels)))
            continue
        value: Any = "\n".join(a.values).strip() if text_task else _label(task, a.values)
        if text_task and a.kind not in _TEXT_KINDS:
            value = None
        if value in (None, ""):
            report["results_unmapped"] += 1
            continue
        votes.append((a, value))
    missing: set[str] = set()
    unknown: set[str] = set()
    now = timezone.now()
    with transaction.atomic():
        for a, value in votes:
            if a.item_id not in items:
                missing.add(a.item_id)
                continue
            user = users.get(a.user.lower())
            if user is None:
                unknown.add(a.user or "(no user)")
                continue
            item = item_objs[items[a.item_id]]
            Assignment.objects.get_or_create(
                task=task,
                item=item,
                unit="",
                user=user,
                defaults={
                    "leased_at": now,
                    "expires_at": now + timedelta(minutes=task.lease_minutes),
                },
            )
            _, created = judgment_submit_once(
                task=task,
                item=item,
                user=user,
                value=value,
                comment=comments.get((a.item_id, a.user), ""),
            )
            report["judgments_created" if created else "judgments_existing"] += 1
    report["items_missing"] = sorted(missing)
    report["unknown_users"] = sorted(unknown)
    return report


def label_studio_judgments_check(
    *, project: Project, task_name: str, labels: Mapping[str, str] | None = None
) -> None:
    """Check before an import starts that ``task_name`` can take Label Studio annotations
    and that ``labels`` map onto its values; ValidationFailed naming what is wrong."""
    _check_labels(_task(project, task_name), dict(labels or {}))


def label_studio_judgments_export(
    *, project: Project, task_name: str
) -> tuple[dict[str, list[JudgmentOut]], list[Any]]:
    """The item-level judgments of ``task_name`` by item external id, and the task's labels
    (the labeling config's choices). Annotators are not named (Label Studio assigns imported
    annotations to the importing account)."""
    task = _task(project, task_name)
    if task.scheme in (Scheme.TEXT, Scheme.NUMBER, Scheme.SCORES):
        raise ValidationFailed(
            f"with-judgments: {task_name!r} is a {task.scheme} task; only tasks with labels "
            "(binary, nominal, ordinal) are written as Label Studio choices"
        )
    out: dict[str, list[JudgmentOut]] = {}
    rows = (
        Judgment.objects.filter(task=task, unit="")
        .order_by("item__position", "item_id", "id")
        .values_list("item__external_id", "value", "comment")
    )
    for external_id, value, comment in rows:
        out.setdefault(external_id, []).append(JudgmentOut(external_id, value, comment))
    return out, task.label_values
