"""Reads of a project's saved filters: the list its members see, one of them, and the items
a saved filter gives, through the item list's own filter code (``ItemFilterForm`` reads the
query string as the list page does, ``benchmark.selectors.item_list`` /
``items_filtered`` apply it), so a saved filter gives exactly what the list shows for it."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from benchmark import selectors, visibility
from benchmark.exceptions import ValidationFailed
from benchmark.models import Item, Membership, Project, SavedFilter
from benchmark.projects.forms import ItemFilterForm
from benchmark.selectors import ItemFilters
from benchmark.typing import AnyUser

#: What ``--items`` and the evaluate form name a saved filter by: ``filter:NAME``.
PREFIX = "filter:"


def saved_filter_list(*, user: AnyUser, project: Project) -> QuerySet[SavedFilter]:
    """The project's saved filters, by name; none for someone who is not a member."""
    if not user.is_authenticated:
        return SavedFilter.objects.none()
    member = Membership.objects.filter(user=user.pk, project_id=project.pk)
    return (
        SavedFilter.objects.filter(project=project, project__in=member.values("project_id"))
        .select_related("created_by")
        .order_by("name")
    )


def saved_filter_get(*, user: AnyUser, project: Project, pk: int) -> SavedFilter:
    """One saved filter of the project; 404 for someone who is not a member."""
    return get_object_or_404(saved_filter_list(user=user, project=project), pk=pk)


def saved_filter_names(*, user: AnyUser | None, project: Project) -> list[str]:
    """The names of the project's saved filters (``user`` None: the command line's)."""
    rows = (
        SavedFilter.objects.filter(project=project)
        if user is None
        else saved_filter_list(user=user, project=project)
    )
    return list(rows.order_by("name").values_list("name", flat=True))


def filters_of_query(
    *, user: AnyUser | None, project: Project, query: str
) -> tuple[ItemFilters, str]:
    """The item list's filters for ``query`` (its query string; anything but the filters,
    such as the page number, is left out) and that query as it is kept (the filters set, in
    the list form's order). ValidationFailed naming a filter the list would ignore (a value it
    does not offer) or when no filter is set."""
    pairs = dict(parse_qsl(query.lstrip("?"), keep_blank_values=False))
    bound = {k: v.strip() for k, v in pairs.items() if k in ItemFilterForm.base_fields}
    bound = {k: v for k, v in bound.items() if v}
    if (
        "status" in bound
        and user is not None
        and selectors.item_status_hidden(user=user, project=project)
    ):
        raise ValidationFailed(f"status: {visibility.STATUS_HIDDEN_REASON}")
    form = ItemFilterForm(bound, facets=selectors.item_facets(user=user, project=project))
    if not form.is_valid():
        wrong = "; ".join(f"{name}={bound.get(name, '')!r}" for name in form.errors)
        raise ValidationFailed(f"the item list does not offer the filter {wrong}")
    filters = form.filters()
    if not filters.active:
        raise ValidationFailed(
            "set at least one filter on the item list first (all items need no saved filter)"
        )
    kept = urlencode([(name, bound[name]) for name in ItemFilterForm.base_fields if name in bound])
    return filters, kept


def saved_filter_named(*, user: AnyUser | None, project: Project, name: str) -> SavedFilter:
    """The project's saved filter called ``name``; ValidationFailed naming it (and the names
    there are) when there is none the user may see."""
    rows = (
        SavedFilter.objects.filter(project=project)
        if user is None
        else saved_filter_list(user=user, project=project)
    )
    found = rows.filter(name=name).first()
    if found is None:
        names = saved_filter_names(user=user, project=project)
        known = f" (it has {', '.join(repr(n) for n in names)})" if names else ""
        raise ValidationFailed(f"project {project.name!r} has no saved filter {name!r}{known}")
    return found


def saved_filter_item_ids(*, user: AnyUser | None, project: Project, name: str) -> list[int]:
    """The ids of the items the saved filter ``name`` gives, in the item list's order: the
    items the list shows ``user`` for its query (``user`` None, the command line: every item
    of the project the list would show a member)."""
    saved = saved_filter_named(user=user, project=project, name=name)
    filters, _ = filters_of_query(user=user, project=project, query=saved.query)
    if user is None:
        items = selectors.items_filtered(
            Item.objects.filter(project=project), filters=filters, project=project
        )
    else:
        items = selectors.item_list(user=user, project=project, filters=filters, load_secrets=False)
    return list(items.values_list("pk", flat=True))
