"""Django's paginator told how many rows it pages through (from the kept item tallies, or a
capped count) instead of running ``COUNT(*)`` over them, which grows with the project. The
item list page and the API's item list both use it."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator


class CountedPaginator(Paginator):
    def __init__(self, object_list: Any, per_page: int, *, count: int) -> None:
        super().__init__(object_list, per_page)
        self._known_count = count

    @property
    def count(self) -> int:  # type: ignore[override]
        return self._known_count
