"""Writes to projects and their members, and to an item's status."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from django.db import transaction
from django.db.models import QuerySet

from benchmark import permissions
from benchmark.builtin import taxonomies_ensure, toolsets_ensure
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.kinds import KINDS, kind_named
from benchmark.llm import services as llm_services
from benchmark.llm.client import CACHE_MODES, ModelNotConfigured
from benchmark.models import (
    AuditAction,
    Item,
    ItemStatus,
    ItemStatusChange,
    Membership,
    Project,
    Role,
    Taxonomy,
    Toolset,
)
from benchmark.people.services import audit_record
from benchmark.permissions import can
from benchmark.selectors import taxonomies_usable, toolsets_usable
from benchmark.toolsets.services import taxonomy_copy, toolset_copy
from benchmark.typing import User


def _builtin(rows: dict[str, Any], name: str | None, what: str, benchmark: str) -> Any:
    """The built-in toolset or taxonomy ``name`` a benchmark's projects start from."""
    if name is None or name not in rows:
        raise ValidationFailed(f"{what}: {benchmark} has no built-in {what}; choose one")
    return rows[name]


def _new_project_checked(*, user: User | None, name: str, data_format: str) -> str:
    """The new project's name, stripped; Forbidden or ValidationFailed naming the field."""
    if user is not None and not permissions.can_create_project(user=user):
        raise Forbidden("only staff and project admins create projects")
    name = (name or "").strip()
    if not name:
        raise ValidationFailed("name: the project needs a name")
    if len(name) > 200:
        raise ValidationFailed("name: at most 200 characters")
    names = [kind.name for kind in KINDS]
    if data_format not in names:
        raise ValidationFailed(f"benchmark: choose one of {', '.join(names)}, not {data_format!r}")
    return name


def _starting_point(
    *,
    user: User | None,
    row: Any,
    usable: Callable[..., QuerySet[Any]],
    copy: bool,
    copier: Callable[[Any], Any],
    what: str,
) -> Any:
    """The toolset (or taxonomy) a new project starts from: ``row`` itself when built in and
    no copy is asked for, else a copy; ``row`` must be one ``user`` may use."""
    if user is not None and not usable(user=user).filter(pk=row.pk).exists():
        raise ValidationFailed(f"{what}: not one you may use")
    return copier(row) if copy or not row.builtin else row


def project_create(
    *,
    user: User | None,
    name: str,
    data_format: str,
    toolset: Toolset | None = None,
    taxonomy: Taxonomy | None = None,
    copy_toolset: bool = False,
    copy_taxonomy: bool = False,
    description: str = "",
    guidelines: str = "",
    admin: User | None = None,
) -> Project:
    """A new project for the benchmark ``data_format`` (which sets its kind and tag syntax).

    ``user`` creates it (staff, or an admin of some project; None for a management command)
    and becomes its admin unless ``admin`` names someone else. ``toolset``/``taxonomy``
    default to the benchmark's built-in ones; a built-in one is used as it is (the toolset is
    copied on its first edit) unless ``copy_*`` asks for a copy now; another project's is
    always copied, so editing one project never changes another."""
    name = _new_project_checked(user=user, name=name, data_format=data_format)
    admin = admin or user
    if admin is not None and not admin.is_active:
        raise ValidationFailed(f"admin: {admin.get_username()!r} is deactivated")
    benchmark = kind_named(data_format)
    kind, tag_syntax = benchmark.project_kind, benchmark.tag_syntax
    with transaction.atomic():
        if Project.objects.filter(name__iexact=name).exists():
            raise ValidationFailed(f"name: a project named {name!r} exists already")
        toolset = _starting_point(
            user=user,
            row=toolset or _builtin(toolsets_ensure(), benchmark.toolset, "toolset", data_format),
            usable=toolsets_usable,
            copy=copy_toolset,
            copier=lambda row: toolset_copy(toolset=row, name=f"{row.name} · {name}"),
            what="toolset",
        )
        taxonomy = _starting_point(
            user=user,
            row=taxonomy
            or _builtin(taxonomies_ensure(), benchmark.taxonomy, "taxonomy", data_format),
            usable=taxonomies_usable,
            copy=copy_taxonomy,
            copier=lambda row: taxonomy_copy(taxonomy=row, name=f"{row.name} · {name}"),
            what="taxonomy",
        )
        project = Project(
            name=name,
            kind=kind,
            tag_syntax=tag_syntax,
            data_format=data_format,
            toolset=toolset,
            taxonomy=taxonomy,
            description=(description or "").strip(),
            guidelines=(guidelines or "").strip(),
        )
        project.full_clean()
        project.save()
        if admin is not None:
            Membership.objects.create(project=project, user=admin, role=Role.ADMIN)
        audit_record(
            actor=user,
            action=AuditAction.PROJECT_CREATED,
            project=project,
            target=name,
            details={
                "benchmark": data_format,
                "toolset": toolset.name,
                "taxonomy": taxonomy.name,
                "admin": admin.get_username() if admin else None,
            },
        )
    return project


