"""The answer versions in the item's history (a source registered with
``benchmark.items.history``): every saved version of each of the item's responses, with the
tag review's own version page and revert endpoint. Responses come through
``benchmark.visibility.responses_visible``, so a model hidden from a rater stays hidden."""

from __future__ import annotations

import difflib

from django.db.models import Prefetch
from django.urls import reverse

from annotation.tag_review.models import ResponseVersion
from benchmark import visibility
from benchmark.items.history import HistoryEntry
from benchmark.models import Item, Project, Response
from benchmark.presenters import attachment_label
from benchmark.typing import AnyUser


def _lines_changed(old: str, new: str) -> str:
    added = removed = 0
    for line in difflib.ndiff(old.splitlines(), new.splitlines()):
        added += line.startswith("+ ")
        removed += line.startswith("- ")
    if not added and not removed:
        return "no change"
    return f"+{added} −{removed} line(s)"


def response_entries(
    *, user: AnyUser, project: Project, item: Item, may_edit: bool
) -> list[HistoryEntry]:
    """Two queries (the responses with versions, their versions), whatever their number.
    Only where the tag review applies (interleaved answers with tool tags), as its pages."""
    if not project.benchmark.offers.tag_answers:
        return []
    versions = ResponseVersion.objects.select_related("author").order_by("number")
    rows = visibility.responses_visible(
        Response.objects.filter(
            item=item,
            item__project__memberships__user=user.pk,
            pk__in=ResponseVersion.objects.filter(response__item=item).values("response_id"),
        ),
        user=user,
    ).prefetch_related(Prefetch("versions", queryset=versions))
    out: list[HistoryEntry] = []
    for response in rows:
        saved = list(response.versions.all())
        if not saved:
            continue
        latest = saved[-1].number
        label = f"Answer · {attachment_label(response)}"
        previous_text = None
        for version in saved:
            args = [project.pk, item.pk, response.pk, version.number]
            entry = HistoryEntry(
                source=label,
                number=version.number,
                author=version.author.get_username() if version.author else "",
                created_at=version.created_at,
                summary=_lines_changed(previous_text, version.text)
                if previous_text is not None
                else "as imported"
                if version.author_id is None
                else "first version",
                note=version.note,
                url=reverse("annotation:tag_version", args=args),
                current=version.number == latest,
                thread=f"response-{response.pk}",
            )
            if may_edit and not entry.current:
                entry.revert_url = reverse("annotation:tag_version_revert", args=args)
                entry.revert_fields = {"base": latest}
            out.append(entry)
            previous_text = version.text
    return out
