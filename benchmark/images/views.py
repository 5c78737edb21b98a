"""Image pages: the project's images with an upload zone, the crop / operations editor, and the
endpoints the editor calls (preview: derive without storing; derive: store with the recipe).

Every member of a project (annotator, reviewer, admin) may upload and derive; other projects'
images answer 404. The upload and derive endpoints answer JSON when asked for it
(``Accept: application/json``), and the pages work as plain forms without JavaScript."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models.fields.files import FieldFile
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from benchmark import limits, selectors
from benchmark.exceptions import DomainError
from benchmark.images import selectors as image_selectors
from benchmark.images import services as image_services
from benchmark.models import Image, Project
from benchmark.pages import htmx_page, project_context, render_page, require_action

PAGE_SIZE = 60


def _wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def image_json(project: Project, image: Image) -> dict[str, Any]:
    """How the endpoints describe a stored image."""
    return {
        "sha256": image.sha256,
        "width": image.width,
        "height": image.height,
        "format": image.format,
        "url": reverse("benchmark:image", args=[image.sha256]),
        "thumb_url": reverse("benchmark:image_thumb", args=[image.sha256]),
        "edit_url": reverse("benchmark:image_edit", args=[project.pk, image.sha256]),
        "recipe": image.recipe or None,
        "source_sha256": image.source.sha256 if image.source_id and image.source else None,
    }


def _project_image(request: HttpRequest, project: Project, sha256: str) -> Image:
    """An image of ``project`` the user may see, or 404."""
    return get_object_or_404(
        image_selectors.image_list(user=request.user, project=project).select_related("source"),
        sha256=sha256,
    )


def _recipe_from(request: HttpRequest) -> Any:
    """The recipe sent as a form field ``recipe`` (JSON text) or as a JSON body."""
    if request.content_type == "application/json":
        try:
            body = limits.json_loads(request.body or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _BadJson(f"request body: not valid JSON ({exc})")
        if isinstance(body, dict) and "recipe" in body and "steps" not in body:
            return body["recipe"]
        return body
    return request.POST.get("recipe", "")


class _BadJson(str):
    pass


# --------------------------------------------------------------------------- list + upload


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def image_list(request: HttpRequest, project_id: int) -> HttpResponse:
    """The project's images with thumbnails, and an upload zone (several files at once). A bad
    file is reported by name and the good ones are kept."""
    project = selectors.project_get(user=request.user, pk=project_id)
    require_action(request, project, "view")
    outcomes: list[image_services.UploadOutcome] = []
    error = ""
    if request.method == "POST":
        files = request.FILES.getlist("files")
        try:
            outcomes = image_services.image_upload_each(
                project=project, user=request.user, files=files
            )
        except DomainError as exc:
            error = exc.message
        if _wants_json(request):
            results = [
                {
                    "name": o.name,
                    "ok": o.ok,
                    "error": o.error,
                    "duplicate": o.duplicate,
                    "note": o.note,
                    **({"image": image_json(project, o.image)} if o.image else {}),
                }
                for o in outcomes
            ]
            stored = any(o.ok for o in outcomes)
            return JsonResponse({"results": results, "error": error}, status=200 if stored else 400)
    images = image_selectors.image_list(user=request.user, project=project).order_by("-id")
    page = Paginator(
        images.only("sha256", "width", "height", "format", "source", "recipe"), PAGE_SIZE
    )
    context = {
        **project_context(request, project),
        "page": page.get_page(request.GET.get("page")),
        "outcomes": outcomes,
        "error": error,
        "max_upload_mb": settings.BENCHWRIGHT_MAX_UPLOAD_BYTES // (1024 * 1024),
        "max_megapixels": settings.BENCHWRIGHT_MAX_IMAGE_PIXELS / 1e6,
    }
    return render_page(
        request, "benchmark/images.html", context, fragments={"image-grid": "image-grid"}
    )


# --------------------------------------------------------------------------- editor endpoints


@login_required
@require_POST
def image_preview(request: HttpRequest, project_id: int) -> HttpResponse:
    """The derived image of a recipe as PNG (not stored), or 400 with the reason as text.
    ``X-Image-Width``/``X-Image-Height`` give the real size when the preview is scaled down."""
    project = selectors.project_get(user=request.user, pk=project_id)
    require_action(request, project, "view")
    recipe = _recipe_from(request)
    if isinstance(recipe, _BadJson):
        return HttpResponse(str(recipe), status=400, content_type="text/plain; charset=utf-8")
    try:
        preview = image_services.image_preview(project=project, user=request.user, recipe=recipe)
    except DomainError as exc:
        return HttpResponse(
            exc.message, status=exc.status_code, content_type="text/plain; charset=utf-8"
        )
    response = HttpResponse(preview.data, content_type=preview.content_type)
    response["X-Image-Width"] = str(preview.width)
    response["X-Image-Height"] = str(preview.height)
    response["X-Image-Scaled"] = "1" if preview.scaled else "0"
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def image_derive(request: HttpRequest, project_id: int) -> JsonResponse:
    """Store the derived image of a recipe; answers its description as JSON."""
    project = selectors.project_get(user=request.user, pk=project_id)
    require_action(request, project, "view")
    recipe = _recipe_from(request)
    if isinstance(recipe, _BadJson):
        return JsonResponse({"error": str(recipe)}, status=400)
    try:
        image = image_services.image_derive(project=project, user=request.user, recipe=recipe)
    except DomainError as exc:
        return JsonResponse({"error": exc.message}, status=exc.status_code)
    return JsonResponse(image_json(project, image))


# --------------------------------------------------------------------------- edit page


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def image_edit(request: HttpRequest, project_id: int, sha256: str) -> HttpResponse:
    """One image in the editor. For a derived image the editor opens its source with the saved
    recipe (so the same box and steps show again), next to the result and its re-derive check.
    Saving stores a derived image and opens its page."""
    project = selectors.project_get(user=request.user, pk=project_id)
    require_action(request, project, "view")
    image = _project_image(request, project, sha256)
    source = image.source if image.recipe and image.source_id else None
    if source is not None and not source.projects.filter(pk=project.pk).exists():
        source = None  # the source is not in this project: edit the image itself
    editor_image = source or image
    recipe: Any = image.recipe if source is not None else None
    error = ""
    if request.method == "POST":
        submitted = request.POST.get("recipe", "")
        try:
            derived = image_services.image_derive(
                project=project, user=request.user, recipe=submitted
            )
        except DomainError as exc:
            error = exc.message
            recipe = _restorable(submitted, editor_image)
        else:
            return redirect("benchmark:image_edit", project_id=project.pk, sha256=derived.sha256)
    if request.method == "GET" and request.GET.get("check"):
        if not image.recipe:
            raise Http404("This image has no recipe to check.")
        check = image_services.image_recipe_check(image=image)
        return render(request, "benchmark/images_edit.html#recipe-check", {"check": check})
    derived_list = list(Image.objects.filter(source=image, projects=project).order_by("-id")[:24])
    context = {
        **project_context(request, project),
        "image": image,
        "editor_image": editor_image,
        "source": source,
        "recipe": recipe,
        "recipe_pretty": json.dumps(image.recipe, indent=2, sort_keys=True) if image.recipe else "",
        "derived": derived_list,
        "error": error,
    }
    return render_page(request, "benchmark/images_edit.html", context)


def _restorable(submitted: str, editor_image: Image) -> Any:
    """The submitted recipe as a dict the editor can restore, when it is one (so a refused
    save keeps the user's box and steps)."""
    try:
        data = limits.json_loads(submitted)
    except (json.JSONDecodeError, TypeError):
        return None
    if isinstance(data, dict) and data.get("source_sha256") == editor_image.sha256:
        return data
    return None


IMAGE_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


def _image_response(field: FieldFile, content_type: str) -> FileResponse:
    try:
        handle = field.open("rb")
    except (FileNotFoundError, ValueError):
        raise Http404("The image file is missing.") from None
    response = FileResponse(handle, content_type=content_type)
    # Content-addressed, so never stale; private because access is checked per user.
    response["Cache-Control"] = "private, max-age=31536000, immutable"
    return response


@login_required
@require_GET
def image_file(request: HttpRequest, sha256: str) -> FileResponse:
    image = image_selectors.image_get(user=request.user, sha256=sha256)
    return _image_response(image.file, IMAGE_TYPES.get(image.format, "application/octet-stream"))


@login_required
@require_GET
def image_thumb(request: HttpRequest, sha256: str) -> FileResponse:
    image = image_selectors.image_get(user=request.user, sha256=sha256)
    if image.thumbnail:
        return _image_response(image.thumbnail, "image/png")
    return _image_response(image.file, IMAGE_TYPES.get(image.format, "application/octet-stream"))
