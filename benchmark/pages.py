"""What the page views of every app share: the htmx ``Vary`` decorator, rendering a page or the
fragment an htmx target asks for, the context every project page gets (project, role, allowed
actions) and the permission check that answers 403. It imports no feature, so every feature's views
may use it (the model pages' helpers are ``benchmark.llm.selectors.model_context`` and
``benchmark.images.selectors.item_images``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django import forms
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.views.decorators.vary import vary_on_headers

from benchmark import permissions
from benchmark.exceptions import DomainError
from benchmark.models import Project

htmx_page = vary_on_headers("HX-Request", "HX-Target")
"""For views that answer an htmx request with a fragment chosen by its target."""

T = TypeVar("T")


def form_submit(form: forms.Form, action: Callable[[dict[str, Any]], T]) -> tuple[T | None, int]:
    """A posted form: ``action(cleaned_data)`` (a service call) when the form is valid. Returns
    its result and 200, or None and the status to answer the re-rendered form with: 400 for an
    invalid form, the domain error's status (with its message on the form) when the service
    refused."""
    if not form.is_valid():
        return None, 400
    try:
        return action(form.cleaned_data), 200
    except DomainError as exc:
        form.add_error(None, exc.message)
        return None, exc.status_code


def render_page(
    request: HttpRequest,
    template: str,
    context: dict[str, Any],
    *,
    fragments: dict[str, str] | None = None,
) -> HttpResponse:
    """Render the whole page, or for an htmx request the partial its target asks for:
    ``fragments`` maps a target id (or an id prefix ending in ``*``) to a partial name, and any
    other target gets the page's ``content`` partial. History restores get the full page."""
    htmx = getattr(request, "htmx", None)
    if htmx and not htmx.history_restore_request:
        target = htmx.target or ""
        fragment = "content"
        for key, name in (fragments or {}).items():
            if target == key or (key.endswith("*") and target.startswith(key[:-1])):
                fragment = name
                break
        response = render(request, f"{template}#{fragment}", context)
        if target == "main":
            # The page changed under the header: so does the project's guidelines panel.
            response.write(
                render_to_string("partials/guidelines_oob.html", context, request=request)
            )
        return response
    return render(request, template, context)


def require_action(request: HttpRequest, project: Project, action: str) -> None:
    """403 unless the user's role in the project allows ``action``."""
    if not permissions.can(user=request.user, project=project, action=action):
        raise PermissionDenied(f"Your role in this project does not allow {action}.")


def project_context(request: HttpRequest, project: Project) -> dict[str, Any]:
    return {
        "project": project,
        "role": permissions.role_in(user=request.user, project=project),
        "actions": permissions.allowed_actions(user=request.user, project=project),
    }
