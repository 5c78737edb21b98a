"""Reading rendered answers: an answer a reviewer may see rendered, its newest rendering as
HTML (for its page, for other pages such as a human evaluation task, and as a standalone
file), and a project's recent renderings.

Model answers are reviewer material: :func:`response_for_rendering` answers 404 for an answer
of a project the user is not a member of (or whose item is hidden from them) and 403 for a
member who may not review. :func:`rendered_document` checks nothing: it is for pages that
decided themselves who may read the answer (a human evaluation task shows it to its raters
without the model's name; the document contains the answer only).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.staticfiles import finders
from django.core.exceptions import PermissionDenied
from django.core.files.storage import default_storage
from django.db.models import QuerySet
from django.http import Http404
from django.urls import reverse

from benchmark import permissions
from benchmark.models import Image, Project, Response
from benchmark.rendering import (
    CallResult,
    SanitizedHtml,
    data_url,
    document_html,
    standalone_html,
)
from benchmark.tags import parse
from benchmark.typing import AnyUser
from benchmark.visibility import exclude_hidden_attachments, responses_visible
from review.answer_rendering.models import RenderedAnswer

WHY = "Rendered model answers are for reviewers and admins."
CSS_FILE = "css/rendering.css"


def response_for_rendering(*, user: AnyUser, pk: int) -> Response:
    """The answer (with its item and project) if ``user`` may review its project; 404 for a
    non-member or a hidden item, 403 for a member below reviewer."""
    if not user.is_authenticated:
        raise Http404("no such answer")
    rows = Response.objects.select_related("item__project").filter(
        pk=pk, item__project__memberships__user=user.pk
    )
    rows = responses_visible(exclude_hidden_attachments(rows, user=user), user=user)
    response = rows.first()
    if response is None:
        raise Http404("no such answer")
    if not permissions.can(user=user, project=response.item.project, action="score"):
        raise PermissionDenied(WHY)
    return response


def rendering_newest(*, response: Response) -> RenderedAnswer | None:
    return RenderedAnswer.objects.filter(response=response).order_by("-created_at", "-id").first()


def rendering_history(*, response: Response, limit: int = 20) -> list[RenderedAnswer]:
    return list(
        RenderedAnswer.objects.filter(response=response)
        .defer("text", "calls")
        .order_by("-created_at", "-id")[:limit]
    )


def _results(rendering: RenderedAnswer) -> list[CallResult]:
    return [CallResult.from_dict(c) for c in rendering.calls or [] if isinstance(c, dict)]


def site_image_src(sha256: str) -> str:
    return reverse("benchmark:image", args=[sha256])


def rendering_html(
    rendering: RenderedAnswer,
    *,
    image_src: Callable[[str], str] = site_image_src,
    data_images: bool = False,
) -> SanitizedHtml:
    """The rendering's document as sanitized HTML (the text it rendered, each call drawn);
    empty for a rendering that failed. Templates print it with ``|sanitized``."""
    if rendering.error:
        return SanitizedHtml()
    parsed = parse(rendering.text, rendering.syntax)  # type: ignore[arg-type]
    return document_html(parsed, _results(rendering), image_src=image_src, data_images=data_images)


def rendered_document(response: Response) -> SanitizedHtml | None:
    """The answer's newest rendering as sanitized HTML for another page (images as site URLs,
    which the image view shows to the project's members), or None when it was never rendered
    (or could not be). Include it with ``{% include "review/answer_rendering/_document.html" with
    document=... %}``, which adds the stylesheet. No permission check: see the module
    docstring."""
    rendering = rendering_newest(response=response)
    if rendering is None or rendering.error:
        return None
    return rendering_html(rendering)


def _css() -> str:
    path = finders.find(CSS_FILE)
    if not path:
        return ""
    with open(path if isinstance(path, str) else path[0], encoding="utf-8") as handle:
        return handle.read()


def rendering_standalone(*, rendering: RenderedAnswer, response: Response) -> str:
    """A complete HTML file of the rendering: images inlined as ``data:`` URLs, CSS inlined;
    it names the item, its query and the model."""
    shas = {c.get("image") for c in rendering.calls or []} | {
        c.get("shown") for c in rendering.calls or []
    }
    shas.discard(None)
    files = dict(Image.objects.filter(sha256__in=shas).values_list("sha256", "file"))
    inlined: dict[str, str] = {}

    def src(sha256: str) -> str:
        if sha256 not in inlined:
            name = files.get(sha256)
            try:
                with default_storage.open(name, "rb") as handle:  # type: ignore[arg-type]
                    inlined[sha256] = data_url(handle.read())
            except (OSError, TypeError, ValueError):
                inlined[sha256] = ""
        return inlined[sha256]

    item = response.item
    facts: list[tuple[str, str]] = [
        ("Item", item.external_id),
        ("Model", response.model_name or response.key),
        ("Query", item.query),
        ("Rendered", rendering.created_at.strftime("%Y-%m-%d %H:%M UTC")),
    ]
    return standalone_html(
        title=f"{item.external_id} · {response.model_name or response.key}",
        body=rendering_html(rendering, image_src=src, data_images=True),
        css=_css(),
        facts=facts,
        error=rendering.error,
    )


def renderings_recent(*, user: AnyUser, project: Project, limit: int = 50) -> QuerySet[Any]:
    """The project's newest renderings (any answer), for reviewers."""
    if not permissions.can(user=user, project=project, action="score"):
        return RenderedAnswer.objects.none()
    return (
        RenderedAnswer.objects.filter(response__item__project=project)
        .select_related("response__item")
        .defer("text", "calls", "response__text", "response__raw", "response__item__raw")
        .order_by("-created_at", "-id")[:limit]
    )
