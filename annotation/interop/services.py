"""Label Studio annotations as judgments, and judgments as Label Studio annotations.

Only members of the project who may judge the task are credited with an imported
annotation: an active account whose project role may judge, and what the task itself allows
(not the item's author unless the task lets authors judge; only the items a task of listed
items takes). Annotators are matched among those members only, by their Label Studio email or
username (case-insensitive), or through a user map (``{Label Studio user id: account}``, for
Label Studio's normal export, which names annotators by numeric id). No account is made and
no account outside the project is ever looked up: every other annotator is reported with one
wording (``users_not_importable``), whether or not some account on the site has that name,
so the report cannot be used to find out who has an account. Re-importing skips what was
imported already.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.judgment_tasks.models import Assignment, Judgment, JudgmentTask, Scheme, TaskItem
from annotation.judgment_tasks.services import judgment_submit_once
from annotation.judgment_tasks.solving import is_author
from benchmark.exceptions import ValidationFailed
from benchmark.formats.label_studio import Annotation, JudgmentOut
from benchmark.models import Membership, Project
from benchmark.permissions import ACTIONS

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


#: How an annotator who may not be credited is reported: one wording for an account outside
#: the project, an inactive one and a name no account has.
NOT_IMPORTABLE = "is not a member of project {project!r} who may judge task {task!r}"


def _judges(project: Project) -> dict[str, Any]:
    """The project's members who may judge, by lower-cased username and email: active
    accounts whose role allows judging. A name two of them share (an email, or usernames
    differing in case) names neither. Only the project's memberships are read."""
    found: dict[str, Any] = {}
    shared: set[str] = set()
    rows = Membership.objects.filter(
        project=project, role__in=ACTIONS["judge"], user__is_active=True
    ).select_related("user")
    for membership in rows:
        user = membership.user
        for key in {user.get_username().lower(), (user.email or "").lower()} - {""}:
            if key in found and found[key].pk != user.pk:
                shared.add(key)
            found[key] = user
    for key in shared:
        del found[key]
    return found


def _check_user_map(
    project: Project, task: JudgmentTask, user_map: Mapping[str, str], judges: dict[str, Any]
) -> None:
    """Every account the user map names must be one of ``judges``; ValidationFailed naming
    the first that is not (the same words whether or not an account has that name)."""
    for target in user_map.values():
        if target.lower() not in judges:
            raise ValidationFailed(
                f"user_map: {target!r} "
                + NOT_IMPORTABLE.format(project=project.name, task=task.name)
            )


def _annotator(
    a: Annotation, judges: dict[str, Any], user_map: Mapping[str, str]
) -> tuple[Any, str]:
    """(the member credited with ``a``, or None; "" or why not: "unmapped" for a bare
    Label Studio user id the map does not name, "not importable" otherwise). The user map
    is asked first (by id, then by the email or username the export gives); without an
    entry, an email or username is matched among the members."""
    target = user_map.get(a.user_id) if a.user_id else None
    if target is None:
        target = user_map.get(a.user.lower())
    if target is None:
        if a.user_id and a.user == a.user_id:  # only Label Studio's number: map it
            return None, "unmapped"
        target = a.user
    user = judges.get(target.lower()) if target else None
    return user, "" if user is not None else "not importable"


def _refusal(task: JudgmentTask, item: Any, user: Any, listed: set[int]) -> str:
    """Why the task does not take ``user``'s judgment of ``item``, or ""."""
    if task.items_listed and item.pk not in listed:
        return "the task does not take the item"
    if not task.author_may_judge and is_author(item.provenance, user.get_username()):
        return "wrote the item; the task does not let authors judge"
    return ""


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


_Comments = dict[tuple[str, str, str], str]


def _votes(
    task: JudgmentTask,
    annotations: list[Annotation],
    labels: Mapping[str, str],
    report: dict[str, Any],
) -> tuple[list[tuple[Annotation, Any]], _Comments]:
    """The annotations that are values of ``task`` with their value, and the comments (text
    areas of a labelled task) by (item, annotator); results that are no value are counted
    in ``report``."""
    text_task = task.scheme == Scheme.TEXT
    comments: _Comments = {}
    votes: list[tuple[Annotation, Any]] = []
    for a in annotations:
        if a.kind in _TEXT_KINDS and not text_task:
            comments[(a.item_id, a.user, a.user_id)] = "\n".join(a.values)
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
    return votes, comments


