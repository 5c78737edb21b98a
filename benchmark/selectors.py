"""Reads. Every selector takes ``user=`` and scopes to what that user may see, so an object
from another project answers 404."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Q, QuerySet
from django.shortcuts import get_object_or_404

from benchmark.models import Image, Item, ItemStatus, Job, Project

User = AbstractBaseUser | AnonymousUser


def project_list(*, user: User) -> QuerySet[Project]:
    if not user.is_authenticated:
        return Project.objects.none()
    counts = {
        f"n_{status}": Count("items", filter=Q(items__status=status), distinct=False)
        for status in ItemStatus.values
    }
    return (
        Project.objects.filter(memberships__user=user)
        .select_related("toolset", "taxonomy")
        .annotate(n_items=Count("items"), **counts)
        .order_by("name")
    )


def project_get(*, user: User, pk: int) -> Project:
    if not user.is_authenticated:
        return get_object_or_404(Project.objects.none(), pk=pk)
    return get_object_or_404(
        Project.objects.filter(memberships__user=user).select_related("toolset", "taxonomy"),
        pk=pk,
    )


def item_list(*, user: User, project: Project) -> QuerySet[Item]:
    return Item.objects.filter(project=project, project__memberships__user=user)


def item_get(*, user: User, project: Project, pk: int) -> Item:
    return get_object_or_404(item_list(user=user, project=project), pk=pk)


def image_get(*, user: User, sha256: str) -> Image:
    if not user.is_authenticated:
        return get_object_or_404(Image.objects.none(), sha256=sha256)
    return get_object_or_404(
        Image.objects.filter(projects__memberships__user=user).distinct(), sha256=sha256
    )


def job_get(*, user: User, pk: int) -> Job:
    if not user.is_authenticated:
        return get_object_or_404(Job.objects.none(), pk=pk)
    return get_object_or_404(
        Job.objects.filter(Q(created_by=user) | Q(project__memberships__user=user)).distinct(),
        pk=pk,
    )
