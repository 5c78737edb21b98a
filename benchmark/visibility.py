"""The one rule about what a user may see of an item.

An item's *answer* is its expected answer, its accepted variants and its source record
(``raw``, which holds both), plus everything that gives them away: its reference and agent
trajectories, its ground-truth responses and plans, the model calls made about it (a drafting
conversation contains the answer) and the jobs that ran them. Some users may not see an
item's answer yet (a blind verifier of an Agentic-MME item who has not answered it).

Which items those are is decided by **answer-hiding rules**: callables ``rule(user=...) -> QuerySet[Item]``
answering the items whose answer is hidden from ``user``, usable as a subquery. ``benchmark``
may not import ``annotation`` (dependencies point one way), so it only keeps the registry;
``annotation`` registers the blind-verification rule in its ``AppConfig.ready()``. An item is
hidden when any registered rule hides it. A rule that can tell in Python (one small query)
that it hides nothing from ``user`` answers ``Item.objects.none()``; the selectors then add no
condition at all rather than build and compile its subqueries on every request (the
blind-verification rule's tree took ~20 ms of CPU per page to build and compile). That first
question is remembered for one request (:func:`decided`; :class:`DecisionsMiddleware` opens
the request's memo, :func:`decisions_remembered` any other unit of work); outside one it is
asked every time, so nothing remembered outlives the request that asked it.

How the rule is applied (by the selectors in ``benchmark.selectors``,
``benchmark.llm.selectors`` and every selector built on them; views, API views and templates
never decide it), with public QuerySet API only:

* :func:`items_visible` takes a queryset of items and annotates ``answer_hidden`` (an
  ``EXISTS`` over the rules) on every row. The secret columns (:data:`SECRET_FIELDS`) are
  deferred and selected again as ``shown_<column>`` through ``CASE WHEN NOT hidden THEN
  column END``, so for a hidden item the database returns NULL and the secret never leaves
  it. The rows are *reads* (:mod:`benchmark.reads`): a deferred secret is loaded from its
  ``shown_`` annotation without a query (the empty value for a hidden item), and a hidden
  item cannot be saved. With ``load_secrets=False`` (list pages, which do not show them)
  the secret columns stay deferred and ``answer_hidden`` is ``None`` (not decided, read as
  hidden) until :func:`items_flag` decides it for the rows a page shows.
* :func:`item_visible_get` reads *one* item (the item, judge and adjudication pages): it asks
  the rules first (one small query) and then reads the row, its secret columns deferred when
  the item is hidden. Two statements, but the rules' subquery is built once instead of once
  for the flag and once per secret column (on PostgreSQL that SQL took ~30 ms of CPU to build
  on every judge page and every submitted judgment).
* Attachments (trajectories, responses, plans), model calls and jobs of hidden items are
  excluded from their lists (:func:`exclude_hidden_attachments`, :func:`exclude_hidden_jobs`).
* Pages that exist to show the answer (the trajectory editor, backward drafting, asking the
  model about an item, a model call's page) refuse a hidden item with a 403 that says why
  (:func:`refuse_hidden`), using the flag the selector annotated.

Writes never use these instances: services read the item again under a row lock, and a
hidden item read for a user raises :class:`benchmark.reads.WithheldRead` if saved.

Model identity
--------------

A second, smaller rule hides *who wrote an answer*: a rater of a human evaluation must judge
the answers blind, so for them the model's name, the response's key (``model:<name>``), its
source file and its source record (which names the model) are hidden. Which responses those
are is decided by **identity-hiding rules**, ``rule(user=...) -> QuerySet[Response]``
(``review`` registers the human-evaluation rule in its ``AppConfig.ready()``).
:func:`responses_visible` applies them as :func:`items_visible` does: it annotates
``identity_hidden`` and selects the identity columns (:data:`IDENTITY_FIELDS`) as
``shown_<column>`` through ``CASE``, so a hidden response reads ``model_name == "hidden"``,
``key == "answer-<id>"`` and empty ``source_file``, ``raw`` and ``extra``, and cannot be
saved. Every selector that returns responses to show applies it
(:func:`benchmark.selectors.response_list` and ``item_get_detailed``, the tag review
and rendering selectors); reviewers see everything.

Item status
-----------

A third rule hides *item status* from members who may not adjudicate (annotators) in a project
with current gold items (``Project.has_gold``, kept by ``review.gold.services``): only verified
items can be gold, so status would tell gold items apart from drafts. :func:`status_hidden`
decides it for one project (the selectors ask the role: ``benchmark.selectors.item_status_hidden``),
:func:`items_status_shown` for rows of many projects in the database (``shown_status``, None
where hidden: the items API). The item list's rows then carry no status, the item page no
badge, and the status history selector answers none (``benchmark.selectors``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import (
    BigIntegerField,
    BooleanField,
    Case,
    CharField,
    Exists,
    F,
    JSONField,
    OuterRef,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Concat
from django.http import HttpRequest, HttpResponse
from django.utils.module_loading import import_string

from benchmark.models import Item, Job, Membership, Project, Response
from benchmark.reads import SHOWN
from benchmark.typing import AnyUser

AnswerHidingRule = Callable[..., QuerySet[Item]]
"""Called as ``rule(user=user)``."""

_RULES: list[AnswerHidingRule | str] = []

SECRET_FIELDS: dict[str, Callable[[], Any]] = Item.guarded_columns
"""The item columns that hold the answer, with the empty value a hidden item reads."""


_decisions: ContextVar[dict[tuple[Any, str], bool] | None] = ContextVar(
    "benchmark.visibility.decisions", default=None
)
"""The decisions remembered in the current request (or other unit of work), if any."""


@contextmanager
def decisions_remembered() -> Iterator[None]:
    """Remember :func:`decided`'s answers until the block ends (one request: see
    :class:`DecisionsMiddleware`); a new block starts with nothing remembered."""
    token = _decisions.set({})
    try:
        yield
    finally:
        _decisions.reset(token)


class DecisionsMiddleware:
    """Opens one :func:`decisions_remembered` block per request: the pages that read several
    lists (items, answers, plans, jobs) ask the rules once, and the next request asks again,
    so a change made meanwhile (by this process or another, by ``save()``, ``update()`` or
    ``bulk_create``) is seen."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with decisions_remembered():
            return self.get_response(request)


