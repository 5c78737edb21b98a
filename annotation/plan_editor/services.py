"""The m&m's plan editor's writes: every saved state of an item's plan is a version.

A save (:func:`plan_save`) stores the plan's JSON form as given (key order kept) and its code
form generated from it (:func:`benchmark.plans.codegen.plan_to_code`), both on the Plan row
(the export writes ``plan_str`` and ``code_str`` from them) and in a new
:class:`~annotation.plan_editor.models.PlanVersion`. The first save first records the state
before it as version 1 (as imported, without an author). A save names the version it was made
on (``base_number``); when someone saved in between, :class:`~benchmark.versions.StaleVersion` (409) carries
their version and nothing is written. A save that changes nothing is refused ("nothing to
save"). A revert (:func:`plan_revert`) saves an old version's steps again as a new version.

Alternatives (m&m's ``alt_plans_str``) are plans of the item with ``is_alternative`` and their
own key; :func:`plan_alternative_add` starts one from the ground-truth plan,
:func:`plan_alternative_remove` removes it (its versions stay in the history).

The verifier's findings are not a reason to refuse a save (people save work in progress and
fix it later; the findings show in the editor and on the item); a plan that cannot be read as
steps, or that no code form can express, is.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Max

from annotation.plan_editor.models import PlanVersion, steps_text
from benchmark import permissions
from benchmark.exceptions import NotFound, ValidationFailed
from benchmark.models import Item, Origin, Plan, PlanSyntax
from benchmark.plans.codegen import plan_to_code
from benchmark.plans.parse import PlanFormatError, parse_json_plan
from benchmark.typing import User
from benchmark.versions import StaleVersion, version_save

#: The ground-truth plan's key, as m&m's reader and writer name it (``plan_str``).
GOLD_KEY = "gold"
#: Alternatives are keyed ``alt:<i>`` as the reader names them (``alt_plans_str[i]``).
ALT_PREFIX = "alt:"
FIRST_NOTE = "imported"
MAX_STEPS = 100
MAX_NOTE = 500

__all__ = [
    "GOLD_KEY",
    "plan_alternative_add",
    "plan_alternative_remove",
    "plan_revert",
    "plan_save",
]


def _stale(current: PlanVersion, base_number: int | None) -> StaleVersion:
    """Someone saved the plan after the editor was opened; ``current`` is their version."""
    who = current.author.get_username() if current.author else "the import"
    opened = f"version {base_number}" if base_number else "it"
    return StaleVersion(
        f"version {current.number} of this plan was saved by {who} after you opened "
        f"{opened}; nothing of yours was saved. Their version is shown and your plan is "
        "still in the editor: save again to put yours on top of theirs.",
        current=current,
        base_number=base_number,
    )


def canonical_key(key: str) -> str:
    """``"gt"`` (the shared default for "the ground truth") is m&m's ``"gold"``."""
    key = (key or "").strip()
    return GOLD_KEY if key in ("", "gt") else key


def clean_steps(steps: Any) -> tuple[list[dict[str, Any]], str]:
    """The steps and their code form, or :class:`ValidationFailed` naming the step and what
    is wrong: the plan must read as steps ``{"id", "name", "args"}`` and a code form must be
    able to express it."""
    if not isinstance(steps, list):
        raise ValidationFailed(f"steps: a plan is a list of steps, not {type(steps).__name__}")
    if not steps:
        raise ValidationFailed("steps: a plan needs at least one step")
    if len(steps) > MAX_STEPS:
        raise ValidationFailed(f"steps: at most {MAX_STEPS} steps ({len(steps)} given)")
    parsed = parse_json_plan(steps)
    if parsed.findings:
        first = parsed.findings[0]
        where = f"step {first.step + 1}: " if first.step is not None else ""
        raise ValidationFailed(f"steps: {where}{first.message}")
    for n, step in enumerate(steps, start=1):
        if not str(step["name"]).strip():
            raise ValidationFailed(f"steps: step {n}: choose a tool")
    try:
        code = plan_to_code(steps)
    except PlanFormatError as exc:
        raise ValidationFailed(f"steps: {exc}") from None
    return steps, code


def _clean_note(note: str) -> str:
    note = " ".join((note or "").split())
    if len(note) > MAX_NOTE:
        raise ValidationFailed(f"note: at most {MAX_NOTE} characters ({len(note)} given)")
    return note


def _latest(item: Item, key: str, plan: Plan | None) -> PlanVersion | None:
    """The newest version, recording version 1 (the plan as it stood, no author) when the
    plan exists and no save has recorded it yet. Call under the item's row lock."""
    latest = (
        PlanVersion.objects.filter(item=item, key=key)
        .select_related("author")
        .order_by("-number")
        .first()
    )
    if latest is None and plan is not None:
        latest = PlanVersion.objects.create(
            item=item,
            plan=plan,
            key=key,
            number=1,
            steps=steps_text(plan.steps or []),
            code=plan.code,
            note=FIRST_NOTE,
        )
    return latest


def _same(latest: PlanVersion, steps: list[dict[str, Any]], text: str) -> bool:
    """Whether ``steps`` are what ``latest`` holds. Version 1 of an imported plan was read
    from a JSON column, which on PostgreSQL (``jsonb``) does not keep the arguments' order:
    the same values are the same plan there; saved versions compare as written."""
    if latest.author_id is None and latest.number == 1:
        return latest.step_list == steps
    return latest.steps == text