def label_studio_judgments_import(
    *,
    project: Project,
    annotations: Iterable[Annotation],
    task_name: str,
    labels: Mapping[str, str] | None = None,
    user_map: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Judgments of ``task_name`` from Label Studio annotations whose choice is one of the
    task's labels (for a text task: the text area). With ``labels`` (``{Label Studio choice:
    task value}``, e.g. ``{"Correct": "yes"}``) choices are mapped first, and every choice
    must then map: one that does not raises ValidationFailed naming the Label Studio task
    and the label, and nothing is written. ``user_map`` (``{Label Studio user id, email or
    username (lower-cased): account}``, see ``label_studio.parse_user_map``) says who a
    Label Studio user is; an account it names that is not a member who may judge raises
    ValidationFailed. Returns counts, and what was not imported: annotators who are not
    members who may judge (``users_not_importable``, one wording for all), Label Studio user
    ids the map does not name (``user_ids_unmapped``) and judgments the task refuses for
    their item (``judgments_refused``: its author, an item it does not take)."""
    task = _task(project, task_name)
    labels = dict(labels or {})
    user_map = {str(k).lower(): str(v) for k, v in (user_map or {}).items()}
    _check_labels(task, labels)
    judges = _judges(project)
    _check_user_map(project, task, user_map, judges)
    annotations = list(annotations)
    items = dict(
        project.items.filter(external_id__in={a.item_id for a in annotations}).values_list(
            "external_id", "id"
        )
    )
    item_objs = {i.pk: i for i in project.items.filter(pk__in=items.values())}
    listed = (
        set(TaskItem.objects.filter(task=task).values_list("item_id", flat=True))
        if task.items_listed
        else set()
    )
    report: dict[str, Any] = {
        "task": task.name,
        "judgments_created": 0,
        "judgments_existing": 0,
        "results_unmapped": 0,
        "items_missing": [],
        "users_not_importable": [],
        "user_ids_unmapped": [],
        "judgments_refused": [],
    }
    votes, comments = _votes(task, annotations, labels, report)
    missing: set[str] = set()
    not_importable: set[str] = set()
    unmapped: set[str] = set()
    refused: dict[tuple[str, str], str] = {}
    now = timezone.now()
    with transaction.atomic():
        for a, value in votes:
            if a.item_id not in items:
                missing.add(a.item_id)
                continue
            user, why = _annotator(a, judges, user_map)
            if user is None:
                (unmapped if why == "unmapped" else not_importable).add(a.user or "(no user)")
                continue
            item = item_objs[items[a.item_id]]
            reason = _refusal(task, item, user, listed)
            if reason:
                refused[(a.item_id, a.user)] = reason
                continue
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
                comment=comments.get((a.item_id, a.user, a.user_id), ""),
            )
            report["judgments_created" if created else "judgments_existing"] += 1
    report["items_missing"] = sorted(missing)
    report["users_not_importable"] = sorted(not_importable)
    report["user_ids_unmapped"] = sorted(unmapped, key=lambda v: (len(v), v))
    report["judgments_refused"] = [
        {"item": item_id, "user": name, "reason": reason}
        for (item_id, name), reason in sorted(refused.items())
    ]
    return report


def label_studio_judgments_check(
    *,
    project: Project,
    task_name: str,
    labels: Mapping[str, str] | None = None,
    user_map: Mapping[str, str] | None = None,
) -> None:
    """Check before an import starts that ``task_name`` can take Label Studio annotations,
    that ``labels`` map onto its values and that every account ``user_map`` names is a
    member who may judge; ValidationFailed naming what is wrong."""
    task = _task(project, task_name)
    _check_labels(task, dict(labels or {}))
    if user_map:
        _check_user_map(project, task, user_map, _judges(project))


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