def decided(user: AnyUser, key: str, decide: Callable[[], bool]) -> bool:
    """``decide()`` (a small query a rule asks first, e.g. whether any task could hide
    anything from ``user``), remembered per ``user`` and ``key`` for the current request
    (:func:`decisions_remembered`); outside one, asked every time."""
    memo = _decisions.get()
    if memo is None:
        return decide()
    remembered = (user.pk, key)
    if remembered not in memo:
        memo[remembered] = decide()
    return memo[remembered]


def register_answer_hiding_rule(rule: AnswerHidingRule | str) -> None:
    """Add a rule (once): ``rule(user=user)`` answers the items whose answer ``user`` may not
    see. A dotted path is imported on first use, so the app registering it need not import
    the rule's module when it starts."""
    if rule not in _RULES:
        _RULES.append(rule)


def answer_hiding_rules() -> list[AnswerHidingRule]:
    return [import_string(r) if isinstance(r, str) else r for r in _RULES]


def hidden_items(*, user: AnyUser) -> QuerySet[Item]:
    """Every item whose answer ``user`` may not see, by any rule; use it as a subquery."""
    if not user.is_authenticated or not _RULES:
        return Item.objects.none()
    hiding = [
        q for q in (rule(user=user) for rule in answer_hiding_rules()) if not q.query.is_empty()
    ]
    if len(hiding) <= 1:
        return hiding[0] if hiding else Item.objects.none()
    condition = Q(pk__in=[])
    for rows in hiding:
        condition |= Q(pk__in=rows.values("pk"))
    return Item.objects.filter(condition)


def hidden_item_ids(*, user: AnyUser, items: Iterable[Item | int]) -> set[int]:
    """Which of ``items`` (instances or ids) are hidden from ``user``; one query."""
    ids = [item if isinstance(item, int) else item.pk for item in items]
    if not ids or not user.is_authenticated or not _RULES:
        return set()
    hidden = hidden_items(user=user)
    if hidden.query.is_empty():
        return set()
    return set(hidden.filter(pk__in=ids).values_list("pk", flat=True))


def items_visible(
    items: QuerySet[Item], *, user: AnyUser, load_secrets: bool = True
) -> QuerySet[Item]:
    """``items`` with ``answer_hidden`` on each row and the secrets of hidden items left in
    the database (see the module docstring)."""
    if not _RULES or not user.is_authenticated:
        # nothing can be hidden: the flag is a constant false
        return items.annotate(answer_hidden=Value(False))
    if not load_secrets:
        # Rows for a list: the flag is decided after the rows are read, for those rows only
        # (items_flag; a list read as values() never asks the rules). An EXISTS per row in
        # the list's own query let PostgreSQL plan the rules as a hashed subplan over every
        # item of every project (hundreds of milliseconds at 100,000 items) though the page
        # shows 50.
        return items.defer(*SECRET_FIELDS).annotate(
            answer_hidden=Value(None, output_field=BooleanField())
        )
    hidden = hidden_items(user=user)
    if hidden.query.is_empty():
        # the rules decided in Python that nothing is hidden from this user
        return items.annotate(answer_hidden=Value(False))
    items = items.defer(*SECRET_FIELDS).annotate(
        answer_hidden=Exists(hidden.filter(pk=OuterRef("pk")))
    )
    model_fields = {f.name: f for f in Item._meta.get_fields()}
    return items.annotate(
        **{
            SHOWN + name: Case(
                When(answer_hidden=False, then=F(name)),
                default=None,
                output_field=model_fields[name],  # type: ignore[arg-type]
            )
            for name in SECRET_FIELDS
        }
    )


