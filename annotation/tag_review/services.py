"""Tag review writes: saving a reviewed answer as a new version, reverting, discarding a sample
(reviewers; annotators propose it).

Every save adds a ``ResponseVersion``; nothing is overwritten. Version 1 is the imported text,
created on the first save. A save names the version it was made on (``base_number``); if
someone saved in between, ``StaleVersion`` (a 409 ``Conflict``) carries their version so
the reviewer can look at it and decide, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction

from annotation.tag_review.models import ResponseVersion, TagDecision, TagDecisionKind
from benchmark import limits
from benchmark.exceptions import Conflict, Forbidden, NotFound, ValidationFailed
from benchmark.models import Item, ItemStatus, Project, Response
from benchmark.permissions import can
from benchmark.projects.services import item_status_set
from benchmark.typing import User
from benchmark.versions import StaleVersion, version_save

__all__ = [
    "DISCARD_REASONS",
    "can_edit",
    "discard_reason_text",
    "item_discard",
    "response_revert",
    "response_save_version",
]

#: Why a whole sample is discarded (ATP-Bench §4.2: "errors are systemic, such as severe
#: markdown structure breakage or fundamental factual inaccuracies").
DISCARD_REASONS: tuple[tuple[str, str], ...] = (
    ("systemic_errors", "Systemic tool-call errors"),
    ("broken_markdown", "Broken markdown structure"),
    ("factual_errors", "Factual errors in the text"),
    ("other", "Other"),
)

MAX_DECISIONS = 2000


def can_edit(*, user: Any, project: Project) -> bool:
    """Who may review tags and save versions: the "edit" action of the permission table
    (discarding a sample is a reviewer's decision, ``item_discard``)."""
    return can(user=user, project=project, action="edit")


def _require_editor(user: User, project: Project) -> None:
    if not can_edit(user=user, project=project):
        raise Forbidden(f"your role in {project.name!r} does not allow reviewing tags")


def _latest(response: Response) -> ResponseVersion:
    """The newest version, creating version 1 from the imported text when there is none.
    Call inside a transaction that holds the response's row lock."""
    latest = response.versions.order_by("-number").first()  # type: ignore[attr-defined]
    if latest is None:
        latest = ResponseVersion.objects.create(
            response=response, number=1, text=response.text, note="imported"
        )
    return latest


def _lock(response: Response) -> Response:
    return Response.objects.select_for_update().select_related("item__project").get(pk=response.pk)


def _clean_decisions(decisions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if len(decisions) > MAX_DECISIONS:
        raise ValidationFailed(f"too many decisions in one save (at most {MAX_DECISIONS})")
    out = []
    for n, entry in enumerate(decisions):
        if not isinstance(entry, Mapping):
            raise ValidationFailed(f"decision {n + 1} is not an object")
        kind = entry.get("decision")
        if kind not in TagDecisionKind.values:
            raise ValidationFailed(f"decision {n + 1}: unknown decision {kind!r}")
        tag = entry.get("tag")
        if isinstance(tag, bool) or not isinstance(tag, int) or tag < 0:
            raise ValidationFailed(f"decision {n + 1}: the tag index must be an integer >= 0")
        detail = entry.get("detail") or {}
        if not isinstance(detail, Mapping):
            raise ValidationFailed(f"decision {n + 1}: detail must be an object")
        out.append(
            {
                "tag": tag,
                "tool": str(entry.get("tool") or "")[:100],
                "decision": kind,
                "reason": str(entry.get("reason") or "")[:50],
                "detail": dict(detail),
            }
        )
    return out


def response_save_version(
    *,
    response: Response,
    user: User,
    text: str,
    base_number: int,
    decisions: Sequence[Mapping[str, Any]],
    note: str = "",
) -> ResponseVersion:
    """Save ``text`` as the next version of the answer, made on version ``base_number``.

    Raises ``StaleVersion`` (carrying the current version) when ``base_number`` is not the
    newest version, ``ValidationFailed`` when there is nothing to save, and
    ``Forbidden`` for users who may not review this project."""
    _require_editor(user, response.item.project)
    problem = limits.over(limits.ANSWER, text) or ("\x00" in text and limits.NUL_MESSAGE)
    if problem:
        raise ValidationFailed(f"text: {problem}")
    rows = _clean_decisions(decisions)
    with transaction.atomic():
        locked = _lock(response)
        latest = _latest(locked)

        def unchanged() -> None:
            if text == latest.text and not rows:
                raise ValidationFailed("nothing to save: the text is unchanged and no tag decided")

        def create(number: int, base: int | None, _written: Any) -> ResponseVersion:
            version = ResponseVersion(
                response=locked, number=number, text=text, author=user, note=note.strip()
            )
            version.base_number = base
            version.full_clean(exclude=["response"])
            version.save()
            TagDecision.objects.bulk_create(
                TagDecision(version=version, position=n, **row) for n, row in enumerate(rows)
            )
            locked.text = text
            locked.save(update_fields=["text"])
            return version

        version = version_save(
            latest=latest,
            versions=ResponseVersion.objects.filter(response=locked).select_related("author"),
            base_number=base_number,
            stale=lambda current: _conflict(current, base_number),
            before=unchanged,
            create=create,
        )
    response.text = text
    return version


def _conflict(current: ResponseVersion, base_number: int) -> StaleVersion:
    who = current.author.get_username() if current.author else "the import"
    return StaleVersion(
        f"version {current.number} was saved by {who} after you opened version "
        f"{base_number}; nothing of yours was saved. Look at their change, then save again "
        "on top of it or start from their version.",
        current=current,
        base_number=base_number,
    )


def response_revert(
    *,
    response: Response,
    user: User,
    number: int,
    base_number: int | None = None,
    note: str = "",
) -> ResponseVersion:
    """Make a new version whose text is version ``number``'s. Earlier versions stay."""
    _require_editor(user, response.item.project)
    with transaction.atomic():
        locked = _lock(response)
        latest = _latest(locked)
        if base_number is not None and base_number != latest.number:
            raise _conflict(latest, base_number)
        target = locked.versions.filter(number=number).first()  # type: ignore[attr-defined]
        if target is None:
            raise NotFound(f"this answer has no version {number}")
        if target.text == latest.text:
            raise ValidationFailed(f"version {latest.number} already has version {number}'s text")
        version = ResponseVersion.objects.create(
            response=locked,
            number=latest.number + 1,
            text=target.text,
            author=user,
            note=(note.strip() or f"Reverted to version {number}"),
            base_number=latest.number,
        )
        locked.text = target.text
        locked.save(update_fields=["text"])
    response.text = target.text
    return version


def discard_reason_text(reason: str, detail: str = "") -> str:
    """The reason stored for a discard chosen on the tag review screen (``code: detail``);
    ``ValidationFailed`` for an unknown code, or "other" without details."""
    codes = dict(DISCARD_REASONS)
    if reason not in codes:
        raise ValidationFailed("choose a reason: " + ", ".join(codes.values()))
    detail = detail.strip()
    if reason == "other" and not detail:
        raise ValidationFailed("say why the sample is discarded")
    return f"{reason}: {detail}" if detail else reason


def item_discard(*, item: Item, user: User, reason: str, detail: str = "") -> Item:
    """Discard the whole sample (errors too systemic to fix tag by tag), recorded as a status
    change. Reviewers and admins only: an annotator proposes it instead
    (``annotation.discarding.services.discard_propose``)."""
    if not can(user=user, project=item.project, action="set_status"):
        raise Forbidden("only reviewers and admins discard a sample; propose discarding it instead")
    text = discard_reason_text(reason, detail)
    with transaction.atomic():
        locked = Item.objects.select_for_update().select_related("project").get(pk=item.pk)
        if locked.status == ItemStatus.DISCARDED:
            raise Conflict(f"this sample is already discarded: {locked.discard_reason}")
        item_status_set(
            item=locked, user=user, status=ItemStatus.DISCARDED, reason=text, expect=locked.status
        )
    item.status, item.discard_reason = locked.status, locked.discard_reason
    return item
