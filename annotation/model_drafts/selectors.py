"""Reads of model drafting, scoped to the user's projects: another project's draft or
candidate answers 404, and a draft about an item whose answer is hidden from the user (a
blind verifier's item) is not theirs to see. The acceptance figures per kind of draft and the
tokens spent, in a fixed number of queries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum
from django.http import Http404
from django.shortcuts import get_object_or_404

from annotation.model_drafts.models import (
    CandidateStatus,
    DraftCandidate,
    DraftKind,
    DraftStatus,
    ModelDraft,
)
from benchmark import permissions, visibility
from benchmark.exceptions import NotFound
from benchmark.models import ModelCall, Project
from benchmark.typing import AnyUser


def _visible(user: AnyUser, project: Project) -> QuerySet[ModelDraft]:
    if not user.is_authenticated or not permissions.can(user=user, project=project, action="view"):
        return ModelDraft.objects.none()
    # A draft about an item whose answer is hidden from the user (a blind verifier's item)
    # shows the answer or the author's drafting: not theirs to see.
    return visibility.exclude_hidden_attachments(
        ModelDraft.objects.filter(project=project), user=user
    )


def model_draft_list(*, user: AnyUser, project: Project) -> QuerySet[ModelDraft]:
    """The project's drafts the user may see, newest first, with their candidates counted by
    what was decided."""
    counted = {
        f"n_{status}": Count("candidates", filter=Q(candidates__status=status))
        for status in CandidateStatus.values
    }
    return (
        _visible(user, project)
        .select_related("item", "created_by", "job", "call")
        .annotate(n_candidates=Count("candidates"), **counted)
        .order_by("-created_at", "-id")
    )


def model_draft_get(*, user: AnyUser, project: Project, pk: int) -> ModelDraft:
    draft = get_object_or_404(
        _visible(user, project).select_related("item", "created_by", "job", "call"), pk=pk
    )
    draft.project = project
    if draft.item is not None:
        draft.item.project = project
    return draft


def candidate_list(*, draft: ModelDraft) -> list[DraftCandidate]:
    """The draft's candidates in order (the draft was read through ``model_draft_get``)."""
    candidates = list(draft.candidates.select_related("decided_by", "item").order_by("position"))
    for candidate in candidates:
        candidate.draft = draft
    return candidates


def candidate_get(*, user: AnyUser, draft: ModelDraft, pk: int) -> DraftCandidate:
    if not user.is_authenticated:
        raise Http404
    candidate = get_object_or_404(DraftCandidate.objects.filter(draft=draft), pk=pk)
    candidate.draft = draft
    return candidate


# --------------------------------------------------------------------------- figures


@dataclass
class KindFigures:
    """What became of one kind of draft: candidates kept as is, edited, rejected, pending."""

    kind: str
    label: str
    drafts: int = 0
    failed: int = 0
    kept: int = 0
    edited: int = 0
    rejected: int = 0
    pending: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None

    @property
    def candidates(self) -> int:
        return self.kept + self.edited + self.rejected + self.pending

    @property
    def decided(self) -> int:
        return self.kept + self.edited + self.rejected

    def _rate(self, n: int) -> float | None:
        return n / self.decided if self.decided else None

    @property
    def kept_rate(self) -> float | None:
        return self._rate(self.kept)

    @property
    def edited_rate(self) -> float | None:
        return self._rate(self.edited)

    @property
    def rejected_rate(self) -> float | None:
        return self._rate(self.rejected)

    @property
    def acceptance(self) -> float | None:
        """Kept or edited, of the decided candidates."""
        return self._rate(self.kept + self.edited)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class DraftingFigures:
    kinds: list[KindFigures]
    total: KindFigures
    price_per_1k_tokens: float | None = None
    by_kind: dict[str, KindFigures] = field(default_factory=dict)


def price_per_1k_tokens(project: Project) -> float | None:
    """The price per 1,000 tokens in the project's model settings ("price_per_1k_tokens"),
    if one is set and is a number."""
    raw = (project.settings or {}).get("model") or {}
    value = raw.get("price_per_1k_tokens") if isinstance(raw, dict) else None
    if isinstance(value, bool):
        return None
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def drafting_figures(*, user: AnyUser, project: Project) -> DraftingFigures:
    """Per kind of draft: drafts asked for and failed, candidates kept / edited / rejected /
    pending, tokens spent (every drafting call, retries and failed replies too) and their
    cost at the project's price per 1k tokens, if set. Three queries. NotFound for a user
    outside the project."""
    if not user.is_authenticated or not permissions.can(user=user, project=project, action="view"):
        raise NotFound("no such project")
    labels = dict(DraftKind.choices)
    by_kind = {kind: KindFigures(kind=kind, label=labels[kind]) for kind in DraftKind.values}
    drafts = (
        ModelDraft.objects.filter(project=project)
        .values("kind")
        .annotate(n=Count("id"), failed=Count("id", filter=Q(status=DraftStatus.FAILED)))
    )
    for row in drafts:
        if row["kind"] in by_kind:
            by_kind[row["kind"]].drafts = row["n"]
            by_kind[row["kind"]].failed = row["failed"]
    candidates = (
        DraftCandidate.objects.filter(draft__project=project)
        .values("draft__kind", "status")
        .annotate(n=Count("id"))
    )
    for counted in candidates:
        figures = by_kind.get(counted["draft__kind"])
        if figures is not None and counted["status"] in CandidateStatus.values:
            setattr(figures, counted["status"], counted["n"])
    sums: dict[str, Any] = {}
    for kind in DraftKind.values:
        where = Q(purpose__startswith=f"model-draft:{kind}:")
        sums[f"{kind}_prompt"] = Sum("prompt_tokens", filter=where)
        sums[f"{kind}_completion"] = Sum("completion_tokens", filter=where)
    tokens = ModelCall.objects.filter(
        project=project, purpose__startswith="model-draft:"
    ).aggregate(**sums)
    price = price_per_1k_tokens(project)
    total = KindFigures(kind="all", label="All drafts")
    for kind, figures in by_kind.items():
        figures.prompt_tokens = tokens[f"{kind}_prompt"] or 0
        figures.completion_tokens = tokens[f"{kind}_completion"] or 0
        for name in (
            "drafts",
            "failed",
            "kept",
            "edited",
            "rejected",
            "pending",
            "prompt_tokens",
            "completion_tokens",
        ):
            setattr(total, name, getattr(total, name) + getattr(figures, name))
    for figures in [*by_kind.values(), total]:
        figures.cost = round(figures.tokens / 1000 * price, 4) if price is not None else None
    return DraftingFigures(
        kinds=list(by_kind.values()), total=total, price_per_1k_tokens=price, by_kind=by_kind
    )