def items_flag(rows: Iterable[Item], *, user: AnyUser) -> None:
    """Decide ``answer_hidden`` for rows read by :func:`items_visible` with
    ``load_secrets=False`` whose flag is not decided yet (``None``): one query for all of
    them (a page of a list)."""
    undecided = [row for row in rows if getattr(row, "answer_hidden", False) is None]
    hidden = hidden_item_ids(user=user, items=undecided)
    for row in undecided:
        row.answer_hidden = row.pk in hidden  # type: ignore[attr-defined]


def item_visible_get(items: QuerySet[Item], *, user: AnyUser, pk: int) -> Item:
    """The item ``pk`` of ``items`` as :func:`items_visible` reads it (``answer_hidden`` set;
    a hidden item's secrets read empty and are not loaded). Raises ``Item.DoesNotExist``
    when ``items`` has no such item."""
    hidden = pk in hidden_item_ids(user=user, items=[pk])
    rows = items.filter(pk=pk)
    if hidden:
        rows = rows.defer(*SECRET_FIELDS)
    return rows.annotate(answer_hidden=Value(hidden)).get()


def item_read_hidden(items: QuerySet[Item], *, pk: int) -> Item:
    """The item ``pk`` of ``items`` read as hidden without asking the rules (a write that
    shows nothing of it): its secrets read empty and are not loaded, and it cannot be
    saved. Raises ``Item.DoesNotExist`` when ``items`` has no such item."""
    return items.defer(*SECRET_FIELDS).annotate(answer_hidden=Value(True)).get(pk=pk)


def exclude_hidden_attachments(rows: QuerySet[Any], *, user: AnyUser) -> QuerySet[Any]:
    """Rows hanging off an item (``item`` foreign key: trajectories, responses, plans, model
    calls) without those of items hidden from ``user``."""
    if not _RULES or not user.is_authenticated:
        return rows
    hidden = hidden_items(user=user)
    if hidden.query.is_empty():
        return rows
    return rows.exclude(Exists(hidden.filter(pk=OuterRef("item_id"))))


def exclude_hidden_jobs(jobs: QuerySet[Job], *, user: AnyUser) -> QuerySet[Job]:
    """Jobs without those about an item hidden from ``user`` (a model call names its item in
    ``params.item_id``: its prompt and answer give the answer away)."""
    if not _RULES or not user.is_authenticated:
        return jobs
    hidden = hidden_items(user=user)
    if hidden.query.is_empty():
        return jobs
    jobs = jobs.alias(_about_item=Cast(KT("params__item_id"), BigIntegerField()))
    return jobs.exclude(Exists(hidden.filter(pk=OuterRef("_about_item"))))


def refuse_hidden(item: Item, *, page: str) -> None:
    """403, saying why, for a page that shows ``item``'s answer when the selector that read
    the item found it hidden (``answer_hidden``)."""
    if getattr(item, "answer_hidden", False):
        raise PermissionDenied(
            f"{page} shows this item's reference and answer, and you are one of its blind "
            "verifiers: it opens once you have answered the question."
        )


# --------------------------------------------------------------------------- model identity

IdentityHidingRule = Callable[..., QuerySet[Response]]
"""Called as ``rule(user=user)``: the responses whose author (model) ``user`` may not see."""

_IDENTITY_RULES: list[IdentityHidingRule | str] = []

HIDDEN_MODEL = "hidden"
"""What ``model_name`` reads on a response whose model is hidden."""

IDENTITY_FIELDS = tuple(Response.guarded_columns)
"""The response columns that name (or give away) the model that wrote it: ``raw`` is its
source record and ``extra`` the record's other fields (an LLM-I answer file's released
scores and justifications, a judge run's released fields), which a blind rater must not read
either."""


