"""Writes to API tokens: making one (the key returned once), revoking it, checking a key a
request presents, and counting its uses. Making and revoking are recorded in the audit trail."""

from __future__ import annotations

import hmac
import re
import secrets
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from benchmark import permissions
from benchmark.exceptions import Conflict, DomainError, ValidationFailed
from benchmark.models import ApiToken, ApiTokenUse, AuditAction
from benchmark.people.services import audit_record
from benchmark.typing import User

KEY_START = "bw_"
#: ``bw_``, 8 hex digits (the stored prefix), ``_``, the secret in URL-safe base64.
KEY_SHAPE = re.compile(r"bw_[0-9a-f]{8}_[A-Za-z0-9_-]{20,100}")
MAX_EXPIRY_DAYS = 3650
MAX_NAME = 100
PAGE_HINT = "make a new one on your API tokens page (/api-tokens/)"


class TokenRefused(DomainError):
    """A key that authenticates nobody, with the reason (the API answers it with 401)."""

    status_code = 401


def _new_key() -> tuple[str, str]:
    """``(prefix, key)``: ``bw_`` and 8 hex digits (the prefix, stored), ``_`` and 32 random
    bytes in URL-safe base64 (the secret, never stored)."""
    prefix = KEY_START + secrets.token_hex(4)
    return prefix, f"{prefix}_{secrets.token_urlsafe(32)}"


def _when(moment: datetime) -> str:
    local = timezone.localtime(moment)
    return f"{local:%Y-%m-%d %H:%M} {local.tzname()}"


def _name(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise ValidationFailed("name: say what the token is for, e.g. 'laptop' or 'CI'")
    if len(name) > MAX_NAME:
        raise ValidationFailed(f"name: at most {MAX_NAME} characters")
    if "\x00" in name:
        raise ValidationFailed("name: no NUL characters")
    return name


def _insert(*, user: User, name: str, expires_at: datetime | None) -> tuple[ApiToken, str]:
    """The new row and its key, drawing another key if its prefix is taken (one chance in
    four billion per token there is); ValidationFailed when ``name`` is taken."""
    taken = ValidationFailed(
        f"name: you have an API token called {name!r} already; revoke it or choose another name"
    )
    active = ApiToken.objects.filter(user=user, name=name, revoked_at__isnull=True)
    if active.exists():
        raise taken
    for _ in range(3):
        prefix, key = _new_key()
        try:
            with transaction.atomic():
                token = ApiToken.objects.create(
                    user=user,
                    name=name,
                    prefix=prefix,
                    key_hash=ApiToken.hash_key(key),
                    expires_at=expires_at,
                )
            return token, key
        except IntegrityError:
            if active.exists():  # made at the same moment by another request
                raise taken from None
    raise Conflict("no free token prefix; try again")


def api_token_create(
    *, user: User, actor: User | None, name: str, expires_days: int | None = None
) -> tuple[ApiToken, str]:
    """A new token for ``user``, named ``name`` (unique among their tokens not revoked),
    valid for ``expires_days`` days or until revoked. Returns it and its key, which is not
    kept: show it now. ``actor`` is the user themselves or staff; None is the operator (the
    command line)."""
    if actor is not None and actor.pk != user.pk:
        permissions.require_staff(user=actor)
    name = _name(name)
    if expires_days is not None and not 1 <= expires_days <= MAX_EXPIRY_DAYS:
        raise ValidationFailed(f"expires_days: between 1 and {MAX_EXPIRY_DAYS}, or none")
    if not user.is_active:
        raise ValidationFailed(f"{user.get_username()!r} is deactivated")
    expires_at = timezone.now() + timedelta(days=expires_days) if expires_days else None
    with transaction.atomic():
        token, key = _insert(user=user, name=name, expires_at=expires_at)
        audit_record(
            actor=actor,
            action=AuditAction.API_TOKEN_CREATED,
            target=user.get_username(),
            details={
                "name": name,
                "prefix": token.prefix,
                "expires_at": expires_at.isoformat() if expires_at else None,
            },
        )
    return token, key


def api_token_revoke(*, token: ApiToken, actor: User | None) -> ApiToken:
    """Revoke ``token`` (its owner, staff, or the operator with ``actor=None``): it
    authenticates nothing from now on, and its name is free again."""
    if actor is not None and actor.pk != token.user_id:
        permissions.require_staff(user=actor)
    with transaction.atomic():
        locked = ApiToken.objects.select_for_update().select_related("user").get(pk=token.pk)
        if locked.revoked_at:
            raise Conflict(f"the API token {locked.name!r} is revoked already")
        locked.revoked_at = timezone.now()
        locked.save(update_fields=["revoked_at"])
        audit_record(
            actor=actor,
            action=AuditAction.API_TOKEN_REVOKED,
            target=locked.user.get_username(),
            details={"name": locked.name, "prefix": locked.prefix},
        )
    return locked


def api_token_check(*, key: str) -> ApiToken:
    """The active token ``key`` is the key of, with its user; TokenRefused saying why not
    (unknown, revoked, expired, account deactivated). The hash is compared in constant
    time."""
    unknown = TokenRefused(
        f"This API token is not known: check that you copied all of it, or {PAGE_HINT}."
    )
    if not KEY_SHAPE.fullmatch(key):  # nothing else reaches the database
        raise unknown
    token = ApiToken.objects.select_related("user").filter(prefix=key[:11]).first()
    if token is None or not hmac.compare_digest(token.key_hash, ApiToken.hash_key(key)):
        raise unknown
    label = f"API token ({token.prefix}…, {token.name!r})"
    if token.revoked_at:
        raise TokenRefused(f"This {label} was revoked on {_when(token.revoked_at)}; {PAGE_HINT}.")
    if token.expires_at and token.expires_at <= timezone.now():
        raise TokenRefused(f"This {label} expired on {_when(token.expires_at)}; {PAGE_HINT}.")
    if not token.user.is_active:
        raise TokenRefused(f"The account of this {label} is deactivated.")
    return token


def api_token_use_record(*, token: ApiToken, address: str | None) -> None:
    """Count one request authenticated by ``token`` from ``address``: one UPDATE of the
    minute's counter; on a minute's first request from an address, its row is made and the
    token's ``last_used_at`` set (so that is at most once a minute per address)."""
    now = timezone.now()
    minute = now.replace(second=0, microsecond=0)
    address = (address or "")[:45]
    uses = ApiTokenUse.objects.filter(token=token, minute=minute, address=address)
    if uses.update(requests=F("requests") + 1):
        return
    try:
        with transaction.atomic():
            ApiTokenUse.objects.create(token=token, minute=minute, address=address, requests=1)
    except IntegrityError:  # another request of this minute made the row first
        uses.update(requests=F("requests") + 1)
        return
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
