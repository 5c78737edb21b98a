"""Writes for images: uploads, derived images (crops and other operations) stored with their
recipe, and the re-derive check.

* ``image_upload`` is all or nothing: one bad file refuses the whole batch with a message naming
  every bad file, and stores nothing. ``image_upload_each`` keeps every good file and reports
  each bad one; the upload page uses it, so one bad file in a drop of twenty loses nothing.
* ``image_derive`` stores the derived PNG once by its sha256 with ``source`` and the normalized
  recipe; deriving the same recipe again returns the same row.
* ``image_preview`` derives without storing (for the editor's preview).
* ``image_recipe_check`` re-derives a stored derived image and compares hashes.

Pixel work (decode, operations, encode) runs outside the database transaction; only the row
writes are atomic. Files are content-addressed, so a rolled-back write leaves at most an unused
file that the next store of the same bytes reuses.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import (
    Any,
    Protocol,
)

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from PIL import Image as PILImage

from benchmark import permissions
from benchmark.exceptions import (
    NotFound,
    ValidationFailed,
)
from benchmark.imaging import ImageInfo, ImageRejected, inspect_image, make_thumbnail, ops
from benchmark.imaging.recipe import (
    Limits,
    Recipe,
    RecipeError,
    RederiveCheck,
    check,
    derive,
    render_bytes,
)
from benchmark.imaging.upload import prepare_upload
from benchmark.models import (
    Image,
    Project,
)
from benchmark.typing import AnyUser

__all__ = [
    "PREVIEW_MAX_SIDE",
    "Preview",
    "UploadOutcome",
    "box_pixels",
    "image_derive",
    "image_preview",
    "image_recipe_check",
    "image_upload",
    "image_upload_each",
    "recipe_parse",
]

PREVIEW_MAX_SIDE = 2048
"""Previews larger than this on their longest side are scaled down for the browser (the stored
derived image never is)."""


class UploadedFileLike(Protocol):
    name: str | None

    def read(self, size: int = ..., /) -> bytes: ...


FileArg = UploadedFileLike | tuple[str, bytes]


@dataclass
class UploadOutcome:
    """What became of one uploaded file."""

    name: str
    image: Image | None = None
    error: str = ""
    duplicate: bool = False
    """The same bytes were already an image of this project (another project's images do not
    count: they must not show)."""
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.image is not None


# --------------------------------------------------------------------------- storing


def _max_pixels() -> int:
    return int(settings.BENCHWRIGHT_MAX_IMAGE_PIXELS)


def _max_bytes() -> int:
    return int(settings.BENCHWRIGHT_MAX_UPLOAD_BYTES)


def _read(file: FileArg) -> tuple[str, bytes]:
    """The file's name and bytes, refusing a file over the size limit before reading it all."""
    if isinstance(file, tuple):
        name, data = file
        return str(name), bytes(data)
    name = str(getattr(file, "name", "") or "upload")
    size = getattr(file, "size", None)
    limit = _max_bytes()
    if isinstance(size, int) and size > limit:
        raise ImageRejected(f"file is {size / 1e6:.1f} MB; the limit is {limit / 1e6:.1f} MB")
    data = file.read(limit + 1)
    if len(data) > limit:
        raise ImageRejected(f"file is over the {limit / 1e6:.1f} MB limit")
    return name, data


def _file_name(file: FileArg) -> str:
    if isinstance(file, tuple):
        return str(file[0])
    return str(getattr(file, "name", "") or "upload")


def _prepare(file: FileArg) -> tuple[str, Any]:
    name = _file_name(file)
    try:
        name, data = _read(file)
        if not data:
            raise ImageRejected("the file is empty")
        return name, prepare_upload(data, max_pixels=_max_pixels(), max_bytes=_max_bytes())
    except ImageRejected as exc:
        return name, f"{name}: {exc}"


def _require_member(*, user: AnyUser, project: Project) -> None:
    """Annotators, reviewers and admins of the project may add and derive images."""
    permissions.require(user=user, project=project, action="edit")


# --------------------------------------------------------------------------- uploads


def image_upload(*, project: Project, user: AnyUser, files: Iterable[FileArg]) -> list[Image]:
    """Store several uploaded files, all or nothing: when any file is refused, nothing is
    stored and ``ValidationFailed`` names every bad file and why. Returns one image per file,
    in order (a file uploaded twice gives the same row twice)."""
    _require_member(user=user, project=project)
    prepared = [_prepare(f) for f in files]
    if not prepared:
        raise ValidationFailed("no files: choose one or more images to upload")
    errors = [p for _, p in prepared if isinstance(p, str)]
    if errors:
        raise ValidationFailed("; ".join(errors))
    with transaction.atomic():
        return [
            image_store_inspected(data=p.data, info=p.info, project=project)[0]
            for _, p in prepared
            if not isinstance(p, str)
        ]


