"""The app-wide reads of projects and items, which every feature of ``benchmark`` (and the
apps built on it) looks its objects up with; it sits below the features (it imports only the
models, ``benchmark.visibility`` and ``benchmark.fields``), so a feature may import it and the
project pages (``benchmark.projects``) may import every feature. Every selector takes ``user=``
and scopes to what that user may see, so an object from another project answers 404, and applies the answer-hiding rule of
:mod:`benchmark.visibility`: items carry ``answer_hidden`` and read empty secrets when hidden,
and what hangs off a hidden item is left out."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from django.db import connection
from django.db.models import (
    BooleanField,
    Case,
    Count,
    Exists,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Sum,
    TextField,
    Value,
    When,
    prefetch_related_objects,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Concat, Left, Length
from django.db.models.lookups import GreaterThan
from django.http import Http404
from django.shortcuts import get_object_or_404

from benchmark import permissions, visibility
from benchmark.exceptions import ValidationFailed
from benchmark.fields import JSONArrayLength
from benchmark.models import (
    Item,
    ItemStatus,
    ItemStatusChange,
    ItemTally,
    Membership,
    Plan,
    Project,
    Response,
    Taxonomy,
    Toolset,
    Trajectory,
    indexing,
)
from benchmark.typing import AnyUser


def _role_subquery(user: AnyUser) -> Subquery:
    return Subquery(
        Membership.objects.filter(project=OuterRef("pk"), user=user.pk).values("role")[:1]
    )


def _remember_role(project: Project, user: AnyUser) -> Project:
    """Seed permissions.role_in's per-project cache with the role annotated by the query."""
    cache = getattr(project, "_role_cache", {})
    cache[user.pk] = getattr(project, "my_role", None)
    project._role_cache = cache  # type: ignore[attr-defined]
    return project


# --------------------------------------------------------------------------- projects


def project_list(*, user: AnyUser) -> QuerySet[Project]:
    """The user's projects with ``my_role``, ``n_items`` and ``n_<status>`` counts."""
    if not user.is_authenticated:
        return Project.objects.none()
    counts = {
        f"n_{status}": Count("items", filter=Q(items__status=status), distinct=False)
        for status in ItemStatus.values
    }
    return (
        Project.objects.filter(memberships__user=user.pk)
        .select_related("toolset", "taxonomy")
        .annotate(n_items=Count("items"), my_role=_role_subquery(user), **counts)
        .order_by("name")
    )


def project_visible(*, user: AnyUser) -> QuerySet[Project]:
    """The user's projects with ``my_role``; no counts (cheap, for lookups)."""
    if not user.is_authenticated:
        return Project.objects.none()
    return (
        Project.objects.filter(memberships__user=user.pk)
        .select_related("toolset", "taxonomy")
        .annotate(my_role=_role_subquery(user))
    )


def project_get(*, user: AnyUser, pk: int) -> Project:
    project = get_object_or_404(project_visible(user=user), pk=pk)
    return _remember_role(project, user)


def _usable(model: type[Toolset] | type[Taxonomy], user: AnyUser) -> QuerySet[Any]:
    if not user.is_authenticated:
        return model.objects.none()
    rows = model.objects.order_by("-builtin", "name")
    if user.is_staff:
        return rows
    mine = model.objects.filter(projects__memberships__user=user.pk).values("pk")
    return rows.filter(Q(builtin=True) | Q(pk__in=mine))


def toolsets_usable(*, user: AnyUser) -> QuerySet[Toolset]:
    """Toolsets a new project may start from: the built-in ones and those of the user's
    projects (staff: every toolset)."""
    return _usable(Toolset, user)


def taxonomies_usable(*, user: AnyUser) -> QuerySet[Taxonomy]:
    """Taxonomies a new project may start from, as :func:`toolsets_usable`."""
    return _usable(Taxonomy, user)


def _tallies(*, user: AnyUser, project: Project) -> QuerySet[ItemTally]:
    """The project's kept item tallies (database triggers keep them, see
    :mod:`benchmark.models.indexing`); none outside the user's projects."""
    if not user.is_authenticated:
        return ItemTally.objects.none()
    return ItemTally.objects.filter(project=project, project__memberships__user=user.pk, n__gt=0)


