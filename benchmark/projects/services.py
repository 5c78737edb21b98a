"""Writes to projects and their members."""

from __future__ import annotations

from benchmark.exceptions import (
    ValidationFailed,
)
from benchmark.models import (
    Membership,
    Project,
    Role,
)
from benchmark.typing import User


def membership_set(*, project: Project, user: User, role: str) -> Membership:
    if role not in Role.values:
        raise ValidationFailed(f"unknown role {role!r}")
    membership, _ = Membership.objects.update_or_create(
        project=project, user=user, defaults={"role": role}
    )
    return membership
