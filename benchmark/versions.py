"""Every version of human work, one mechanism: an edit adds a version row, nothing is
overwritten, and a save made on a stale version answers 409 with the other person's change.

Items, plans, reference trajectories, answers and judge templates keep their versions in rows
of :class:`VersionRow` (their own table, with what they store and what they are versions of);
their services save through :func:`version_save`, which

1. takes the newest version, which the caller read under the lock of the thing's parent row,
2. refuses with :class:`StaleVersion` when the editor was opened on another version
   (``base_number``; None means "no check": a first save, an import, an automatic change),
3. lets the caller refuse an unchanged save or write the thing itself (``before``),
4. writes the next version row (``create``), and
5. turns the unique-number race (two saves reading the same newest version) into the same
   :class:`StaleVersion`, with the version that won.

The caller says what its 409 tells the user (``stale``), since a plan, an answer and a
template each name what changed differently.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.db.models import Q
from django.utils import timezone

from benchmark.exceptions import Conflict


class Numbered(Protocol):
    """A version: a row with its number."""

    number: int


V = TypeVar("V", bound=Numbered)


class VersionRow(models.Model):
    """The fields every version has: its number (1, 2, ... per thing), who saved it and when,
    their note, and the version the editor was opened on."""

    number = models.PositiveIntegerField()
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    note = models.TextField(blank=True)
    base_number = models.PositiveIntegerField(
        null=True, blank=True, help_text="The version the editor was opened on."
    )

    class Meta:
        abstract = True


def version_constraints(table: str, *scope: str) -> list[models.BaseConstraint]:
    """The constraints of a version table: one number per thing (``scope`` names the fields
    that say which thing), numbers from 1, and a base older than the version made on it."""
    return [
        models.UniqueConstraint(fields=[*scope, "number"], name=f"{table}_unique_number"),
        models.CheckConstraint(condition=Q(number__gte=1), name=f"{table}_number_ge_1"),
        models.CheckConstraint(
            condition=Q(base_number__isnull=True) | Q(base_number__lt=models.F("number")),
            name=f"{table}_base_before_number",
        ),
    ]


class StaleVersion(Conflict):
    """A save made on ``base_number`` while ``current`` is the newest version (409). The
    message says who saved what; ``current`` is shown so the user can redo their change."""

    def __init__(self, message: str, *, current: Any, base_number: int | None = None) -> None:
        super().__init__(message)
        self.current = current
        self.base_number = base_number


def version_save(
    *,
    latest: V | None,
    versions: models.QuerySet[Any],
    base_number: int | None,
    stale: Callable[[V], StaleVersion],
    create: Callable[[int, int | None, Any], V],
    before: Callable[[], Any] | None = None,
    missing: Callable[[], Exception] | None = None,
) -> V:
    """Save the next version of a thing whose newest version is ``latest`` (read by the
    caller under the lock of the thing's parent row; None when it has none yet) and whose
    versions are ``versions``, made on ``base_number`` (None: no check; 0: made when there
    was no version yet, as a judge template opened on its built-in text).

    Refuses with ``stale(latest)`` (409) when ``base_number`` is not ``latest``'s number, and
    with ``missing()`` when a base is given but there is no version at all. Then ``before()``
    (optional) refuses an unchanged save or writes the thing itself, and its result goes to
    ``create(number, base, written)``, which writes version ``number`` made on ``base``.
    When another save took the number in between, the 409 names the version that won."""
    if base_number is not None and base_number != (latest.number if latest is not None else 0):
        if latest is None:
            raise missing() if missing else Conflict("there is no version to edit")
        raise stale(latest)
    try:
        with transaction.atomic():
            written = before() if before is not None else None
            base = latest.number if latest is not None else None
            return create(base + 1 if base is not None else 1, base, written)
    except IntegrityError:
        current = versions.order_by("-number").first()
        if current is None:
            raise Conflict("another save is under way; try again") from None
        raise stale(current) from None