def image_upload_each(
    *, project: Project, user: AnyUser, files: Iterable[FileArg]
) -> list[UploadOutcome]:
    """Store each good file and report each bad one; one outcome per file, in order."""
    _require_member(user=user, project=project)
    outcomes = []
    for file in files:
        name, prepared = _prepare(file)
        if isinstance(prepared, str):
            outcomes.append(UploadOutcome(name=name, error=prepared))
            continue
        with transaction.atomic():
            # "Duplicate" means already in this project: that the bytes are stored for
            # another project must not show (it would tell what other projects hold).
            here = Image.objects.filter(sha256=prepared.info.sha256, projects=project).exists()
            image, _ = image_store_inspected(
                data=prepared.data, info=prepared.info, project=project
            )
        outcomes.append(UploadOutcome(name=name, image=image, duplicate=here, note=prepared.note))
    if not outcomes:
        raise ValidationFailed("no files: choose one or more images to upload")
    return outcomes


# --------------------------------------------------------------------------- recipes


def recipe_parse(recipe: Any, *, allow_empty: bool = False) -> Recipe:
    """A validated, normalized :class:`Recipe` from its JSON form (a dict, or JSON text), or
    ``ValidationFailed`` saying which step and parameter is wrong."""
    if recipe is None or recipe == "":
        raise ValidationFailed("recipe: missing (nothing was sent)")
    try:
        if isinstance(recipe, str | bytes):
            parsed = Recipe.from_json(recipe)
        else:
            parsed = Recipe.from_dict(recipe)
    except RecipeError as exc:
        raise ValidationFailed(str(exc)) from None
    if not parsed.steps and not allow_empty:
        raise ValidationFailed("recipe: add at least one operation (a crop, a rotation, ...)")
    return parsed


def _source_for(*, project: Project, recipe: Recipe) -> Image:
    source = Image.objects.filter(sha256=recipe.source_sha256, projects=project).first()
    if source is None:
        raise NotFound(
            f"recipe: source image {recipe.source_sha256[:12]}… is not an image of "
            f"project {project.name!r}"
        )
    return source


def _run(source: Image, recipe: Recipe) -> PILImage.Image:
    try:
        with source.file.open("rb") as handle:
            data = handle.read()
    except (FileNotFoundError, ValueError):
        raise NotFound(f"the file of image {source.sha256[:12]}… is missing") from None
    try:
        image = ops.load(data, max_pixels=max(_max_pixels(), source.width * source.height))
        return _derive(image, recipe)
    except ops.OpError as exc:
        raise ValidationFailed(str(exc)) from None


def _derive(image: PILImage.Image, recipe: Recipe) -> PILImage.Image:
    # Every path that derives (preview, derive, the trajectory editor, drafting) comes here.
    seconds = float(settings.BENCHWRIGHT_DERIVE_SECONDS)
    limits = Limits.for_image_pixels(_max_pixels(), seconds=seconds)
    try:
        return derive(image, recipe, limits=limits)
    except RecipeError as exc:
        raise ValidationFailed(str(exc)) from None


def image_derive(*, project: Project, user: AnyUser, recipe: Mapping[str, Any] | str) -> Image:
    """Apply ``recipe`` to its source image (which must be an image of ``project``) and store
    the result as PNG, once by sha256, with ``source`` and the normalized recipe. The same
    recipe twice gives the same row. Bad recipes (an unknown operation, a crop box outside the
    image or empty) raise ``ValidationFailed`` naming the step and parameter."""
    _require_member(user=user, project=project)
    return image_derive_for_job(project=project, recipe=recipe)


def image_derive_for_job(*, project: Project, recipe: Mapping[str, Any] | str) -> Image:
    """``image_derive`` without the member check, for a job that already checked who started
    it (the oracle test derives a step's ground-truth image the task file defines)."""
    parsed = recipe_parse(recipe)
    source = _source_for(project=project, recipe=parsed)
    result = _run(source, parsed)
    data = render_bytes(result)
    info = inspect_image(data, max_pixels=max(_max_pixels(), result.width * result.height))
    with transaction.atomic():
        image, _ = image_store_inspected(
            data=data, info=info, project=project, source=source, recipe=parsed.to_dict()
        )
    return image


@dataclass(frozen=True)
class Preview:
    data: bytes
    content_type: str
    width: int
    """Of the derived image, before any scaling for the browser."""
    height: int
    scaled: bool