def item_status_counts(*, user: AnyUser, project: Project) -> dict[str, int]:
    """``{status: count}`` for every status, plus ``"total"``: exact, from the kept tallies
    (one query on a table of a few rows per project, whatever the project's size)."""
    counts = dict.fromkeys(ItemStatus.values, 0)
    rows = _tallies(user=user, project=project).values("status").annotate(total=Sum("n"))
    for row in rows.order_by():
        counts[row["status"]] = row["total"]
    return {"total": sum(counts.values()), **counts}


# --------------------------------------------------------------------------- items


@dataclass
class ItemFilters:
    status: str = ""
    category: str = ""
    intent: str = ""
    level: int | None = None
    modality: str = ""
    q: str = ""

    @property
    def active(self) -> bool:
        return any([self.status, self.category, self.intent, self.level, self.modality, self.q])

    @property
    def tallied(self) -> bool:
        """Whether the kept tallies can count what these filters keep (status, category and
        intent at most)."""
        return self.level is None and not self.modality and not self.q

    def tally_lookups(self) -> dict[str, str]:
        """The status, category and intent filters that are set, as lookups that apply to the
        items and to their tallies alike."""
        keys = {"status": self.status, "category": self.category, "intent": self.intent}
        return {name: value for name, value in keys.items() if value}


def item_list(
    *,
    user: AnyUser,
    project: Project | None = None,
    filters: ItemFilters | None = None,
    load_secrets: bool = True,
) -> QuerySet[Item]:
    """Items in the user's projects (or in ``project``), optionally filtered, each with
    ``answer_hidden``; a hidden item's answer, variants and source record read empty and are
    not loaded (:func:`benchmark.visibility.items_visible`)."""
    items = _items(user=user, project=project, filters=filters)
    return visibility.items_visible(items, user=user, load_secrets=load_secrets)


def item_list_status_shown(
    *,
    user: AnyUser,
    project: Project | None = None,
    filters: ItemFilters | None = None,
    load_secrets: bool = True,
) -> QuerySet[Item]:
    """:func:`item_list` with ``shown_status`` on each row: the item's status, or None where
    item status is hidden from ``user`` (:func:`benchmark.visibility.items_status_shown`)."""
    items = item_list(user=user, project=project, filters=filters, load_secrets=load_secrets)
    return visibility.items_status_shown(
        items, user=user, adjudicating_roles=permissions.roles_for("adjudicate")
    )


def item_status_filter_check(*, user: AnyUser, project: Project | None) -> None:
    """Refuse (:class:`ValidationFailed`, 400) a status filter from ``user`` on ``project``'s
    items (or, without one, on all their projects' items) where item status is hidden from
    them in that project (or in any of their projects)."""
    if project is not None:
        hidden = item_status_hidden(user=user, project=project)
    else:
        hidden = visibility.status_hidden_projects(
            user=user, adjudicating_roles=permissions.roles_for("adjudicate")
        ).exists()
    if hidden:
        raise ValidationFailed(f"status: {visibility.STATUS_HIDDEN_REASON}")


def item_rows_flag(*, user: AnyUser, rows: list[Item]) -> None:
    """Decide ``answer_hidden`` for the rows of :func:`item_list` with ``load_secrets=False``
    that a page shows (one query; until then the rows read as hidden)."""
    visibility.items_flag(rows, user=user)


def _items(
    *,
    user: AnyUser,
    project: Project | None = None,
    filters: ItemFilters | None = None,
) -> QuerySet[Item]:
    """The role scope and the filters, for counts and facets (which show no answers)."""
    if not user.is_authenticated:
        return Item.objects.none()
    # The scope as a subquery, not a join: a join let SQLite put the project table in the
    # outer loop, which kept the search index from driving the query in its own order. For
    # one project, a constant EXISTS (evaluated once): with ``project_id IN (<the user's
    # projects>) AND project_id = <p>`` SQLite read the list through the (project, status)
    # index and sorted every item of the project for a page of 50.
    if project is not None:
        member = Membership.objects.filter(user=user.pk, project_id=project.pk)
        items = Item.objects.filter(Exists(member), project_id=project.pk)
    else:
        mine = Membership.objects.filter(user=user.pk).values("project_id")
        items = Item.objects.filter(project_id__in=mine)
    return items_filtered(items, filters=filters, project=project)


