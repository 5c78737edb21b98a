"""The members page, invitation links and the staff's people page: who may see what, what a
click does, and bounded queries."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from benchmark.models import AuditAction, AuditEvent, Invitation, Membership, Role
from tests.factories import (
    AuditEventFactory,
    InvitationFactory,
    MembershipFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def members_url(project: Any) -> str:
    return reverse("benchmark:members", args=[project.pk])


@pytest.fixture
def staff(db: None) -> Any:
    return UserFactory(username="staffer", is_staff=True)


# --------------------------------------------------------------------------- members page


@pytest.mark.parametrize(
    ("role", "status"),
    [("admin", 200), ("reviewer", 403), ("annotator", 403), ("outsider", 404)],
)
def test_members_page_by_role(
    clients: dict[str, Client], project: Any, role: str, status: int
) -> None:
    assert clients[role].get(members_url(project)).status_code == status


def test_anonymous_goes_to_login_and_staff_see_any_project(
    clients: dict[str, Client], client_for: Any, project: Any, staff: Any
) -> None:
    response = clients["anonymous"].get(members_url(project))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    page = client_for(staff).get(members_url(project))
    assert page.status_code == 200 and "admin-user" in page.content.decode()


def test_members_page_lists_members_invitations_and_events_in_bounded_queries(
    client_for: Any, project: Any, users: dict[str, Any], django_assert_max_num_queries: Any
) -> None:
    for i in range(15):
        MembershipFactory(project=project, user=UserFactory(username=f"m{i}"))
        InvitationFactory(project=project, created_by=users["admin"])
        AuditEventFactory(project=project, actor=users["admin"], target=f"m{i}")
    client = client_for(users["admin"])
    with django_assert_max_num_queries(10):
        page = client.get(members_url(project))
    body = page.content.decode()
    assert "m14" in body and body.count('data-state="open"') == 15
    assert body.count('data-action="member_added"') == 15


def test_members_page_as_an_htmx_fragment(
    client_for: Any, project: Any, users: dict[str, Any]
) -> None:
    project.guidelines = "Be *kind*."
    project.save()
    hx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "main"}
    body = client_for(users["admin"]).get(members_url(project), **hx).content.decode()
    assert "<h1>Members</h1>" in body and "<header" not in body and "<html" not in body
    assert 'hx-swap-oob="true"' in body and "<em>kind</em>" in body


def test_add_change_and_remove_through_the_page(
    client_for: Any, project: Any, users: dict[str, Any]
) -> None:
    client = client_for(users["admin"])
    UserFactory(username="newbie")
    response = client.post(members_url(project), {"username": "newbie", "role": "reviewer"})
    assert response.status_code == 302
    membership = Membership.objects.get(project=project, user__username="newbie")
    assert membership.role == Role.REVIEWER
    assert "newbie joined as reviewer" in client.get(members_url(project)).content.decode()

    url = reverse("benchmark:member_role", args=[project.pk, membership.pk])
    assert client.post(url, {"role": "annotator"}).status_code == 302
    membership.refresh_from_db()
    assert membership.role == Role.ANNOTATOR

    url = reverse("benchmark:member_remove", args=[project.pk, membership.pk])
    assert client.post(url).status_code == 302
    assert not Membership.objects.filter(pk=membership.pk).exists()
    assert AuditEvent.objects.filter(project=project).count() == 3


def test_page_errors_name_the_problem(client_for: Any, project: Any, users: dict[str, Any]) -> None:
    client = client_for(users["admin"])
    response = client.post(members_url(project), {"username": "ghost", "role": "reviewer"})
    assert response.status_code == 400 and "nobody is called" in response.content.decode()
    mine = Membership.objects.get(project=project, user=users["admin"])
    response = client.post(reverse("benchmark:member_remove", args=[project.pk, mine.pk]))
    assert response.status_code == 409
    assert "last admin of" in response.content.decode()
    response = client.post(
        reverse("benchmark:member_role", args=[project.pk, mine.pk]), {"role": "chief"}
    )
    assert (
        response.status_code == 400 and "role: Select a valid choice" in response.content.decode()
    )


def test_another_projects_member_is_not_found(
    client_for: Any, project: Any, other_project: Any, users: dict[str, Any]
) -> None:
    theirs = Membership.objects.get(project=other_project)
    url = reverse("benchmark:member_remove", args=[project.pk, theirs.pk])
    assert client_for(users["admin"]).post(url).status_code == 404
    assert Membership.objects.filter(pk=theirs.pk).exists()


# --------------------------------------------------------------------------- invitations


def _make_link(client: Client, project: Any, role: str = "annotator") -> str:
    response = client.post(
        reverse("benchmark:invitation_create", args=[project.pk]), {"role": role, "days": 7}
    )
    assert response.status_code == 200
    match = re.search(r'id="invitation-link" value="([^"]+)"', response.content.decode())
    assert match, response.content.decode()[:2000]
    return match.group(1)


def test_a_visitor_opens_a_link_signs_up_and_lands_in_the_project(
    client_for: Any, project: Any, users: dict[str, Any]
) -> None:
    link = _make_link(client_for(users["admin"]), project, role="reviewer")
    assert link.startswith("http://testserver/people/invitations/")
    token = link.rstrip("/").rsplit("/", 1)[1]
    assert not Invitation.objects.filter(token_hash__contains=token).exists()
    visitor = Client()
    page = visitor.get(link)
    assert page.status_code == 200 and "Create your account" in page.content.decode()
    response = visitor.post(
        link, {"username": "vera", "password": "a-long-pass-42", "password_again": "nope"}
    )
    assert response.status_code == 400 and "The two passwords differ" in response.content.decode()
    response = visitor.post(
        link,
        {"username": "vera", "password": "a-long-pass-42", "password_again": "a-long-pass-42"},
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("benchmark:project_detail", args=[project.pk])
    assert visitor.get(response["Location"]).status_code == 200  # logged in, a member
    vera = get_user_model().objects.get(username="vera")
    assert Membership.objects.get(user=vera).role == Role.REVIEWER
    again = Client().get(link)
    assert again.status_code == 410 and "used already" in again.content.decode()


def test_a_logged_in_user_accepts(client_for: Any, project: Any, users: dict[str, Any]) -> None:
    InvitationFactory(project=project, role="annotator", token="tok-accept")
    joiner = UserFactory(username="joiner")
    client = client_for(joiner)
    url = reverse("benchmark:invitation_open", args=["tok-accept"])
    assert "Join as annotator" in client.get(url).content.decode()
    assert client.post(url).status_code == 302
    assert Membership.objects.filter(project=project, user=joiner).exists()
    # A member already: the link stays for someone else.
    InvitationFactory(project=project, token="tok-member")
    url = reverse("benchmark:invitation_open", args=["tok-member"])
    response = client_for(users["annotator"]).post(url)
    assert response.status_code == 409 and "member of" in response.content.decode()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"revoked_at": timezone.now()}, "was revoked"),
        ({"expires_at": timezone.now() - timedelta(days=1)}, "has expired"),
    ],
)
def test_closed_and_unknown_links(project: Any, fields: dict[str, Any], message: str) -> None:
    InvitationFactory(project=project, token="tok-closed", **fields)
    response = Client().get(reverse("benchmark:invitation_open", args=["tok-closed"]))
    assert response.status_code == 410 and message in response.content.decode()
    response = Client().post(
        reverse("benchmark:invitation_open", args=["tok-closed"]),
        {"username": "x", "password": "a-long-pass-42", "password_again": "a-long-pass-42"},
    )
    assert response.status_code == 410
    assert not get_user_model().objects.filter(username="x").exists()
    assert Client().get(reverse("benchmark:invitation_open", args=["nope"])).status_code == 404


def test_revoking_from_the_page(client_for: Any, project: Any, users: dict[str, Any]) -> None:
    invitation = InvitationFactory(project=project)
    url = reverse("benchmark:invitation_revoke", args=[project.pk, invitation.pk])
    assert client_for(users["reviewer"]).post(url).status_code == 403
    assert client_for(users["admin"]).post(url).status_code == 302
    invitation.refresh_from_db()
    assert invitation.state == "revoked"


# --------------------------------------------------------------------------- people page


@pytest.mark.parametrize("role", ["admin", "reviewer", "annotator", "outsider"])
def test_people_page_is_for_staff_only(clients: dict[str, Client], role: str) -> None:
    assert clients[role].get(reverse("benchmark:people")).status_code == 403
    assert clients[role].post(reverse("benchmark:people"), {"username": "x"}).status_code == 403


def test_people_page_in_bounded_queries(
    client_for: Any, staff: Any, project: Any, django_assert_max_num_queries: Any
) -> None:
    for i in range(20):
        user = UserFactory(username=f"p{i}")
        MembershipFactory(project=project, user=user)
        AuditEventFactory(project=project, actor=staff, target=f"p{i}")
    client = client_for(staff)
    with django_assert_max_num_queries(6):
        page = client.get(reverse("benchmark:people"))
    body = page.content.decode()
    assert page.status_code == 200 and 'data-username="p19"' in body
    assert body.count('data-action="member_added"') == 20


def test_staff_create_an_account_with_a_password_link_and_it_sets_the_password(
    client_for: Any, staff: Any
) -> None:
    client = client_for(staff)
    response = client.post(reverse("benchmark:people"), {"username": "quinn", "first_name": "Q"})
    assert response.status_code == 200
    match = re.search(r'id="password-link-url" value="([^"]+)"', response.content.decode())
    assert match
    link = match.group(1)
    visitor = Client()
    assert visitor.get(link).status_code == 200
    response = visitor.post(
        link, {"password": "a-long-pass-42", "password_again": "a-long-pass-42"}
    )
    assert response.status_code == 302 and response["Location"] == reverse("login")
    quinn = get_user_model().objects.get(username="quinn")
    assert quinn.check_password("a-long-pass-42")
    used = visitor.get(link)
    assert used.status_code == 410 and "used already" in used.content.decode()
    actions = list(AuditEvent.objects.order_by("id").values_list("action", flat=True))
    assert actions == [
        AuditAction.USER_CREATED,
        AuditAction.RESET_LINK_MADE,
        AuditAction.RESET_LINK_USED,
    ]


def test_staff_make_a_reset_link_and_deactivate(client_for: Any, staff: Any) -> None:
    user = UserFactory(username="rita")
    client = client_for(staff)
    response = client.post(reverse("benchmark:user_password_link", args=[user.pk]))
    assert response.status_code == 200 and "Password link for rita" in response.content.decode()
    response = client.post(reverse("benchmark:user_active", args=[user.pk]), {"active": "0"})
    assert response.status_code == 302
    user.refresh_from_db()
    assert not user.is_active
    assert not Client().login(username="rita", password="pw-for-tests-1")
    client.post(reverse("benchmark:user_active", args=[user.pk]), {"active": "1"})
    user.refresh_from_db()
    assert user.is_active
    response = client.post(reverse("benchmark:user_active", args=[staff.pk]), {"active": "0"})
    assert response.status_code == 403 and "your own account" in response.content.decode()


def test_creating_an_account_reports_bad_input(client_for: Any, staff: Any) -> None:
    UserFactory(username="taken")
    client = client_for(staff)
    response = client.post(reverse("benchmark:people"), {"username": "taken"})
    assert response.status_code == 400 and "username: A user with that username already exists" in (
        response.content.decode()
    )
    response = client.post(reverse("benchmark:people"), {"username": "ok", "password": "1"})
    assert response.status_code == 400 and "password: This password is too short" in (
        response.content.decode()
    )