def membership_set(*, project: Project, user: User, role: str) -> Membership:
    if role not in Role.values:
        raise ValidationFailed(f"unknown role {role!r}")
    membership, _ = Membership.objects.update_or_create(
        project=project, user=user, defaults={"role": role}
    )
    return membership


def project_update(*, project: Project, user: User, description: str, guidelines: str) -> Project:
    """Change the project's description and guidelines (its admins, and staff); the change
    is recorded with the fields that changed."""
    permissions.require_manage_members(
        user=user, project=project, what="change its description and guidelines"
    )
    new = {"description": (description or "").strip(), "guidelines": (guidelines or "").strip()}
    changed = [name for name, value in new.items() if getattr(project, name) != value]
    if not changed:
        return project
    with transaction.atomic():
        for name in changed:
            setattr(project, name, new[name])
        project.save(update_fields=changed)
        audit_record(
            actor=user,
            action=AuditAction.PROJECT_UPDATED,
            project=project,
            target=project.name,
            details={"fields": changed},
        )
    return project


# --------------------------------------------------------------------------- the model

#: The keys of ``Project.settings["model"]`` the settings page sets, with their labels (the
#: field names in messages). Other keys (params, max_retries, backoff_base) are kept as they are.
MODEL_FIELDS = {
    "base_url": "Base URL",
    "model": "Model name",
    "api_key_env": "API key variable",
    "cache": "Cache mode",
    "concurrency": "Concurrency",
    "rpm": "Requests per minute",
    "timeout": "Timeout",
    "price_per_1k_tokens": "Price per 1k tokens",
    "price_per_m_input": "Price per million input tokens",
    "price_per_m_output": "Price per million output tokens",
}
#: (smallest, largest) for the numbers.
MODEL_LIMITS: dict[str, tuple[float, float]] = {
    "concurrency": (1, 64),
    "rpm": (0, 100_000),
    "timeout": (1, 3600),
    "price_per_1k_tokens": (0, 1000),
    "price_per_m_input": (0, 100_000),
    "price_per_m_output": (0, 100_000),
}


def _model_settings_clean(values: dict[str, Any]) -> dict[str, Any]:
    """The page's model settings, checked (ValidationFailed naming the field), with empty
    values and the default cache mode left out."""
    clean: dict[str, Any] = {}
    base_url = _model_url_clean(str(values.get("base_url") or "").strip())
    if base_url:
        clean["base_url"] = base_url
    model = str(values.get("model") or "").strip()
    if len(model) > 200:
        raise ValidationFailed(f"{MODEL_FIELDS['model']}: at most 200 characters")
    if model:
        clean["model"] = model
    key_env = str(values.get("api_key_env") or "").strip()
    if key_env:
        if key_env not in llm_services.api_key_env_allowed():
            raise ValidationFailed(
                f"{MODEL_FIELDS['api_key_env']}: {key_env} is not an allowed key variable; the "
                "operator lists the allowed ones in MODEL_API_KEY_ENV_ALLOWLIST"
            )
        clean["api_key_env"] = key_env
    cache = str(values.get("cache") or "use")
    if cache not in CACHE_MODES:
        raise ValidationFailed(
            f"{MODEL_FIELDS['cache']}: {cache!r} is not one of {', '.join(CACHE_MODES)}"
        )
    if cache != "use":
        clean["cache"] = cache
    for name in MODEL_LIMITS:
        value = values.get(name)
        if value is not None and value != "":
            clean[name] = _model_number_clean(name, value)
    return clean


