"""Which object a draft key names, and whether its user may edit it: one check per key scope
(the key's first part), registered by the feature that owns the form (benchmark may not import
annotation or review, so those register their scopes in their AppConfig.ready by dotted path).

A check is called as ``check(user=, parts=)`` with the key's parts after the scope
(``["response", "42"]`` for ``tag-review:response:42``) and raises ``Http404`` or
``benchmark.exceptions.NotFound`` when the object is not there for the user, and
``PermissionDenied`` or ``benchmark.exceptions.Forbidden`` when they may see it but not edit it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.utils.module_loading import import_string

from benchmark.exceptions import NotFound, ValidationFailed

#: A key: a scope, then parts separated by ":", no "/" or white space (it is a URL segment).
KEY = re.compile(r"^(?P<scope>[a-z][a-z-]*)(?::[^\s/:][^\s/]*)?$")
KEY_MAX = 200

_SCOPES: dict[str, str] = {}


def input_draft_scope_register(scope: str, check: str) -> None:
    """Let keys starting ``<scope>:`` name objects checked by the function at ``check``."""
    _SCOPES[scope] = check


def scope_check(*, user: Any, key: str) -> None:
    """Raise unless ``key`` is well formed, its scope is registered and the user may edit the
    object it names."""
    match = KEY.match(key) if len(key) <= KEY_MAX else None
    if match is None:
        raise ValidationFailed(
            f"{key[:60]!r} is not a draft key (a form's name, then the object's parts, "
            f"separated by ':', at most {KEY_MAX} characters)"
        )
    scope = match.group("scope")
    if scope not in _SCOPES:
        raise NotFound(f"No form keeps drafts under {scope!r}.")
    check: Callable[..., None] = import_string(_SCOPES[scope])
    check(user=user, parts=key.split(":")[1:])


def int_part(parts: list[str], index: int) -> int:
    """The ``index``-th part as an id; a missing or non-numeric one is a key naming nothing."""
    try:
        value = parts[index]
    except IndexError:
        raise NotFound("That draft key names no object.") from None
    if not value.isdigit():
        raise NotFound("That draft key names no object.")
    return int(value)


def expect_parts(parts: list[str], *names: str | None) -> None:
    """Check the fixed words of a key (``None`` where an id goes): ``response``, ``None``."""
    if len(parts) < len(names) or any(
        name is not None and parts[i] != name for i, name in enumerate(names)
    ):
        raise NotFound("That draft key names no object.")