def items_filtered(
    items: QuerySet[Item], *, filters: ItemFilters | None, project: Project | None = None
) -> QuerySet[Item]:
    """``items`` (already scoped) that pass ``filters``, in the item list's order: what the
    item list shows for them, and what a saved filter gives (``benchmark.saved_filters``)."""
    if filters is not None:
        items = items.filter(**filters.tally_lookups())
        if filters.level is not None:
            items = items.filter(level=filters.level)
        if filters.modality:
            items = items.filter(modality=filters.modality)
        if filters.q:
            return item_search(items, text=filters.q, project=project)
    return items.order_by("project_id", "position", "id")


def item_search(
    items: QuerySet[Item], *, text: str, project: Project | None = None
) -> QuerySet[Item]:
    """``items`` whose query or external id hold every word of ``text``, the last as a prefix
    (what a user is typing), in the order they were added: SQLite FTS5 or PostgreSQL full-text
    search, through the index :mod:`benchmark.models.indexing` keeps. Words are runs of letters
    and digits; text with none matches nothing. Ordered by id, so on SQLite the index drives
    the query and a page reads only its own rows, however common the word."""
    terms = indexing.search_terms(text)
    if not terms:
        return items.none()
    sql, params = indexing.search_sql(
        connection.vendor, terms, project.pk if project is not None else None
    )
    if connection.vendor == "postgresql":
        items = items.filter(RawSQL(sql, params, output_field=BooleanField()))
        return items.order_by("project_id", "id")
    # A join with the FTS5 table, which Django's ORM cannot name otherwise; ordered by its
    # rowid (the item's id), which FTS5 reads in order: no sort of every match.
    items = items.order_by().extra(tables=[indexing.FTS], where=[sql], params=params)
    return items.extra(order_by=[f"{indexing.FTS}.rowid"])


COUNT_CAP = 1000


@dataclass
class ItemCount:
    """How many items a list shows: exact, or at least ``n`` when ``capped``."""

    n: int
    capped: bool = False
    ids: list[int] | None = None
    """For a search, the ids of its first ``n`` matches in the list's order (see
    :func:`item_count`)."""


def item_count(
    *,
    user: AnyUser,
    project: Project,
    filters: ItemFilters | None = None,
    at_least: int = 0,
    status_counts: dict[str, int] | None = None,
) -> ItemCount:
    """How many of the project's items pass ``filters``, without scanning the project: exact
    from the kept tallies when only status, category and intent filter (no query at all when
    only status does and ``status_counts``, from :func:`item_status_counts`, is given);
    otherwise counted up to ``max(COUNT_CAP, at_least)`` items and reported as "more" past
    that."""
    f = filters or ItemFilters()
    if status_counts is not None and not (f.category or f.intent or f.level or f.modality or f.q):
        return ItemCount(status_counts[f.status or "total"])
    if f.tallied:
        rows = _tallies(user=user, project=project).filter(**f.tally_lookups())
        return ItemCount(rows.aggregate(total=Sum("n"))["total"] or 0)
    cap = max(COUNT_CAP, at_least)
    items = _items(user=user, project=project, filters=f)
    if f.q:
        # A search reads its matches' ids, in the list's order, instead of counting them: the
        # page then reads its rows by id (item_table_rows_of) and the text index is searched
        # once, not twice (a common word as a prefix costs SQLite's index ~25 ms at 1M items).
        ids = list(items.values_list("pk", flat=True)[: cap + 1])
        return ItemCount(min(len(ids), cap), capped=len(ids) > cap, ids=ids[:cap])
    n = items.order_by()[: cap + 1].count()
    return ItemCount(min(n, cap), capped=n > cap)


def item_list_rows(
    *, user: AnyUser, project: Project, filters: ItemFilters | None = None
) -> QuerySet[Item]:
    """Items for a list page: only the columns its table shows (:data:`LIST_COLUMNS`; the
    heavy JSON and text columns, and those whose conversion costs, are left out), and
    what the database works out for the table: ``query_shown`` (the query cut to
    :data:`QUERY_SHOWN` characters), ``n_images`` and ``status_label``."""
    rows = item_list(user=user, project=project, filters=filters, load_secrets=False)
    return rows.only(*LIST_COLUMNS).annotate(
        query_shown=_QUERY_SHOWN,
        n_images=JSONArrayLength("image_refs"),
        status_label=_STATUS_LABEL,
    )


