"""The m&m's plan editor: every saved state of an item's plan is a version.

FOUNDATION STUB: the signature of ``plan_save`` is fixed (model drafting calls it); the body
is completed by the plan editor feature (versions with author and time, revert, 409 on a
stale save, the code form generated from the JSON form, the verifier's findings).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from benchmark.exceptions import Forbidden
from benchmark.models import Item, Plan, PlanSyntax
from benchmark.permissions import can
from benchmark.typing import User


def plan_save(
    *,
    item: Item,
    user: User,
    steps: list[dict[str, Any]],
    key: str = "gt",
    is_alternative: bool = False,
    base_number: int | None = None,
    note: str = "",
) -> Plan:
    """Save ``steps`` (m&m's JSON form: [{"id", "name", "args"}]) as the plan ``key`` of the
    item, made on version ``base_number`` of it (None: a new plan, or no staleness check)."""
    if not can(user=user, project=item.project, action="edit"):
        raise Forbidden("you may not edit this project's plans")
    with transaction.atomic():
        plan, _ = Plan.objects.update_or_create(
            item=item,
            key=key,
            defaults={"steps": steps, "form": PlanSyntax.JSON, "is_alternative": is_alternative},
        )
    return plan
