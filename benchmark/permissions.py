"""Who may do what in a project. Roles are per project membership."""

from __future__ import annotations

from benchmark.exceptions import Forbidden
from benchmark.models import Membership, Project, Role
from benchmark.typing import AnyUser

# What each role may do; a role listed may do the action.
ACTIONS: dict[str, set[str]] = {
    "view": {Role.ADMIN, Role.REVIEWER, Role.ANNOTATOR},
    "review": {Role.ADMIN, Role.REVIEWER},
    "import": {Role.ADMIN},
    "export": {Role.ADMIN, Role.REVIEWER},
    "manage": {Role.ADMIN},
}


def role_in(*, user: AnyUser, project: Project) -> str | None:
    if not user.is_authenticated:
        return None
    cached = getattr(project, "_role_cache", {})
    if user.pk in cached:
        return cached[user.pk]
    role = (
        Membership.objects.filter(project=project, user=user.pk)
        .values_list("role", flat=True)
        .first()
    )
    cached[user.pk] = role
    project._role_cache = cached  # type: ignore[attr-defined]
    return role


def can(*, user: AnyUser, project: Project, action: str) -> bool:
    role = role_in(user=user, project=project)
    return role is not None and role in ACTIONS[action]


def allowed_actions(*, user: AnyUser, project: Project) -> set[str]:
    """Every action the user may take in the project, for showing or hiding links."""
    role = role_in(user=user, project=project)
    return {action for action, roles in ACTIONS.items() if role in roles}


def require(*, user: AnyUser, project: Project, action: str) -> None:
    """Raise benchmark.exceptions.Forbidden (403) unless the user may do the action."""
    if not can(user=user, project=project, action=action):
        raise Forbidden(f"your role in {project.name!r} does not allow {action}")
