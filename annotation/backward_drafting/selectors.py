"""Reads of backward drafting, scoped to the user's projects: another project's session, call
or item answers 404. The session page is read in a fixed number of queries, whatever the
number of calls and marks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Prefetch, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from annotation.backward_drafting.models import (
    DraftingCrop,
    DraftingDraft,
    DraftingMark,
    DraftingSession,
    DraftingStep,
    DraftingVerdict,
)
from benchmark.images import selectors as benchmark_selectors
from benchmark.models import Image, Item, Job, ModelCall
from benchmark.typing import AnyUser


def drafting_session_list(*, user: AnyUser, item: Item) -> QuerySet[DraftingSession]:
    """The item's sessions, newest first, with their number of crops, marks and drafts."""
    if not user.is_authenticated:
        return DraftingSession.objects.none()
    return (
        DraftingSession.objects.filter(item=item, item__project__memberships__user=user.pk)
        .select_related("created_by")
        .annotate(
            n_crops=Count("crops", distinct=True),
            n_marks=Count("marks", distinct=True),
            n_drafts=Count("drafts", distinct=True),
        )
        .order_by("-created_at", "-id")
    )


def drafting_session_get(*, user: AnyUser, item: Item, pk: int) -> DraftingSession:
    if not user.is_authenticated:
        raise Http404
    sessions = DraftingSession.objects.filter(
        item=item, item__project__memberships__user=user.pk
    ).select_related("created_by")
    session = get_object_or_404(sessions, pk=pk)
    session.item = item  # the caller's item, already scoped (saves a query)
    return session


def drafting_call_get(*, user: AnyUser, session: DraftingSession, pk: int) -> ModelCall:
    """One of the session's model calls."""
    if not user.is_authenticated:
        raise Http404
    calls = ModelCall.objects.filter(
        item_id=session.item_id,
        purpose__in=session.purposes,
        project__memberships__user=user.pk,
    )
    return get_object_or_404(calls, pk=pk)


@dataclass
class CallView:
    call: ModelCall
    step: str
    number: int
    images: list[dict[str, Any]]
    mark: DraftingMark | None
    marks: list[DraftingMark]

    @property
    def is_describe(self) -> bool:
        return self.step == DraftingStep.DESCRIBE


@dataclass
class Checklist:
    """Where the session stands on the paper's protocol."""

    described: bool = False
    missed: bool = False
    truth_written: bool = False
    crop_asked: bool = False
    exposed: bool = False
    drafted: bool = False

    @property
    def validated(self) -> bool:
        return self.missed and self.exposed


@dataclass
class DraftingPage:
    session: DraftingSession
    source: dict[str, Any]
    calls: list[CallView]
    jobs: dict[str, Job | None]
    crop: DraftingCrop | None
    crop_image: Image | None
    drafts: list[DraftingDraft]
    checklist: Checklist
    images: dict[str, Image] = field(default_factory=dict)


def _entry(sha: str, images: dict[str, Image], label: str) -> dict[str, Any]:
    return {"sha256": sha, "path": "", "role": "", "label": label, "image": images.get(sha)}


def _latest_job(session: DraftingSession, step: str) -> Job | None:
    return (
        Job.objects.filter(
            project_id=session.item.project_id,
            kind="model_call",
            params__purpose=session.purpose(step),
        )
        .select_related("created_by", "project")
        .order_by("-created_at", "-id")
        .first()
    )


def drafting_page(*, user: AnyUser, session: DraftingSession) -> DraftingPage:
    """Everything the session page shows: the calls in the order they were asked with the
    images sent and their marks, the latest job of each step, the latest crop, the drafts
    and the checklist."""
    marks = DraftingMark.objects.filter(session=session).select_related("marked_by")
    calls = list(
        ModelCall.objects.filter(item_id=session.item_id, purpose__in=session.purposes)
        .select_related("created_by")
        .prefetch_related(Prefetch("drafting_marks", queryset=marks, to_attr="session_marks"))
        .order_by("created_at", "id")
    )
    crops = list(session.crops.select_related("created_by").order_by("number"))
    crop = crops[-1] if crops else None
    drafts = list(session.drafts.select_related("created_by").order_by("created_at", "id"))
    shas = {session.source_sha256}
    for call in calls:
        shas.update(call.image_sha256s or [])
    if crop is not None:
        shas.add(crop.image_sha256)
    images = benchmark_selectors.images_by_sha(user=user, shas=shas)
    crop_labels = {c.image_sha256: f"crop {c.number}" for c in crops}
    views = []
    counters = {step: 0 for step in DraftingStep.values}
    checklist = Checklist(
        truth_written=crop is not None, crop_asked=crop is not None, drafted=bool(drafts)
    )
    for call in calls:
        step = call.purpose.rsplit(":", 1)[-1]
        counters[step] = counters.get(step, 0) + 1
        session_marks: list[DraftingMark] = getattr(call, "session_marks", [])
        mark = session_marks[-1] if session_marks else None
        labels = [
            "raw image" if sha == session.source_sha256 else crop_labels.get(sha, "image")
            for sha in call.image_sha256s or []
        ]
        views.append(
            CallView(
                call=call,
                step=step,
                number=counters[step],
                images=[
                    _entry(sha, images, label)
                    for sha, label in zip(call.image_sha256s or [], labels, strict=False)
                ],
                mark=mark,
                marks=session_marks,
            )
        )
        if step == DraftingStep.DESCRIBE and not call.error:
            checklist.described = True
        if mark is None:
            continue
        if step == DraftingStep.DESCRIBE and (
            not mark.perceives or mark.verdict == DraftingVerdict.HALLUCINATION
        ):
            checklist.missed = True
        if step == DraftingStep.CROP and mark.perceives and mark.verdict == DraftingVerdict.CORRECT:
            checklist.exposed = True
    return DraftingPage(
        session=session,
        source=_entry(session.source_sha256, images, "raw image"),
        calls=views,
        jobs={step: _latest_job(session, step) for step in DraftingStep.values},
        crop=crop,
        crop_image=images.get(crop.image_sha256) if crop is not None else None,
        drafts=drafts,
        checklist=checklist,
        images=images,
    )