def item_table_rows(
    *, user: AnyUser, project: Project, filters: ItemFilters | None = None
) -> QuerySet[Any]:
    """The item list's table: per item a dict of :data:`TABLE_FIELDS` (``pk``, ``external_id``,
    ``status``, ``modality``, ``category``, ``intent``, ``level``, ``query_shown``,
    ``n_images``, ``status_label``), in the list's order. A read that cannot be saved, and a
    template reads a dict's values with fewer steps than a model's attributes. Where item
    status is hidden from ``user`` (:func:`item_status_hidden`) the rows have no ``status``
    and ``status_label``, and a status filter is not applied."""
    fields: tuple[str, ...] = TABLE_FIELDS
    if item_status_hidden(user=user, project=project):
        fields = tuple(f for f in TABLE_FIELDS if f not in STATUS_FIELDS)
        if filters is not None and filters.status:
            filters = replace(filters, status="")
    return item_list_rows(user=user, project=project, filters=filters).values(*fields)


STATUS_FIELDS = ("status", "status_label")
"""The table's fields that tell an item's status."""


def item_status_hidden(*, user: AnyUser, project: Project) -> bool:
    """Whether item status is hidden from ``user`` in ``project`` (annotators, in a project
    with gold items: :func:`benchmark.visibility.status_hidden`)."""
    if not user.is_authenticated or not project.has_gold:
        return False  # (no role asked)
    may_adjudicate = permissions.can(user=user, project=project, action="adjudicate")
    return visibility.status_hidden(project=project, may_adjudicate=may_adjudicate)


def item_table_rows_of(*, user: AnyUser, project: Project, ids: list[int]) -> list[dict]:
    """The rows :func:`item_table_rows` reads, of the items ``ids`` of ``project`` (a page of
    a search, from :attr:`ItemCount.ids`), in the order of ``ids``."""
    rows = item_table_rows(user=user, project=project).filter(pk__in=ids).order_by()
    by_id = {row["pk"]: row for row in rows}
    return [by_id[pk] for pk in ids if pk in by_id]


TABLE_FIELDS = (
    "pk", "external_id", "status", "modality", "category", "intent", "level", "query_shown",
    "n_images", "status_label",
)  # fmt: skip


LIST_COLUMNS = (
    "project_id", "external_id", "position", "query", "modality", "category", "intent", "level",
    "status",
)  # fmt: skip
"""The item columns the item list shows (and orders by)."""

QUERY_SHOWN = 140
"""The item list shows this many characters of a query: a longer one is cut to one less and
"…" (by the database, so no page cuts 50 texts in Python)."""
_QUERY_SHOWN = Case(
    When(
        GreaterThan(Length("query"), QUERY_SHOWN),
        then=Concat(Left("query", QUERY_SHOWN - 1), Value("…"), output_field=TextField()),
    ),
    default="query",
    output_field=TextField(),
)
_STATUS_LABEL = Case(
    *(When(status=value, then=Value(label)) for value, label in ItemStatus.choices),
    default="status",
    output_field=TextField(),
)


@dataclass
class ItemFacets:
    categories: list[str] = field(default_factory=list)
    intents: list[str] = field(default_factory=list)
    #: the categories each intent is used under (ATP-Bench's intents sit under a category)
    intent_categories: dict[str, list[str]] = field(default_factory=dict)


def item_facets(*, user: AnyUser | None, project: Project) -> ItemFacets:
    """The categories and intents used in the project, for filter menus (one query, on the
    kept tallies). ``user`` None: the command line's, every item of the project."""
    tallies = (
        ItemTally.objects.filter(project=project, n__gt=0)
        if user is None
        else _tallies(user=user, project=project)
    )
    pairs = tallies.values_list("category", "intent").distinct()
    categories: set[str] = set()
    intents: dict[str, set[str]] = {}
    for category, intent in pairs.order_by():
        if category:
            categories.add(category)
        if intent:
            intents.setdefault(intent, set()).update([category] if category else [])
    return ItemFacets(
        categories=sorted(categories),
        intents=sorted(intents),
        intent_categories={i: sorted(c) for i, c in sorted(intents.items())},
    )


