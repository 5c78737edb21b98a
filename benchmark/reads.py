"""Model instances read for one user who may not see some of their columns.

:mod:`benchmark.visibility` reads such rows with public QuerySet API only: the columns a user
may not see are *deferred*, a flag annotation says whether the row is hidden from the user
(``answer_hidden`` on items, ``identity_hidden`` on responses), and what the user may see of
each such column is selected by the database as an annotation named ``shown_<column>``
(``CASE WHEN hidden THEN <masked> ELSE <column> END``), so a hidden value never leaves the
database. This mixin gives those models the two behaviours that make such a row a *read*:

* a deferred guarded column is loaded through Django's documented deferred-loading hook,
  :meth:`~django.db.models.Model.refresh_from_db`: from its ``shown_<column>`` annotation
  when the row has one (no query), as the empty value when the row is hidden (or its flag is
  not known yet, ``None``: it fails closed), and from the database otherwise;
  A full ``refresh_from_db()`` of such a row reloads every other column;
* a row whose flag is not ``False`` cannot be saved (:class:`WithheldRead`): it holds masked
  or empty values, and saving them would overwrite what the user may not see.

A row without the flag annotation (read by ``Model.objects``, e.g. by a service under a row
lock) is an ordinary instance.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

SHOWN = "shown_"
"""The prefix of the annotation that holds what a user may see of a guarded column."""


class WithheldRead(TypeError):
    """Raised by ``save()`` on an instance read for a user who may not see all of it."""


class GuardedColumns:
    """Mixin for a model some of whose columns a selector may withhold from a user (see the
    module docstring). The model names the flag annotation and the guarded columns with the
    value each reads when withheld."""

    hidden_flag: ClassVar[str]
    guarded_columns: ClassVar[dict[str, Callable[[], Any]]]

    def withheld(self) -> bool:
        """Whether this instance was read for a user some of whose columns are withheld (the
        flag annotation is True, or None: not decided yet)."""
        return getattr(self, self.hidden_flag, False) is not False

    def refresh_from_db(
        self,
        using: str | None = None,
        fields: Iterable[str] | None = None,
        from_queryset: Any = None,
    ) -> None:
        names = list(fields) if fields is not None else None
        if names is not None and hasattr(self, self.hidden_flag):
            deferred = self.get_deferred_fields()  # type: ignore[attr-defined]
            guarded = [n for n in names if n in self.guarded_columns and n in deferred]
            hidden = self.withheld()
            for name in guarded:
                shown = getattr(self, SHOWN + name, None)
                if shown is not None:
                    setattr(self, name, shown)
                elif hidden:
                    setattr(self, name, self.guarded_columns[name]())
                else:
                    continue
                names.remove(name)
            if not names:
                return
        elif names is None and self.withheld():
            # reload what the user may see; the guarded columns keep what they read
            meta = self._meta  # type: ignore[attr-defined]
            names = [
                f.attname for f in meta.concrete_fields if f.attname not in self.guarded_columns
            ]
        super().refresh_from_db(using, names, from_queryset)  # type: ignore[misc]

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.withheld():
            raise WithheldRead(
                f"this {type(self).__name__} was read for a user who may not see "
                f"{', '.join(self.guarded_columns)}; a service saves a row it read itself"
            )
        super().save(*args, **kwargs)  # type: ignore[misc]