def _require_plan_item(user: User, item: Item) -> None:
    permissions.require(user=user, project=item.project, action="edit", item=item)
    if not item.project.benchmark.plans:
        raise ValidationFailed("this project's items have no plans (not an m&m's project)")


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
    item, made on version ``base_number`` of it (None: a new plan, or no staleness check).

    ``key`` "gt" is the ground-truth plan (m&m's "gold"). Raises :class:`ValidationFailed`
    naming the step for a plan that is not steps or that no code form can express, and
    "nothing to save" for an unchanged plan; :class:`~benchmark.versions.StaleVersion` (409) when ``base_number``
    is not the newest version; ``Forbidden`` for who may not edit the item."""
    _require_plan_item(user, item)
    key = canonical_key(key)
    if len(key) > 255:
        raise ValidationFailed("key: at most 255 characters")
    steps, code = clean_steps(steps)
    note = _clean_note(note)
    text = steps_text(steps)
    with transaction.atomic():
        locked = Item.objects.select_for_update().get(pk=item.pk)
        plan = Plan.objects.filter(item=locked, key=key).first()
        if plan is not None and plan.origin != Origin.GROUND_TRUTH:
            raise ValidationFailed(f"key: {key!r} is a model's prediction, not a plan people edit")
        latest = _latest(locked, key, plan)

        def write() -> Plan:
            if plan is not None and latest is not None and _same(latest, steps, text):
                raise ValidationFailed("nothing to save: the plan is unchanged")
            return _write_plan(locked, plan, key, steps, code, is_alternative)

        version = version_save(
            latest=latest,
            versions=PlanVersion.objects.filter(item=locked, key=key).select_related("author"),
            base_number=base_number,
            stale=lambda current: _stale(current, base_number),
            missing=lambda: NotFound(
                f"this item has no plan {key!r} yet (no version {base_number})"
            ),
            before=write,
            create=lambda number, base, written: PlanVersion.objects.create(
                item=locked,
                plan=written,
                key=key,
                number=number,
                steps=text,
                code=code,
                author=user,
                note=note,
                base_number=base,
            ),
        )
    return version.plan  # type: ignore[return-value]


def _write_plan(
    item: Item,
    plan: Plan | None,
    key: str,
    steps: list[dict[str, Any]],
    code: str,
    is_alternative: bool,
) -> Plan:
    if plan is None:
        position = 0
        if is_alternative:
            top = Plan.objects.filter(item=item).aggregate(n=Max("position"))["n"]
            position = (top if top is not None else 0) + 1
        plan = Plan(
            item=item,
            key=key,
            origin=Origin.GROUND_TRUTH,
            form=PlanSyntax.JSON,
            is_alternative=is_alternative,
            position=position,
        )
    # Both forms are stored; the form stays what the plan was (JSON, or code for a plan
    # that only had a code form).
    if plan.form != PlanSyntax.CODE:
        plan.form = PlanSyntax.JSON
    plan.steps = steps
    plan.code = code
    plan.full_clean(exclude=["item"])
    plan.save()
    return plan


def plan_revert(
    *, plan: Plan, user: User, number: int, base_number: int | None, note: str = ""
) -> Plan:
    """Save version ``number``'s steps again as a new version, made on ``base_number``."""
    _require_plan_item(user, plan.item)
    target = PlanVersion.objects.filter(item=plan.item, key=plan.key, number=number).first()
    if target is None:
        if number == 1:  # before the first save, version 1 is the plan as it stands
            raise ValidationFailed("version 1 is the current plan: nothing to revert")
        raise NotFound(f"this plan has no version {number}")
    return plan_save(
        item=plan.item,
        user=user,
        steps=target.step_list,
        key=plan.key,
        is_alternative=plan.is_alternative,
        base_number=base_number,
        note=note.strip() or f"Reverted to version {number}",
    )


def _next_alternative_key(item: Item) -> str:
    used = set(Plan.objects.filter(item=item).values_list("key", flat=True))
    used |= set(PlanVersion.objects.filter(item=item).values_list("key", flat=True))
    n = 0
    while f"{ALT_PREFIX}{n}" in used:
        n += 1
    return f"{ALT_PREFIX}{n}"


def plan_alternative_add(
    *, item: Item, user: User, steps: list[dict[str, Any]] | None = None, note: str = ""
) -> Plan:
    """A new alternative plan of the item, keyed ``alt:<i>``, starting from ``steps`` (by
    default a copy of the ground-truth plan's steps)."""
    _require_plan_item(user, item)
    if steps is None:
        gold = Plan.objects.filter(item=item, key=GOLD_KEY).first()
        if gold is None or not gold.steps:
            raise ValidationFailed("steps: the item has no ground-truth plan to start from")
        steps = list(gold.steps)
    return plan_save(
        item=item,
        user=user,
        steps=steps,
        key=_next_alternative_key(item),
        is_alternative=True,
        note=note or "New alternative",
    )


def plan_alternative_remove(*, plan: Plan, user: User) -> None:
    """Remove an alternative plan (not the ground truth); its versions stay."""
    _require_plan_item(user, plan.item)
    if not plan.is_alternative:
        raise ValidationFailed(f"key: {plan.key!r} is not an alternative plan")
    with transaction.atomic():
        Plan.objects.filter(pk=plan.pk).delete()
