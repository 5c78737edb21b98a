"""Reads of audio files, scoped to the user's projects: a file no project of the user's holds
answers 404 (the rule images follow)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from benchmark.models import AudioFile, Item, Project
from benchmark.typing import AnyUser


def audio_list(*, user: AnyUser, project: Project | None = None) -> QuerySet[AudioFile]:
    if not user.is_authenticated:
        return AudioFile.objects.none()
    visible = Project.objects.filter(memberships__user=user.pk)
    if project is not None:
        visible = visible.filter(pk=project.pk)
    return AudioFile.objects.filter(projects__in=visible).distinct().order_by("id")


def audio_get(*, user: AnyUser, sha256: str) -> AudioFile:
    return get_object_or_404(audio_list(user=user), sha256=sha256)


def item_audio(*, user: AnyUser, item: Item) -> list[dict[str, Any]]:
    """The audio files the item's task names, in order: ``{"path", "audio"}`` with the stored
    file the user may hear, or ``audio`` None for one not stored here (one query)."""
    refs = [r for r in item.audio_refs or [] if isinstance(r, dict) and r.get("path")]
    shas = {r.get("sha256") for r in refs if r.get("sha256")}
    stored = (
        {a.sha256: a for a in audio_list(user=user, project=item.project).filter(sha256__in=shas)}
        if shas
        else {}
    )
    return [{"path": r["path"], "audio": stored.get(r.get("sha256") or "")} for r in refs]


def project_audio_files(*, project_id: int, shas: set[str]) -> dict[str, AudioFile]:
    """The project's stored audio among ``shas``, by hash (for a job that checked the user)."""
    shas = {s for s in shas if s}
    if not shas:
        return {}
    rows = AudioFile.objects.filter(sha256__in=shas, projects=project_id).only("sha256", "file")
    return {a.sha256: a for a in rows}