def register_identity_hiding_rule(rule: IdentityHidingRule | str) -> None:
    """Add a rule (once): ``rule(user=user)`` answers the responses whose model ``user`` may
    not see. A dotted path is imported on first use, so the app registering it need not
    import the rule's module when it starts."""
    if rule not in _IDENTITY_RULES:
        _IDENTITY_RULES.append(rule)


def identity_hiding_rules() -> list[IdentityHidingRule]:
    return [import_string(r) if isinstance(r, str) else r for r in _IDENTITY_RULES]


def identity_hidden_responses(*, user: AnyUser) -> QuerySet[Response]:
    """Every response whose model ``user`` may not see, by any rule; use it as a subquery."""
    rules = identity_hiding_rules()
    if not user.is_authenticated or not rules:
        return Response.objects.none()
    hiding = [q for q in (rule(user=user) for rule in rules) if not q.query.is_empty()]
    if len(hiding) <= 1:
        return hiding[0] if hiding else Response.objects.none()
    condition = Q(pk__in=[])
    for rows in hiding:
        condition |= Q(pk__in=rows.values("pk"))
    return Response.objects.filter(condition)


def _masked(name: str) -> Any:
    if name == "model_name":
        return Value(HIDDEN_MODEL)
    if name == "key":
        return Concat(Value("answer-"), Cast("pk", CharField()), output_field=CharField())
    if name == "extra":
        return Value({}, output_field=JSONField())
    return Value("")


def responses_visible(rows: QuerySet[Response], *, user: AnyUser) -> QuerySet[Response]:
    """``rows`` with ``identity_hidden`` on each row and, for a response whose model is hidden
    from ``user``, the model's name, key, source file and record masked in the database (see
    the module docstring): ``model_name`` reads :data:`HIDDEN_MODEL`, ``key``
    ``answer-<id>``, ``source_file``, ``raw`` and ``extra`` empty."""
    if not user.is_authenticated or not _IDENTITY_RULES:
        return rows.annotate(identity_hidden=Value(False))
    hiding = identity_hidden_responses(user=user)
    if hiding.query.is_empty():
        # the rules decided in Python that no model is hidden from this user
        return rows.annotate(identity_hidden=Value(False))
    hidden = hiding.filter(pk=OuterRef("pk"))
    rows = rows.annotate(identity_hidden=Exists(hidden)).defer(*IDENTITY_FIELDS)
    fields = {f.name: f for f in Response._meta.get_fields()}
    return rows.annotate(
        **{
            SHOWN + name: Case(
                When(identity_hidden=True, then=_masked(name)),
                default=F(name),
                output_field=fields[name],  # type: ignore[arg-type]
            )
            for name in IDENTITY_FIELDS
        }
    )


# --------------------------------------------------------------------------- item status

STATUS_HIDDEN_REASON = (
    "item status is not shown to annotators in a project with gold items (a gold item is "
    "always verified, so its status would tell it apart)"
)
"""Why a status filter is refused to a user from whom item status is hidden."""


def status_hidden(*, project: Project, may_adjudicate: bool) -> bool:
    """Whether item status is hidden in ``project`` from a member who may (or may not)
    adjudicate: the project has current gold items (``Project.has_gold``, kept by the gold
    services) and they may not (annotators). Only verified items can be gold, so in a task
    that verifies drafts every gold item would read "verified" among drafts: for such users
    the item list has no status column, counts or filter, the item page no status badge or
    status history, and the items API reads ``status`` as null. The selectors ask the role
    (``benchmark.selectors.item_status_hidden``; the rules here do not import the
    permissions, a sibling layer); no query of its own."""
    return project.has_gold and not may_adjudicate


def status_hidden_projects(*, user: AnyUser, adjudicating_roles: Iterable[str]) -> QuerySet[Any]:
    """The ids of the projects in which item status is hidden from ``user``
    (:func:`status_hidden`; ``adjudicating_roles``: the roles that may adjudicate), as a
    subquery."""
    return (
        Membership.objects.filter(user=user.pk, project__has_gold=True)
        .exclude(role__in=list(adjudicating_roles))
        .values("project_id")
    )


def items_status_shown(
    items: QuerySet[Item], *, user: AnyUser, adjudicating_roles: Iterable[str]
) -> QuerySet[Item]:
    """``items`` with ``shown_status`` on each row: the item's status, or None where it is
    hidden from ``user`` (:func:`status_hidden`), decided by the database."""
    if not user.is_authenticated:
        return items.annotate(shown_status=Value(None, output_field=CharField()))
    hidden = status_hidden_projects(user=user, adjudicating_roles=adjudicating_roles)
    return items.annotate(
        shown_status=Case(
            When(project_id__in=hidden, then=Value(None)),
            default=F("status"),
            output_field=CharField(),
        )
    )
