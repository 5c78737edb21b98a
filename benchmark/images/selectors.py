"""Reads of images, scoped to the user's projects: an image no project of the user's holds answers 404."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from benchmark.models import (
    Image,
    Project,
)
from benchmark.typing import AnyUser


def image_list(*, user: AnyUser, project: Project | None = None) -> QuerySet[Image]:
    if not user.is_authenticated:
        return Image.objects.none()
    visible = Project.objects.filter(memberships__user=user.pk)
    if project is not None:
        visible = visible.filter(pk=project.pk)
    return Image.objects.filter(projects__in=visible).distinct().order_by("id")


def image_get(*, user: AnyUser, sha256: str) -> Image:
    return get_object_or_404(image_list(user=user), sha256=sha256)


def images_by_sha(*, user: AnyUser, shas: Iterable[str]) -> dict[str, Image]:
    """The images among ``shas`` the user may see, by hash (one query)."""
    wanted = {s for s in shas if s}
    if not wanted:
        return {}
    return {img.sha256: img for img in image_list(user=user).filter(sha256__in=wanted)}
