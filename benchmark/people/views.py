"""The members page of a project, invitation links, and the staff's people page. Thin: a
selector finds (403/404 by role), a form validates, one service writes (and records it)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from benchmark import login_throttle, permissions
from benchmark.exceptions import DomainError
from benchmark.models import Project, Role
from benchmark.pages import form_submit, htmx_page, project_context, render_page
from benchmark.people import selectors, services
from benchmark.people.forms import (
    InvitationForm,
    MemberAddForm,
    NewPasswordForm,
    RoleForm,
    SignupForm,
    UserCreateForm,
)
from benchmark.typing import User, request_user

LOGIN_BACKEND = "django.contrib.auth.backends.ModelBackend"
PASSWORD_LINK_TEMPLATE = "benchmark/people/password_link.html"


# --------------------------------------------------------------------------- members


def _members_page(
    request: HttpRequest,
    project: Project,
    *,
    status: int = 200,
    add_form: MemberAddForm | None = None,
    invite_form: InvitationForm | None = None,
    error: str = "",
    new_link: str = "",
) -> HttpResponse:
    user = request.user
    context = {
        **project_context(request, project),
        "members": selectors.member_list(user=user, project=project),
        "invitations": selectors.invitation_list(user=user, project=project),
        "events": selectors.event_list(user=user, project=project),
        "roles": Role.choices,
        "add_form": add_form or MemberAddForm(),
        "invite_form": invite_form or InvitationForm(auto_id="invite_%s"),
        "error": error,
        "new_link": new_link,
    }
    response = render_page(request, "benchmark/people/members.html", context)
    response.status_code = status
    return response


def _submit(form: forms.Form, action: Any) -> tuple[Any, int, str]:
    """form_submit, plus the form's errors as one message; a refusal by role is a 403 page."""
    result, status = form_submit(form, action)
    if status == 403:
        raise PermissionDenied(" ".join(str(e) for e in form.non_field_errors()))
    errors = " ".join(
        f"{'' if name == '__all__' else name + ': '}{' '.join(str(e) for e in errs)}"
        for name, errs in form.errors.items()
    )
    return result, status, errors


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def members(request: HttpRequest, project_id: int) -> HttpResponse:
    """The project's members with their roles, invitation links and recorded changes; a POST
    adds an existing user."""
    project = selectors.project_for_members(user=request.user, pk=project_id)
    if request.method != "POST":
        return _members_page(request, project)
    form = MemberAddForm(request.POST)
    membership, status, error = _submit(
        form,
        lambda data: services.member_add(project=project, actor=request_user(request), **data),
    )
    if membership is None:
        return _members_page(request, project, status=status, add_form=form)
    messages.success(request, f"{membership.user.get_username()} joined as {membership.role}.")
    return redirect("benchmark:members", project_id=project.pk)


@login_required
@require_POST
def member_role(request: HttpRequest, project_id: int, membership_id: int) -> HttpResponse:
    project = selectors.project_for_members(user=request.user, pk=project_id)
    membership, status, error = _submit(
        RoleForm(request.POST),
        lambda data: services.member_role_set(
            project=project,
            actor=request_user(request),
            membership_id=membership_id,
            role=data["role"],
        ),
    )
    if membership is None:
        return _members_page(request, project, status=status, error=error)
    messages.success(request, f"{membership.user.get_username()} is {membership.role} now.")
    return redirect("benchmark:members", project_id=project.pk)


@login_required
@require_POST
def member_remove(request: HttpRequest, project_id: int, membership_id: int) -> HttpResponse:
    project = selectors.project_for_members(user=request.user, pk=project_id)
    removed, status, error = _submit(
        forms.Form(request.POST),
        lambda _: services.member_remove(
            project=project, actor=request_user(request), membership_id=membership_id
        ),
    )
    if removed is None:
        return _members_page(request, project, status=status, error=error)
    messages.success(request, f"{removed.user.get_username()} is no longer a member.")
    return redirect("benchmark:members", project_id=project.pk)


# --------------------------------------------------------------------------- invitations


@login_required
@require_POST
def invitation_create(request: HttpRequest, project_id: int) -> HttpResponse:
    """A new invitation link, shown once on the members page (only its hash is kept)."""
    project = selectors.project_for_members(user=request.user, pk=project_id)
    form = InvitationForm(request.POST, auto_id="invite_%s")
    made, status, error = _submit(
        form,
        lambda data: services.invitation_create(
            project=project, actor=request_user(request), **data
        ),
    )
    if made is None:
        return _members_page(request, project, status=status, invite_form=form)
    invitation, token = made
    link = request.build_absolute_uri(reverse("benchmark:invitation_open", args=[token]))
    return _members_page(request, project, new_link=link)


@login_required
@require_POST
def invitation_revoke(request: HttpRequest, project_id: int, invitation_id: int) -> HttpResponse:
    project = selectors.project_for_members(user=request.user, pk=project_id)
    invitation, status, error = _submit(
        forms.Form(request.POST),
        lambda _: services.invitation_revoke(
            project=project, actor=request_user(request), invitation_id=invitation_id
        ),
    )
    if invitation is None:
        return _members_page(request, project, status=status, error=error)
    messages.success(request, "Invitation revoked: its link no longer works.")
    return redirect("benchmark:members", project_id=project.pk)


