"""The user's own API tokens page: list, make (the key shown once), revoke. Thin: a selector
finds (another user's token is a 404), a form validates, one service writes."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from benchmark.api_tokens import selectors, services
from benchmark.api_tokens.forms import ApiTokenCreateForm
from benchmark.pages import form_submit
from benchmark.typing import request_user

TEMPLATE = "benchmark/api_tokens/tokens.html"


def _page(
    request: HttpRequest,
    *,
    status: int = 200,
    form: ApiTokenCreateForm | None = None,
    new_key: str = "",
    error: str = "",
) -> HttpResponse:
    context = {
        "tokens": selectors.api_token_list(user=request.user),
        "form": form or ApiTokenCreateForm(),
        "new_key": new_key,
        "error": error,
        "api_url": request.build_absolute_uri("/api/projects/"),
    }
    return render(request, TEMPLATE, context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def api_tokens(request: HttpRequest) -> HttpResponse:
    """Your API tokens; a POST makes one and shows its key, this once."""
    if request.method != "POST":
        return _page(request)
    form = ApiTokenCreateForm(request.POST)
    user = request_user(request)
    made, status = form_submit(
        form,
        lambda data: services.api_token_create(
            user=user, actor=user, name=data["name"], expires_days=data["expires_days"]
        ),
    )
    if made is None:
        return _page(request, status=status, form=form)
    _, key = made
    return _page(request, new_key=key)


@login_required
@require_POST
def api_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    token = selectors.api_token_get(user=request.user, pk=token_id)
    form = forms.Form(request.POST)
    revoked, status = form_submit(
        form, lambda _: services.api_token_revoke(token=token, actor=request_user(request))
    )
    if revoked is None:
        return _page(
            request, status=status, error=" ".join(str(e) for e in form.non_field_errors())
        )
    messages.success(request, f"API token {revoked.name!r} revoked: it no longer works.")
    return redirect("benchmark:api_tokens")