def item_get(*, user: AnyUser, project: Project, pk: int) -> Item:
    """One item, with ``answer_hidden`` (and empty secrets when hidden); 404 outside the
    user's projects (:func:`benchmark.visibility.item_visible_get`)."""
    try:
        return visibility.item_visible_get(_items(user=user, project=project), user=user, pk=pk)
    except Item.DoesNotExist:
        raise Http404("No Item matches the given query.") from None


def item_get_for_write(*, user: AnyUser, project: Project, pk: int) -> Item:
    """One item for a write that shows nothing of it (submitting a judgment): the scope of
    :func:`item_get` (404 outside the user's projects), without asking the answer-hiding
    rules, whose query is the most expensive part of reading one item: the item reads as
    hidden (``answer_hidden`` set, its secrets empty and not loaded), so nothing can show
    them; a service that needs the answer reads it itself. A page shows items read by
    :func:`item_get`."""
    try:
        return visibility.item_read_hidden(_items(user=user, project=project), pk=pk)
    except Item.DoesNotExist:
        raise Http404("No Item matches the given query.") from None


def item_get_revealed(*, user: AnyUser, project: Project, pk: int, page: str) -> Item:
    """One item for a page that exists to show (or change) its answer, e.g. the trajectory
    editor: 404 outside the user's projects, 403 saying why when the answer is hidden from
    the user."""
    item = item_get(user=user, project=project, pk=pk)
    visibility.refuse_hidden(item, page=page)
    return item


def item_get_detailed(*, user: AnyUser, project: Project, pk: int) -> Item:
    """An item with its responses, plans and trajectories prefetched (none of them when its
    answer is hidden from the user; the responses' models masked where they are hidden from
    the user, :func:`benchmark.visibility.responses_visible`)."""
    item = item_get(user=user, project=project, pk=pk)
    if item.answer_hidden:  # type: ignore[attr-defined]
        # nothing of them is shown: empty querysets, which the database is not asked
        prefetch_related_objects(
            [item],
            *(
                Prefetch(name, queryset=model.objects.none())
                for name, model in (
                    ("responses", Response),
                    ("plans", Plan),
                    ("trajectories", Trajectory),
                )
            ),
        )
        return item
    responses = visibility.responses_visible(Response.objects.all(), user=user)
    prefetch_related_objects(
        [item], Prefetch("responses", queryset=responses), "plans", "trajectories"
    )
    return item


def item_status_history(
    *, user: AnyUser, item: Item, project: Project | None = None
) -> QuerySet[ItemStatusChange]:
    """Every recorded status change of the item, oldest first, with who made it; none for a
    user outside the item's project, or from whom item status is hidden there. ``project``:
    the item's project, when the caller has it (no query to read it again)."""
    if project is None or project.pk != item.project_id:
        project = item.project
    if not user.is_authenticated or item_status_hidden(user=user, project=project):
        # none either where item status is hidden from the user (annotators, with gold)
        return ItemStatusChange.objects.none()
    return (
        ItemStatusChange.objects.filter(item=item, item__project__memberships__user=user.pk)
        .select_related("changed_by")
        .order_by("created_at", "id")
    )


# --------------------------------------------------------------------------- attachments


def _attached(model: type[Any], *, user: AnyUser, item: Item | None, project: Project | None):
    if not user.is_authenticated:
        return model.objects.none()
    rows = model.objects.filter(item__project__memberships__user=user.pk)
    if item is not None:
        rows = rows.filter(item=item)
    if project is not None:
        rows = rows.filter(item__project=project)
    rows = visibility.exclude_hidden_attachments(rows, user=user)
    return rows.select_related("item").order_by("item_id", "position", "id")


def response_list(
    *, user: AnyUser, item: Item | None = None, project: Project | None = None
) -> QuerySet[Response]:
    """Responses, each with ``identity_hidden`` and its model masked where the model is
    hidden from the user (:func:`benchmark.visibility.responses_visible`)."""
    rows = _attached(Response, user=user, item=item, project=project)
    return visibility.responses_visible(rows, user=user)


def plan_list(
    *, user: AnyUser, item: Item | None = None, project: Project | None = None
) -> QuerySet[Plan]:
    return _attached(Plan, user=user, item=item, project=project)


def trajectory_list(
    *, user: AnyUser, item: Item | None = None, project: Project | None = None
) -> QuerySet[Trajectory]:
    return _attached(Trajectory, user=user, item=item, project=project)


# --------------------------------------------------------------------------- images


# --------------------------------------------------------------------------- jobs