def image_preview(*, project: Project, user: AnyUser, recipe: Mapping[str, Any] | str) -> Preview:
    """The derived image as PNG, not stored. Scaled down to ``PREVIEW_MAX_SIDE`` when larger
    (``scaled`` says so; ``width``/``height`` are the real size). A recipe without steps
    previews the source itself (the editor uses that to show the image a crop receives)."""
    _require_member(user=user, project=project)
    parsed = recipe_parse(recipe, allow_empty=True)
    source = _source_for(project=project, recipe=parsed)
    result = _run(source, parsed)
    width, height = result.size
    scaled = max(width, height) > PREVIEW_MAX_SIDE
    if scaled:
        result = result.copy()
        result.thumbnail((PREVIEW_MAX_SIDE, PREVIEW_MAX_SIDE), PILImage.Resampling.LANCZOS)
    out = io.BytesIO()
    ops.normalize_mode(result).save(out, format="PNG", compress_level=1)
    return Preview(out.getvalue(), "image/png", width, height, scaled)


# --------------------------------------------------------------------------- checking


def image_recipe_check(*, image: Image) -> RederiveCheck:
    """Re-derive ``image`` from its source and recipe and compare the hashes."""
    if not image.recipe or image.source_id is None:
        return RederiveCheck(False, "this image was uploaded, not derived: it has no recipe")
    source = image.source
    assert source is not None
    try:
        parsed = Recipe.from_dict(image.recipe)
    except RecipeError as exc:
        return RederiveCheck(False, f"the stored recipe is not valid: {exc}")
    try:
        with source.file.open("rb") as handle:
            data = handle.read()
    except (FileNotFoundError, ValueError):
        return RederiveCheck(False, f"the source file {source.sha256[:12]}… is missing")
    seconds = float(settings.BENCHWRIGHT_DERIVE_SECONDS)
    return check(
        data,
        parsed,
        image.sha256,
        max_pixels=max(_max_pixels(), source.width * source.height),
        limits=Limits.for_image_pixels(_max_pixels(), seconds=seconds),
    )


def box_pixels(recipe: Recipe, size: Sequence[int]) -> list[int] | None:
    """The pixel box of the recipe's first crop, when it is the first step (so its
    coordinates refer to the source of ``size``)."""
    if not recipe.steps or recipe.steps[0].op != "crop":
        return None
    params = recipe.steps[0].params
    if params.get("box") is not None:
        return [int(v) for v in params["box"]]
    return list(ops.bbox_to_pixels(params["bbox_2d"], (int(size[0]), int(size[1]))))


def image_store(*, data: bytes, name: str = "", project: Project | None = None) -> Image:
    """Store image bytes once by sha256 (verified by Pillow), with a thumbnail."""
    try:
        info = inspect_image(
            data,
            max_pixels=settings.BENCHWRIGHT_MAX_IMAGE_PIXELS,
            max_bytes=settings.BENCHWRIGHT_MAX_UPLOAD_BYTES,
        )
    except ImageRejected as exc:
        raise ValidationFailed(f"{name or 'upload'}: {exc}") from None
    return image_store_inspected(data=data, info=info, project=project)[0]


def image_store_inspected(
    *,
    data: bytes,
    info: ImageInfo,
    project: Project | None = None,
    source: Image | None = None,
    recipe: dict[str, Any] | None = None,
) -> tuple[Image, bool]:
    """The row for bytes already inspected (``info``), created if new with its file and a
    thumbnail, linked to ``project``; a derived image keeps its ``source`` and ``recipe``.
    Returns (image, created). Safe against two requests storing the same bytes at once."""
    image = Image.objects.filter(sha256=info.sha256).first()
    created = False
    if image is None:
        image = Image(
            sha256=info.sha256,
            format=info.format,
            width=info.width,
            height=info.height,
            size_bytes=info.size_bytes,
            source=source,
            recipe=recipe or {},
        )
        shard = f"{info.sha256[:2]}/{info.sha256}"
        image.file.save(f"{shard}.{info.extension}", ContentFile(data), save=False)
        # A thumbnail is a convenience: the image is kept even when one cannot be made.
        with contextlib.suppress(Exception):
            image.thumbnail.save(f"{shard}.png", ContentFile(make_thumbnail(data)), save=False)
        try:
            with transaction.atomic():
                image.save()
            created = True
        except IntegrityError:  # stored meanwhile by another request
            image = Image.objects.get(sha256=info.sha256)
    elif source is not None and not image.recipe and image.pk != source.pk:
        # Bytes stored before without a recipe (an upload equal to this result): record how
        # they can be made, so the check works for them too.
        image.source = source
        image.recipe = recipe or {}
        image.save(update_fields=["source", "recipe"])
    if project is not None:
        image.projects.add(project)
    return image, created
