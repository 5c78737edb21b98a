"""Reads of images, scoped to the user's projects: an image no project of the user's holds answers 404."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from benchmark.models import Image, Item, Project
from benchmark.presenters import image_entries
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


_SHA_RE = re.compile(r"^[0-9a-f]{64}$")


def image_name_sha(name: str) -> str:
    """The sha256 a name gives by its form, or "": the hash itself, or a file named by it
    (``images/<sha256>.<ext>``)."""
    value = name.strip().lower()
    if _SHA_RE.match(value):
        return value
    stem = PurePosixPath(value).stem
    return stem if _SHA_RE.match(stem) else ""


def project_images_named(*, project: Project, names: Iterable[str]) -> dict[str, Image]:
    """The one rule naming a project's images without their bytes (the API, the item form, a
    record sent on its own): ``{name: Image}`` for each name that is the sha256 of an image
    stored for ``project``, ``images/<sha256>.<ext>`` of one, or a path the project's items
    already use (as imported, e.g. ``images/atp_0001_0.png``). Unknown names are left out.
    For services that have checked the user's rights on the project; one query for the
    hashes, and one per path that is not named by its hash."""
    wanted = {name for name in names if isinstance(name, str) and name.strip()}
    by_form = {name: image_name_sha(name) for name in wanted}
    images = _project_images(project, set(by_form.values()))
    out = {name: images[sha] for name, sha in by_form.items() if sha in images}
    by_path: dict[str, str] = {}
    for path in sorted(wanted - set(out)):
        if _SHA_RE.match(path.strip().lower()):
            continue  # a hash the project does not hold, not a path
        # The JSON text holds the path; the refs are then checked exactly.
        rows = project.items.filter(image_refs__icontains=path).values_list("image_refs", flat=True)
        for refs in rows[:50]:
            sha = next(
                (r["sha256"] for r in refs or [] if r.get("path") == path and r.get("sha256")), ""
            )
            if sha:
                by_path[path] = sha
                break
    images.update(_project_images(project, set(by_path.values()) - set(images)))
    out.update({path: images[sha] for path, sha in by_path.items() if sha in images})
    return out


def _project_images(project: Project, shas: set[str]) -> dict[str, Image]:
    shas.discard("")
    if not shas:
        return {}
    return {i.sha256: i for i in Image.objects.filter(projects=project, sha256__in=shas)}


def item_images(
    *, user: AnyUser, item: Item, index_name: str = "img_index"
) -> list[dict[str, Any]]:
    """The item's stored images, labelled by ``index_name`` (ones missing from storage cannot
    be sent to a model)."""
    refs = item.image_refs or []
    images = images_by_sha(user=user, shas=[r.get("sha256") for r in refs])
    return [e for e in image_entries(refs, images, index_name) if e["image"]]