def _model_url_clean(base_url: str) -> str:
    parts = urlsplit(base_url)
    if base_url and (
        parts.scheme not in ("http", "https") or not parts.netloc or len(base_url) > 500
    ):
        raise ValidationFailed(
            f"{MODEL_FIELDS['base_url']}: {base_url!r} is not an http:// or https:// address "
            "of an OpenAI-compatible endpoint (e.g. http://127.0.0.1:11434/v1)"
        )
    return base_url


def _model_number_clean(name: str, value: Any) -> int | float:
    """One of the model's numbers (``MODEL_LIMITS``), in range; concurrency and rpm whole."""
    low, high = MODEL_LIMITS[name]
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValidationFailed(f"{MODEL_FIELDS[name]}: {value!r} is not a number") from None
    if not low <= number <= high:
        raise ValidationFailed(f"{MODEL_FIELDS[name]}: must be between {low:g} and {high:g}")
    if name not in ("concurrency", "rpm"):
        return number
    if number != int(number):
        raise ValidationFailed(f"{MODEL_FIELDS[name]}: must be a whole number")
    return int(number)


def project_model_set(*, project: Project, user: User, values: dict[str, Any]) -> Project:
    """Set the model the project drafts with (``Project.settings["model"]``; its admins, and
    staff) from the settings page's fields (``MODEL_FIELDS``; an empty one is the server's
    default), keeping the project's other settings and the model's other keys. A key stored
    in the settings themselves ("api_key") is dropped when the base URL changes, so it never
    goes to another endpoint. The change is recorded with the names of the keys that changed,
    never their values."""
    permissions.require_manage_members(user=user, project=project, what="change its model")
    settings = dict(project.settings or {})
    old = settings.get("model") or {}
    if not isinstance(old, dict):
        old = {}
    new = {k: v for k, v in old.items() if k not in MODEL_FIELDS}
    new.update(_model_settings_clean(values))
    if new.get("base_url") != old.get("base_url"):
        new.pop("api_key", None)
    try:
        llm_services.model_resolve(project=Project(settings={**settings, "model": new}))
    except ModelNotConfigured as exc:
        field = MODEL_FIELDS["api_key_env"] if "api_key_env" in str(exc) else "Model settings"
        raise ValidationFailed(f"{field}: {exc}") from None
    before = {k: v for k, v in old.items() if not (k == "cache" and v == "use")}
    changed = sorted(k for k in {*before, *new} if before.get(k) != new.get(k))
    if not changed:
        return project
    if new:
        settings["model"] = new
    else:
        settings.pop("model", None)
    with transaction.atomic():
        project.settings = settings
        project.save(update_fields=["settings"])
        audit_record(
            actor=user,
            action=AuditAction.MODEL_SETTINGS_CHANGED,
            project=project,
            target=project.name,
            details={"changed": changed},
        )
    return project


# --------------------------------------------------------------------------- item status