@require_http_methods(["GET", "POST"])
def invitation_open(request: HttpRequest, token: str) -> HttpResponse:
    """The page an invitation link opens: a logged-in user joins; a visitor creates an
    account and joins. Used, expired or revoked links say so."""
    invitation = selectors.invitation_by_token(token=token)
    if invitation is None:
        raise Http404("This invitation link is not valid. Check that you copied all of it.")
    context: dict[str, Any] = {"invitation": invitation}
    if invitation.state != "open":
        context["refusal"] = services.INVITATION_REFUSALS[invitation.state]
        return render(request, "benchmark/people/invitation.html", context, status=410)
    form = None if request.user.is_authenticated else SignupForm(request.POST or None)
    context["form"] = form
    if request.method != "POST":
        return render(request, "benchmark/people/invitation.html", context)
    if form is None:
        done, status, error = _submit(
            forms.Form(request.POST),
            lambda _: services.invitation_accept(token=token, user=request_user(request)),
        )
        user = request.user if done else None
    else:
        user, status, error = _submit(
            form,
            lambda data: services.invitation_signup(
                token=token, username=data["username"], password=data["password"]
            ),
        )
        if user is not None:
            login(request, user, backend=LOGIN_BACKEND)
    if user is None:
        context["error"] = error if form is None else ""  # (else the form shows it)
        return render(request, "benchmark/people/invitation.html", context, status=status)
    messages.success(request, f"Welcome to {invitation.project.name}, as {invitation.role}.")
    return redirect("benchmark:project_detail", project_id=invitation.project_id)


# --------------------------------------------------------------------------- people (staff)


def _people_page(
    request: HttpRequest,
    *,
    status: int = 200,
    form: UserCreateForm | None = None,
    error: str = "",
    link: str = "",
    link_user: User | None = None,
) -> HttpResponse:
    context = {
        "users": selectors.user_list(user=request.user),
        "events": selectors.event_list(user=request.user),
        "form": form or UserCreateForm(),
        "error": error,
        "link": link,
        "link_user": link_user,
        "link_days": max(1, round(settings.PASSWORD_RESET_TIMEOUT / 86400)),
    }
    return render(request, "benchmark/people/people.html", context, status=status)


def _password_link(request: HttpRequest, user: User) -> str:
    uidb64, token = services.password_link_make(actor=request_user(request), user=user)
    path = reverse("benchmark:password_link_open", args=[uidb64, token])
    return request.build_absolute_uri(path)


def _staff(request: HttpRequest) -> None:
    if not permissions.is_staff(request.user):
        raise PermissionDenied("Only staff manage user accounts.")


@login_required
@require_http_methods(["GET", "POST"])
def people(request: HttpRequest) -> HttpResponse:
    """Every account (staff): create one, make a password link, deactivate or reactivate;
    and every recorded change."""
    _staff(request)
    if request.method != "POST":
        return _people_page(request)
    form = UserCreateForm(request.POST)
    user, status, error = _submit(
        form, lambda data: services.user_create(actor=request_user(request), **data)
    )
    if user is None:
        return _people_page(request, status=status, form=form)
    if form.cleaned_data["password"]:
        messages.success(request, f"Account {user.get_username()} created.")
        return redirect("benchmark:people")
    link = _password_link(request, user)
    return _people_page(request, link=link, link_user=user)


@login_required
@require_POST
def user_password_link(request: HttpRequest, user_id: int) -> HttpResponse:
    _staff(request)
    user = selectors.user_get(user=request.user, pk=user_id)
    try:
        link = _password_link(request, user)
    except DomainError as exc:
        return _people_page(request, status=exc.status_code, error=exc.message)
    return _people_page(request, link=link, link_user=user)


@login_required
@require_POST
def user_active(request: HttpRequest, user_id: int) -> HttpResponse:
    """``active=1`` reactivates, anything else deactivates."""
    _staff(request)
    user = selectors.user_get(user=request.user, pk=user_id)
    active = request.POST.get("active") == "1"
    try:
        services.user_set_active(actor=request_user(request), user=user, active=active)
    except DomainError as exc:
        return _people_page(request, status=exc.status_code, error=exc.message)
    state = "reactivated" if active else "deactivated"
    messages.success(request, f"{user.get_username()} {state}.")
    return redirect("benchmark:people")


@require_http_methods(["GET", "POST"])
def password_link_open(request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
    """The page a password link opens: set a new password, then log in. Every link that is
    not valid answers the same page (410), naming nobody whatever the id in it, and counts
    against the visitor's address like a failed login (benchmark.login_throttle)."""
    if login_throttle.password_link_refused(request):
        return login_throttle.lockout_response(
            request, credentials=login_throttle.PASSWORD_LINK_CREDENTIALS
        )
    user = selectors.password_link_user(uidb64=uidb64, token=token)
    if user is None:
        login_throttle.password_link_failed(request)
        refused = {"refusal": services.PASSWORD_LINK_REFUSAL}
        return render(request, PASSWORD_LINK_TEMPLATE, refused, status=410)
    form = NewPasswordForm(request.POST or None)
    context: dict[str, Any] = {"link_user": user, "form": form}
    if request.method != "POST":
        return render(request, PASSWORD_LINK_TEMPLATE, context)
    done, status, _ = _submit(
        form,
        lambda data: services.password_link_use(user=user, token=token, password=data["password"]),
    )
    if done is None:
        return render(request, PASSWORD_LINK_TEMPLATE, context, status=status)
    messages.success(request, "Password set. Log in with it.")
    return redirect("login")
