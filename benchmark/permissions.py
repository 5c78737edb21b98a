"""Who may do what in a project: the one permission rule every service that writes applies.

Two parts, checked together by :func:`require`:

* the **role table** (:data:`ACTIONS`): which project roles may take each action;
* **state rules**: whether the item's state lets this user take the action on it now (a blind
  verifier may not change the answer of an item they verify). ``benchmark`` may not import
  ``annotation``, so rules are registered (:func:`register_state_rule`, from an app's
  ``ready()``); each is ``rule(user=, item=, action=)`` answering the reason it refuses, or
  None. They run only when the caller names the item (``require(..., item=item)``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils.module_loading import import_string

from benchmark.exceptions import Forbidden
from benchmark.models import Item, Membership, Project, Role
from benchmark.typing import AnyUser

EVERYONE = {Role.ADMIN, Role.REVIEWER, Role.ANNOTATOR}
REVIEWERS = {Role.ADMIN, Role.REVIEWER}

# What each role may do; a role listed may do the action. Services and selectors name the
# action they guard, templates test it in ``actions``, the route x role matrix test reads its
# expected answers from here: changing who may do something is one line.
ACTIONS: dict[str, set[str]] = {
    "view": set(EVERYONE),
    # Change an item's content: its answer, reference trajectory, drafts, images.
    "edit": set(EVERYONE),
    # Ask the project's model (a model-call job).
    "ask_model": set(EVERYONE),
    # Take items from a judgment queue and judge them.
    "judge": set(EVERYONE),
    # Change an item's status (verify, discard, restore), alone or in bulk.
    "set_status": set(REVIEWERS),
    # Settle disagreements: disputes, joint reviews, audits, discard proposals; see every
    # rater's judgments of a task.
    "adjudicate": set(REVIEWERS),
    # Agreement studies and human evaluations: create them, read their figures and exports,
    # the team's page.
    "manage_studies": set(REVIEWERS),
    # Run model judges and oracle tests, and set the judges' weights and templates in use.
    "run_judges": set(REVIEWERS),
    # Evaluate a model under test on the project's items (evaluation runs, the leaderboard's
    # runs and their results).
    "evaluate": set(REVIEWERS),
    # Score model answers, plans and agent runs; render answers; label runs.
    "score": set(REVIEWERS),
    # Make, verify, compare and download releases; the tool-balanced subset.
    "release": set(REVIEWERS),
    # Watch and cancel other people's jobs in the project.
    "watch_jobs": set(REVIEWERS),
    "import": {Role.ADMIN},
    "export": set(REVIEWERS),
    "manage": {Role.ADMIN},
}


def roles_for(action: str) -> frozenset[str]:
    """The project roles that may take ``action`` (for selectors that filter memberships in
    SQL rather than asking :func:`can` per project)."""
    return frozenset(ACTIONS[action])


StateRule = Callable[..., "str | None"]
"""``rule(user=, item=, action=)``: why the item's state refuses the action, or None."""

_STATE_RULES: list[StateRule | str] = []


def register_state_rule(rule: StateRule | str) -> None:
    """Add a rule (once), or its dotted path: imported on first use, so the app registering
    it need not import the rule's module when it starts."""
    if rule not in _STATE_RULES:
        _STATE_RULES.append(rule)


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


def role_known(*, user: AnyUser, project: Project, role: str | None) -> None:
    """Remember ``user``'s role in ``project`` (on this project object, as :func:`role_in`
    does) when a selector read it anyway, joined with the row it looked up; the role checks
    that follow on the same object need no query of their own."""
    cached = getattr(project, "_role_cache", {})
    cached[user.pk] = role
    project._role_cache = cached  # type: ignore[attr-defined]


def can(*, user: AnyUser, project: Project, action: str) -> bool:
    role = role_in(user=user, project=project)
    return role is not None and role in ACTIONS[action]


def allowed_actions(*, user: AnyUser, project: Project) -> set[str]:
    """Every action the user may take in the project, for showing or hiding links."""
    role = role_in(user=user, project=project)
    return {action for action, roles in ACTIONS.items() if role in roles}


def state_refusal(*, user: AnyUser, item: Item, action: str) -> str | None:
    """Why the item's state does not let ``user`` take ``action`` on it now, or None."""
    for rule in _STATE_RULES:
        if isinstance(rule, str):
            rule = import_string(rule)
        reason = rule(user=user, item=item, action=action)
        if reason:
            return reason
    return None


def require(*, user: AnyUser, project: Project, action: str, item: Any = None) -> None:
    """Raise benchmark.exceptions.Forbidden (403) unless the user's role allows the action
    and, when ``item`` is given, the item's state rules do too; the message says why."""
    if not can(user=user, project=project, action=action):
        raise Forbidden(f"your role in {project.name!r} does not allow {action}")
    if item is not None:
        reason = state_refusal(user=user, item=item, action=action)
        if reason:
            raise Forbidden(reason)


# --------------------------------------------------------------------------- people
#
# Staff (Django's ``is_staff``) manage user accounts and may manage any project's members;
# creating a project is open to staff and to whoever is an admin of some project.


def is_staff(user: AnyUser) -> bool:
    return bool(user.is_authenticated and user.is_active and user.is_staff)


def can_create_project(*, user: AnyUser) -> bool:
    if not user.is_authenticated:
        return False
    if is_staff(user):
        return True
    return Membership.objects.filter(user=user.pk, role=Role.ADMIN).exists()


def can_manage_members(*, user: AnyUser, project: Project) -> bool:
    """Project admins, and staff for every project."""
    return is_staff(user) or can(user=user, project=project, action="manage")


def require_manage_members(
    *, user: AnyUser, project: Project, what: str = "manage its members"
) -> None:
    if not can_manage_members(user=user, project=project):
        raise Forbidden(f"only admins of {project.name!r} (and staff) {what}")


def require_staff(*, user: AnyUser) -> None:
    if not is_staff(user):
        raise Forbidden("only staff manage user accounts")