def item_status_set(
    *,
    item: Item,
    user: User | None,
    status: str,
    reason: str,
    rule: str = "",
    expect: str | None = None,
) -> ItemStatusChange | None:
    """Set the item's status and record the change (who or which rule, when, from, to, why).

    A person (``user``) needs the ``review`` action (reviewers and admins; annotators propose
    a discard instead, see ``annotation.discarding``). ``user=None`` is an automatic change
    made by ``rule`` (a judgment task's consensus), which callers have already decided on.
    A discard needs a reason, which also becomes the item's ``discard_reason``. ``expect``
    is the status the caller saw: if the item has another one now, ``Conflict`` (409) and
    nothing is written. Setting the status the item already has records nothing (the
    discard reason is updated) and returns None."""
    if status not in ItemStatus.values:
        raise ValidationFailed(
            f"unknown status {status!r}; choose one of {', '.join(ItemStatus.values)}"
        )
    reason = (reason or "").strip()
    rule = (rule or "").strip()[:200]
    if user is None:
        if not rule:
            raise ValidationFailed("an automatic status change must name its rule")
    elif not can(user=user, project=item.project, action="set_status"):
        raise Forbidden(
            "only reviewers and admins change an item's status; an annotator may propose "
            "discarding it"
        )
    if status == ItemStatus.DISCARDED and not reason:
        raise ValidationFailed("say why the item is discarded")
    with transaction.atomic():
        locked = Item.objects.select_for_update().get(pk=item.pk)
        before = locked.status
        if expect is not None and before != expect:
            raise Conflict(
                f"the item is {ItemStatus(before).label.lower()} now, not "
                f"{ItemStatus(expect).label.lower()}; reload the page to see who changed it"
            )
        locked.status = status
        locked.discard_reason = reason if status == ItemStatus.DISCARDED else ""
        locked.save(update_fields=["status", "discard_reason", "updated_at"])
        change = None
        if before != status:
            change = ItemStatusChange(
                item=locked,
                changed_by=user,
                rule="" if user is not None else rule,
                from_status=before,
                to_status=status,
                reason=reason,
            )
            # Its check constraints (by someone or a rule; it changes something; a discard
            # says why) hold by the tests above, and the database enforces them too: not
            # asked again here in more queries (every settled judgment comes through here).
            change.full_clean(exclude=["item", "changed_by"], validate_constraints=False)
            change.save()
    item.status, item.discard_reason = locked.status, locked.discard_reason
    item.updated_at = locked.updated_at
    return change


def status_before_discard(changes: Iterable[ItemStatusChange]) -> str:
    """The status the item had before its latest discard (``changes`` oldest first), or
    draft when no discard was recorded (items discarded before changes were recorded)."""
    before = ItemStatus.DRAFT.value
    for change in changes:
        if change.to_status == ItemStatus.DISCARDED:
            before = change.from_status
    return before


def item_restore(*, item: Item, user: User, reason: str = "") -> ItemStatusChange:
    """Undo a discard: the item goes back to the status it had before, recorded. Reviewers
    and admins only; an item that is not discarded answers 409."""
    if not can(user=user, project=item.project, action="set_status"):
        raise Forbidden("only reviewers and admins restore a discarded item")
    with transaction.atomic():
        locked = Item.objects.select_for_update().select_related("project").get(pk=item.pk)
        if locked.status != ItemStatus.DISCARDED:
            raise Conflict(
                f"the item is {ItemStatus(locked.status).label.lower()}, not discarded; "
                "reload the page"
            )
        target = status_before_discard(
            ItemStatusChange.objects.filter(item=locked).order_by("created_at", "id")
        )
        change = item_status_set(
            item=locked,
            user=user,
            status=target,
            reason=(reason or "").strip() or "discard undone",
            expect=ItemStatus.DISCARDED,
        )
    if change is None:  # cannot happen: the item was discarded and the target is not
        raise Conflict("the item's status did not change; reload the page")
    item.status, item.discard_reason, item.updated_at = (
        locked.status,
        locked.discard_reason,
        locked.updated_at,
    )
    return change


# --------------------------------------------------------------------------- first run


FIRST_RUN_DISMISSED = "first_run_dismissed"


def project_first_run_dismiss(*, project: Project, user: User) -> Project:
    """Put away the project page's first-run checklist (its admins): for everyone, for good."""
    permissions.require(user=user, project=project, action="manage")
    settings = dict(project.settings or {})
    if settings.get(FIRST_RUN_DISMISSED):
        return project
    settings[FIRST_RUN_DISMISSED] = True
    with transaction.atomic():
        project.settings = settings
        project.save(update_fields=["settings"])
    return project
