"""The judge settings page of a project: each judge's prompt templates (current text, version,
who and when, every earlier version with its change) and the LLM-I reward weights. Reviewers
see it; project admins edit a template, reset it to the built-in text, or set the weights.

The forms are plain POSTs: a save redirects back to the page (``?saved=``); text the judge
cannot use answers 400 and a save made on an outdated version 409, both re-rendering the page
with what was typed kept, the messages next to the template, and for a 409 the other person's
version shown."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from benchmark import selectors as project_selectors
from benchmark.exceptions import DomainError, Forbidden
from benchmark.models import Project
from benchmark.pages import htmx_page, project_context, render_page, require_action
from benchmark.typing import request_user
from benchmark.versions import StaleVersion
from review.judge_settings import services
from review.judge_settings.forms import TemplateForm, WeightsForm
from review.judge_settings.selectors import builtin_by_id, judge_settings_get

PAGE = "review/judge_settings.html"


def _form_errors(form: Any) -> list[str]:
    return [
        f"{name}: {' '.join(errors)}" if name != "__all__" else " ".join(errors)
        for name, errors in form.errors.items()
    ]


def _page(
    request: HttpRequest, project: Project, *, status: int = 200, **extra: Any
) -> HttpResponse:
    try:
        settings = judge_settings_get(user=request.user, project=project)
    except Forbidden as exc:
        raise PermissionDenied(exc.message) from None
    context = {
        **project_context(request, project),
        "settings": settings,
        "saved": request.GET.get("saved", ""),
        "edit": None,
        "weights_edit": None,
        **extra,
    }
    response = render_page(request, PAGE, context)
    response.status_code = status
    return response


@login_required
@require_GET
@htmx_page
def judge_settings(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_selectors.project_get(user=request.user, pk=project_id)
    return _page(request, project)


def _back(project: Project, saved: str, anchor: str) -> HttpResponse:
    url = reverse("review:judge_settings", kwargs={"project_id": project.pk})
    return redirect(f"{url}?{urlencode({'saved': saved}, quote_via=quote)}#{anchor}")


@login_required
@require_POST
def judge_template_save(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_selectors.project_get(user=request.user, pk=project_id)
    require_action(request, project, "manage")
    form = TemplateForm(request.POST)
    template_id = request.POST.get("template", "")
    edit: dict[str, Any] = {
        "template_id": template_id,
        "system": request.POST.get("system", ""),
        "user": request.POST.get("user", ""),
        "note": request.POST.get("note", ""),
        "base": request.POST.get("base", ""),
        "errors": {},
        "conflict": None,
    }
    known = template_id in builtin_by_id()
    if not form.is_valid() or not known:
        # Shown next to the template, or on top when it is not one of the page's.
        errors = _form_errors(form) if form.errors else [_unknown(template_id)]
        edit["errors"] = {"": errors}
        error = "" if known else " ".join(errors)
        return _page(request, project, status=400, edit=edit, error=error)
    data = form.cleaned_data
    try:
        if data["op"] == "reset":
            row = services.judge_template_reset(
                project=project,
                user=request_user(request),
                template_id=data["template"],
                base_number=data["base"],
                note=data["note"],
            )
        else:
            row = services.judge_template_save(
                project=project,
                user=request_user(request),
                template_id=data["template"],
                system=data["system"],
                user_text=data["user"],
                base_number=data["base"],
                note=data["note"],
            )
    except StaleVersion as exc:
        edit["conflict"] = exc.current
        edit["errors"] = {"": [exc.message]}
        edit["base"] = exc.current.number
        return _page(request, project, status=409, edit=edit)
    except services.TemplateInvalid as exc:
        edit["errors"] = exc.errors
        return _page(request, project, status=400, edit=edit)
    except DomainError as exc:
        edit["errors"] = {"": [exc.message]}
        return _page(request, project, status=exc.status_code, edit=edit)
    return _back(project, f"{row.template_id} version {row.number}", _anchor(row.template_id))


def _anchor(template_id: str) -> str:
    return "tpl-" + template_id.replace(".", "-")


def _unknown(template_id: str) -> str:
    return f"unknown judge template {template_id!r}; one of {', '.join(sorted(builtin_by_id()))}"


@login_required
@require_POST
def judge_weights_save(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_selectors.project_get(user=request.user, pk=project_id)
    require_action(request, project, "manage")
    form = WeightsForm(request.POST)
    edit: dict[str, Any] = {
        key: request.POST.get(key, "") for key in ("rule", "llm", "mllm", "base", "preset")
    }
    if not form.is_valid():
        edit["errors"] = _form_errors(form)
        return _page(request, project, status=400, weights_edit=edit)
    data = form.cleaned_data
    try:
        row = services.judge_weights_save(
            project=project,
            user=request_user(request),
            base_number=data["base"],
            rule=data["rule"],
            llm=data["llm"],
            mllm=data["mllm"],
            preset=data["preset"] or "",
        )
    except StaleVersion as exc:
        edit["errors"] = [exc.message]
        edit["conflict"] = exc.current
        edit["base"] = exc.current.number
        return _page(request, project, status=409, weights_edit=edit)
    except DomainError as exc:
        edit["errors"] = [exc.message]
        return _page(request, project, status=exc.status_code, weights_edit=edit)
    return _back(project, f"weights version {row.number}", "weights")
