"""Members, invitation links and accounts: the services and the audit rows they write."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.utils import timezone

from benchmark.exceptions import Conflict, Forbidden, NotFound, ValidationFailed
from benchmark.models import AuditAction, AuditEvent, Invitation, Membership, Role
from benchmark.people import services
from tests.factories import InvitationFactory, UserFactory

pytestmark = pytest.mark.django_db


def events(action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action))


# --------------------------------------------------------------------------- members


def test_admin_adds_changes_and_removes_a_member(project: Any, users: dict[str, Any]) -> None:
    admin = users["admin"]
    newcomer = UserFactory(username="newcomer")
    membership = services.member_add(
        project=project, actor=admin, username="newcomer", role=Role.REVIEWER
    )
    assert membership.user == newcomer and membership.role == Role.REVIEWER
    (added,) = events(AuditAction.MEMBER_ADDED)
    assert (added.actor, added.project, added.target) == (admin, project, "newcomer")
    assert added.details == {"role": "reviewer"}

    services.member_role_set(
        project=project, actor=admin, membership_id=membership.pk, role=Role.ANNOTATOR
    )
    membership.refresh_from_db()
    assert membership.role == Role.ANNOTATOR
    (changed,) = events(AuditAction.MEMBER_ROLE_CHANGED)
    assert changed.details == {"from": "reviewer", "to": "annotator"}

    services.member_remove(project=project, actor=admin, membership_id=membership.pk)
    assert not Membership.objects.filter(pk=membership.pk).exists()
    (removed,) = events(AuditAction.MEMBER_REMOVED)
    assert removed.target == "newcomer"


@pytest.mark.parametrize(
    ("username", "message"),
    [("", "username: say whom"), ("ghost", "nobody is called 'ghost'")],
)
def test_adding_needs_an_existing_user(
    project: Any, users: dict[str, Any], username: str, message: str
) -> None:
    with pytest.raises(ValidationFailed, match=message):
        services.member_add(
            project=project, actor=users["admin"], username=username, role="annotator"
        )
    assert not AuditEvent.objects.exists()


def test_adding_a_member_twice_or_with_a_bad_role(project: Any, users: dict[str, Any]) -> None:
    with pytest.raises(Conflict, match="member already"):
        services.member_add(
            project=project, actor=users["admin"], username="reviewer-user", role="annotator"
        )
    UserFactory(username="carol")
    with pytest.raises(ValidationFailed, match="role: choose one of"):
        services.member_add(project=project, actor=users["admin"], username="carol", role="boss")


@pytest.mark.parametrize("role", ["reviewer", "annotator", "outsider"])
def test_only_admins_and_staff_manage_members(
    project: Any, users: dict[str, Any], role: str
) -> None:
    UserFactory(username="carol")
    with pytest.raises(Forbidden, match="only admins"):
        services.member_add(project=project, actor=users[role], username="carol", role="annotator")
    staff = UserFactory(username="staffer", is_staff=True)
    services.member_add(project=project, actor=staff, username="carol", role="annotator")


def test_the_last_admin_stays(project: Any, users: dict[str, Any]) -> None:
    admin = users["admin"]
    mine = Membership.objects.get(project=project, user=admin)
    with pytest.raises(Conflict, match="last admin"):
        services.member_remove(project=project, actor=admin, membership_id=mine.pk)
    with pytest.raises(Conflict, match="last admin"):
        services.member_role_set(
            project=project, actor=admin, membership_id=mine.pk, role=Role.REVIEWER
        )
    assert Membership.objects.get(pk=mine.pk).role == Role.ADMIN
    # With a second admin, the first may step down.
    other = Membership.objects.get(project=project, user=users["reviewer"])
    services.member_role_set(project=project, actor=admin, membership_id=other.pk, role="admin")
    services.member_remove(project=project, actor=admin, membership_id=mine.pk)
    assert not Membership.objects.filter(pk=mine.pk).exists()


def test_another_projects_membership_is_not_found(
    project: Any, other_project: Any, users: dict[str, Any]
) -> None:
    theirs = Membership.objects.get(project=other_project)
    with pytest.raises(NotFound):
        services.member_remove(project=project, actor=users["admin"], membership_id=theirs.pk)


# --------------------------------------------------------------------------- invitations


def test_an_invitation_is_stored_as_a_hash_and_used_once(
    project: Any, users: dict[str, Any]
) -> None:
    invitation, token = services.invitation_create(
        project=project, actor=users["admin"], role=Role.REVIEWER
    )
    assert token not in invitation.token_hash and len(invitation.token_hash) == 64
    assert timedelta(days=6) < invitation.expires_at - timezone.now() <= timedelta(days=7)
    joiner = UserFactory(username="joiner")
    membership = services.invitation_accept(token=token, user=joiner)
    assert (membership.project, membership.role) == (project, Role.REVIEWER)
    invitation.refresh_from_db()
    assert invitation.state == "used" and invitation.used_by == joiner
    with pytest.raises(Conflict, match="used already"):
        services.invitation_accept(token=token, user=UserFactory())
    (used,) = events(AuditAction.INVITATION_USED)
    assert used.actor == joiner and used.details["new_account"] is False
    assert len(events(AuditAction.INVITATION_CREATED)) == 1


def test_a_visitor_signs_up_through_an_invitation(project: Any) -> None:
    invitation = InvitationFactory(project=project, role=Role.ANNOTATOR, token="tok-1")
    user = services.invitation_signup(token="tok-1", username="dana", password="a-long-pass-42")
    assert user.check_password("a-long-pass-42")
    assert Membership.objects.get(user=user).project == project
    invitation.refresh_from_db()
    assert invitation.used_by == user
    assert {e.action for e in AuditEvent.objects.filter(actor=user)} == {
        AuditAction.USER_CREATED,
        AuditAction.INVITATION_USED,
    }


@pytest.mark.parametrize(
    ("username", "password", "message"),
    [
        ("dana", "short", "password: This password is too short"),
        ("dana", "password", "password: .*too common"),
        ("bad name!", "a-long-pass-42", "username: "),
        ("", "a-long-pass-42", "username: "),
    ],
)
def test_signup_validates_and_leaves_the_link_open(
    project: Any, username: str, password: str, message: str
) -> None:
    invitation = InvitationFactory(project=project, token="tok-2")
    with pytest.raises(ValidationFailed, match=message):
        services.invitation_signup(token="tok-2", username=username, password=password)
    invitation.refresh_from_db()
    assert invitation.state == "open"
    assert not get_user_model().objects.filter(username=username).exists()


def test_signup_with_a_taken_username(project: Any) -> None:
    UserFactory(username="dana")
    InvitationFactory(project=project, token="tok-3")
    with pytest.raises(ValidationFailed, match="username: .*taken"):
        services.invitation_signup(token="tok-3", username="Dana", password="a-long-pass-42")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"used_at": timezone.now()}, "used already"),
        ({"revoked_at": timezone.now()}, "revoked"),
        ({"expires_at": timezone.now() - timedelta(minutes=1)}, "expired"),
    ],
)
def test_closed_links_say_why(project: Any, fields: dict[str, Any], message: str) -> None:
    InvitationFactory(project=project, token="tok-4", **fields)
    with pytest.raises(Conflict, match=message):
        services.invitation_accept(token="tok-4", user=UserFactory())
    with pytest.raises(NotFound, match="not valid"):
        services.invitation_accept(token="tok-nope", user=UserFactory())


def test_a_member_does_not_use_up_a_link(project: Any, users: dict[str, Any]) -> None:
    invitation = InvitationFactory(project=project, token="tok-5")
    with pytest.raises(Conflict, match="member of .* already"):
        services.invitation_accept(token="tok-5", user=users["annotator"])
    invitation.refresh_from_db()
    assert invitation.state == "open"


def test_admins_revoke_open_links(project: Any, users: dict[str, Any]) -> None:
    invitation = InvitationFactory(project=project)
    with pytest.raises(Forbidden):
        services.invitation_revoke(
            project=project, actor=users["reviewer"], invitation_id=invitation.pk
        )
    services.invitation_revoke(project=project, actor=users["admin"], invitation_id=invitation.pk)
    invitation.refresh_from_db()
    assert invitation.state == "revoked"
    assert len(events(AuditAction.INVITATION_REVOKED)) == 1
    with pytest.raises(Conflict, match="revoked already"):
        services.invitation_revoke(
            project=project, actor=users["admin"], invitation_id=invitation.pk
        )


def test_invitation_days_are_bounded(project: Any, users: dict[str, Any]) -> None:
    with pytest.raises(ValidationFailed, match="days: between 1 and 90"):
        services.invitation_create(project=project, actor=users["admin"], role="annotator", days=0)
    assert not Invitation.objects.exists()


# --------------------------------------------------------------------------- accounts


@pytest.fixture
def staff(db: None) -> Any:
    return UserFactory(username="staffer", is_staff=True)


def test_staff_create_accounts_with_or_without_a_password(staff: Any) -> None:
    with_pw = services.user_create(
        actor=staff, username="erin", password="a-long-pass-42", first_name="Erin"
    )
    assert with_pw.check_password("a-long-pass-42") and with_pw.first_name == "Erin"
    without = services.user_create(actor=staff, username="frank")
    assert not without.has_usable_password()
    created = events(AuditAction.USER_CREATED)
    assert {e.target for e in created} == {"erin", "frank"}
    assert all(e.actor == staff for e in created)


def test_non_staff_may_not_manage_accounts(users: dict[str, Any]) -> None:
    with pytest.raises(Forbidden, match="only staff"):
        services.user_create(actor=users["admin"], username="erin")
    with pytest.raises(Forbidden, match="only staff"):
        services.password_link_make(actor=users["admin"], user=users["annotator"])
    with pytest.raises(Forbidden, match="only staff"):
        services.user_set_active(actor=users["admin"], user=users["annotator"], active=False)


def test_deactivate_and_reactivate(staff: Any) -> None:
    user = UserFactory(username="gina")
    services.user_set_active(actor=staff, user=user, active=False)
    user.refresh_from_db()
    assert not user.is_active
    services.user_set_active(actor=staff, user=user, active=True)
    assert [e.action for e in AuditEvent.objects.order_by("id")] == [
        AuditAction.USER_DEACTIVATED,
        AuditAction.USER_REACTIVATED,
    ]
    with pytest.raises(Forbidden, match="your own account"):
        services.user_set_active(actor=staff, user=staff, active=False)


def test_a_password_link_works_once(staff: Any) -> None:
    user = services.user_create(actor=staff, username="hal")
    _, token = services.password_link_make(actor=staff, user=user)
    with pytest.raises(ValidationFailed, match="password: "):
        services.password_link_use(user=user, token=token, password="123")
    services.password_link_use(user=user, token=token, password="a-long-pass-42")
    user.refresh_from_db()
    assert user.check_password("a-long-pass-42")
    assert not default_token_generator.check_token(user, token)
    with pytest.raises(Conflict, match="was used already, has expired"):
        services.password_link_use(user=user, token=token, password="another-pass-43")
    assert [e.action for e in AuditEvent.objects.order_by("id")] == [
        AuditAction.USER_CREATED,
        AuditAction.RESET_LINK_MADE,
        AuditAction.RESET_LINK_USED,
    ]


def test_a_password_link_expires(staff: Any, settings: Any) -> None:
    user = UserFactory(username="ida")
    _, token = services.password_link_make(actor=staff, user=user)
    settings.PASSWORD_RESET_TIMEOUT = -1
    with pytest.raises(Conflict, match="expired"):
        services.password_link_use(user=user, token=token, password="a-long-pass-42")
