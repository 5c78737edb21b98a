"""Audio pages: the file itself for the item page's player (404 outside the user's projects,
like images), and attaching an uploaded file to an item (refused with 400 naming the file
when it is not FLAC, WAV or MP3, or too large)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from benchmark import selectors
from benchmark.audio import selectors as audio_selectors
from benchmark.audio import services as audio_services
from benchmark.exceptions import DomainError
from benchmark.formats.audio import CONTENT_TYPES
from benchmark.pages import project_context, require_action


@login_required
@require_GET
def audio_file(request: HttpRequest, sha256: str) -> FileResponse:
    audio = audio_selectors.audio_get(user=request.user, sha256=sha256)
    try:
        handle = audio.file.open("rb")
    except (FileNotFoundError, ValueError):
        raise Http404("The audio file is missing.") from None
    response = FileResponse(
        handle, content_type=CONTENT_TYPES.get(audio.format, "application/octet-stream")
    )
    # Content-addressed, so never stale; private because access is checked per user.
    response["Cache-Control"] = "private, max-age=31536000, immutable"
    return response


@login_required
@require_POST
def audio_attach(request: HttpRequest, project_id: int, item_id: int) -> HttpResponse:
    project = selectors.project_get(user=request.user, pk=project_id)
    require_action(request, project, "edit")
    item = selectors.item_get(user=request.user, project=project, pk=item_id)
    try:
        audio_services.item_audio_attach(
            user=request.user, item=item, file=request.FILES.get("audio")
        )
    except DomainError as exc:
        context = {**project_context(request, project), "item": item, "error": exc.message}
        return render(request, "benchmark/audio_refused.html", context, status=exc.status_code)
    return redirect("benchmark:item_detail", project_id=project.pk, item_id=item.pk)
