"""Writes of model drafting: start a draft (a model-call job of the ``model_draft`` kind), turn
the model's answer into candidates when the job runs, and record what people decide about
each candidate (keep, edit, reject) with what it became.

The model call is the one model-call lifecycle of ``benchmark.llm``: ``model_call_start``
creates the job, ``model_call_job`` calls the model and records the ``ModelCall`` row (prompt,
answer, tokens); this package's runner then reads the answer. A reply that is not in the form
asked for fails the job (and the draft) with a message saying what was wrong; nothing else is
written then.

What the candidates become goes through the services that own it: ``item_create`` (queries),
``item_update`` (rubric), ``response_save_version`` / ``response_revert`` (answers, the item's
"gt" response, which the LLM-I writer never exports as a model answer) and ``plan_save``."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotation.job_names import MODEL_DRAFT_KIND
from annotation.model_drafts import prompts
from annotation.model_drafts.models import (
    CandidateStatus,
    DraftCandidate,
    DraftKind,
    DraftStatus,
    ModelDraft,
)
from annotation.model_drafts.parse import (
    RUBRIC_SIZE,
    DraftParseError,
    parse_answer,
    parse_queries,
    parse_rubric,
)
from annotation.plan_editor.models import PlanVersion
from annotation.plan_editor.services import plan_revert, plan_save
from annotation.tag_review import services as tag_services
from annotation.tag_review.models import ResponseVersion
from benchmark import permissions
from benchmark.exceptions import Conflict, DomainError, ValidationFailed
from benchmark.fields import json_strings_map
from benchmark.items.services import item_create, item_update
from benchmark.jobs.kinds import Progress
from benchmark.llm import services as llm_services
from benchmark.llm.client import ModelNotConfigured
from benchmark.models import (
    Item,
    Job,
    Origin,
    Plan,
    Project,
    Response,
    TaxonomyTerm,
    TermKind,
)
from benchmark.plans.parse import parse_plan
from benchmark.typing import User

log = logging.getLogger(__name__)

MAX_QUERIES = 20
GT_KEY = "gt"
MAX_EXAMPLES = 5
ACTIONS = ("keep", "edit", "reject")
#: Which of a benchmark kind's offers each kind of draft is (``BenchmarkKind.offers``).
KIND_OFFERS: dict[str, str] = {
    DraftKind.QUERIES: "draft_queries",
    DraftKind.ANSWER: "draft_answer",
    DraftKind.RUBRIC: "draft_rubric",
    DraftKind.PLAN: "draft_plan",
}


# --------------------------------------------------------------------------- which drafts fit


def draft_kind_fits(*, project: Project, kind: str) -> bool:
    """Whether ``kind`` of draft is offered for the project's benchmark."""
    offer = KIND_OFFERS.get(kind)
    return offer is not None and bool(getattr(project.benchmark.offers, offer))


def _require_fit(project: Project, kind: str) -> None:
    if not draft_kind_fits(project=project, kind=kind):
        messages: dict[str, str] = {
            DraftKind.QUERIES: "drafting queries is for ATP-Bench projects",
            DraftKind.ANSWER: "drafting an answer is for projects of interleaved answers",
            DraftKind.RUBRIC: "drafting a rubric is for LLM-I projects",
            DraftKind.PLAN: "drafting a plan is for m&m's projects",
        }
        raise ValidationFailed(messages.get(kind, f"kind: unknown kind of draft {kind!r}"))


def _cache_mode(project: Project) -> str | None:
    """Drafting asks afresh each time (a recorded answer would give the same candidates
    again), unless the project replays recorded answers only."""
    try:
        resolved = llm_services.model_resolve(project=project)
    except ModelNotConfigured:
        return None  # model_call_start says what is wrong
    if resolved is None or resolved.cache_mode == "replay":
        return None
    return "off"


def _start(
    *,
    project: Project,
    user: User,
    kind: str,
    prompt: str,
    item: Item | None = None,
    params: dict[str, Any] | None = None,
) -> ModelDraft:
    with transaction.atomic():
        draft = ModelDraft.objects.create(
            project=project, item=item, kind=kind, params=params or {}, created_by=user
        )
        draft.job = llm_services.model_call_start(
            project=project,
            user=user,
            item=item,
            purpose=draft.purpose,
            prompt=prompt,
            mode=_cache_mode(project),
            kind=MODEL_DRAFT_KIND,
            extra={"draft_id": draft.pk},
        )
        draft.save(update_fields=["job"])
    return draft


# --------------------------------------------------------------------------- starting


def _intent_term(project: Project, category: str, intent: str) -> TaxonomyTerm:
    if project.taxonomy_id is None:
        raise ValidationFailed("category: the project has no taxonomy to draft queries for")
    terms = TaxonomyTerm.objects.filter(taxonomy_id=project.taxonomy_id)
    cat = terms.filter(kind=TermKind.CATEGORY, name=category).first()
    if cat is None:
        raise ValidationFailed(f"category: {category!r} is not a category of the taxonomy")
    term = (
        terms.filter(kind=TermKind.INTENT, name=intent, parent=cat).first()
        or terms.filter(kind=TermKind.INTENT, name=intent, parent__isnull=True).first()
    )
    if term is None:
        raise ValidationFailed(f"intent: {intent!r} is not an intent of category {category!r}")
    return term


def draft_queries_start(
    *, project: Project, user: User, category: str, intent: str, n: int
) -> ModelDraft:
    """Ask the project's model for ``n`` (1..20) candidate queries of a category and intent
    of the project's taxonomy (ATP-Bench §4.1)."""
    permissions.require(user=user, project=project, action="edit")
    _require_fit(project, DraftKind.QUERIES)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_QUERIES:
        raise ValidationFailed(f"n: ask for 1 to {MAX_QUERIES} queries")
    category, intent = (category or "").strip(), (intent or "").strip()
    if not category:
        raise ValidationFailed("category: choose a category")
    if not intent:
        raise ValidationFailed("intent: choose an intent")
    term = _intent_term(project, category, intent)
    examples = list(
        Item.objects.filter(project=project, category=category, intent=intent)
        .exclude(query="")
        .order_by("-id")
        .values_list("query", flat=True)[:MAX_EXAMPLES]
    )
    prompt = prompts.queries_prompt(
        category=category,
        intent=intent,
        n=n,
        description=" ".join((term.description or "").split()),
        examples=[" ".join(e.split())[:300] for e in examples],
    )
    return _start(
        project=project,
        user=user,
        kind=DraftKind.QUERIES,
        prompt=prompt,
        params={"category": category, "intent": intent, "n": n},
    )


def _tools(project: Project) -> list[dict[str, Any]]:
    tools = project.toolset.tools.order_by("position", "name")
    return [dict(t) for t in tools.values("name", "description", "parameters", "output_names")]


def _image_constraint(item: Item) -> str:
    value = (item.constraints or {}).get("image_num")
    if value is None:
        return ""
    return (
        f"Image-number constraint: image_num = {value} (-1: no images; 0: any number; n: "
        "exactly n images; 99 or Inf: at least one). Respect it."
    )


def draft_item_start(*, item: Item, user: User, kind: str) -> ModelDraft:
    """Ask the project's model to draft the item's answer (tool tags), rubric (ten criteria)
    or plan (m&m's JSON form) from its query (and documents)."""
    project = item.project
    permissions.require(user=user, project=project, action="edit", item=item)
    if kind == DraftKind.QUERIES:
        raise ValidationFailed("kind: queries are drafted for the project, not for an item")
    _require_fit(project, kind)
    query = (item.query or "").strip()
    if not query:
        raise ValidationFailed("query: the item has no query to draft from; write it first")
    if kind == DraftKind.ANSWER:
        prompt = prompts.answer_prompt(
            tag=project.benchmark.answer_tag_form,
            query=query,
            documents=[d for d in item.documents or [] if isinstance(d, dict)],
            tools=prompts.tool_lines(_tools(project)),
            image_constraint=_image_constraint(item),
        )
    elif kind == DraftKind.RUBRIC:
        prompt = prompts.rubric_prompt(query=query)
    else:
        prompt = prompts.plan_prompt(
            query=query,
            tools=prompts.tool_lines(_tools(project), with_io=True),
            inputs=[str(r.get("path") or "") for r in item.image_refs or [] if r.get("path")],
        )
    return _start(project=project, user=user, kind=kind, prompt=prompt, item=item)


# --------------------------------------------------------------------------- the runner


def _fail(draft_id: int, message: str) -> None:
    ModelDraft.objects.filter(pk=draft_id).update(status=DraftStatus.FAILED, error=message[:2000])


def _save_answer(draft: ModelDraft, user: User, text: str) -> dict[str, Any]:
    item = draft.item
    assert item is not None
    response, _ = Response.objects.get_or_create(
        item=item, key=GT_KEY, defaults={"origin": Origin.GROUND_TRUTH, "text": ""}
    )
    response.item = item
    base = ResponseVersion.objects.filter(response=response).aggregate(n=Max("number"))["n"] or 1
    version = tag_services.response_save_version(
        response=response,
        user=user,
        text=text,
        base_number=base,
        decisions=[],
        note=f"drafted by {draft.model}"[:200],
    )
    return {"response": response.pk, "number": version.number, "base": base}


def _save_plan(draft: ModelDraft, user: User, answer: str) -> tuple[list[Any], dict[str, Any]]:
    item = draft.item
    assert item is not None
    names = list(draft.project.toolset.tools.values_list("name", flat=True))
    parsed = parse_plan(answer, plan_format="json", tool_names=names)
    if not parsed.steps:
        problem = parsed.findings[0].message if parsed.findings else "no step"
        raise DraftParseError(f"the reply is not a plan in JSON form ({problem})")
    steps = _without_nul(parsed.to_json())
    plan = plan_save(item=item, user=user, steps=steps, note=f"drafted by {draft.model}")
    number = _plan_latest(plan)
    # ``base``: the version the draft was saved on top of (None: the draft made the plan).
    base = number - 1 if number and number > 1 else None
    return steps, {"plan": plan.pk, "key": plan.key, "number": number, "base": base}


def _plan_latest(plan: Plan) -> int | None:
    return PlanVersion.objects.filter(item_id=plan.item_id, key=plan.key).aggregate(
        n=Max("number")
    )["n"]


def _without_nul(value: Any) -> Any:
    """``value`` (parsed from a model's JSON) with every NUL character left out of its texts."""
    return json_strings_map(value, lambda text: text.replace("\x00", ""))


def _apply(draft: ModelDraft, user: User, answer: str) -> list[DraftCandidate]:
    """The candidates of the model's answer (and, for answers and plans, what was saved).
    A NUL character in the answer (or written ``\\u0000`` in its JSON) is left out of them:
    people read and edit these texts (a form refuses NUL); the model call keeps the answer
    exactly as it came."""
    answer = answer.replace("\x00", "")
    if draft.kind == DraftKind.QUERIES:
        queries = _without_nul(parse_queries(answer, n=int(draft.params.get("n") or MAX_QUERIES)))
        return [DraftCandidate(draft=draft, position=n, content=q) for n, q in enumerate(queries)]
    if draft.kind == DraftKind.RUBRIC:
        criteria = _without_nul(parse_rubric(answer))
        return [DraftCandidate(draft=draft, position=0, content=criteria, item=draft.item)]
    if draft.kind == DraftKind.ANSWER:
        text = parse_answer(answer)
        saved = _save_answer(draft, user, text)
        return [
            DraftCandidate(draft=draft, position=0, content=text, item=draft.item, saved_as=saved)
        ]
    steps, saved = _save_plan(draft, user, answer)
    return [DraftCandidate(draft=draft, position=0, content=steps, item=draft.item, saved_as=saved)]


def model_draft_job(*, job: Job, progress: Progress) -> dict[str, Any]:
    """The ``model_draft`` kind's runner: the model call (recorded as a ModelCall row), then
    the answer read into candidates. Running it again on a draft that has its candidates
    changes nothing."""
    draft_id = int(job.params.get("draft_id") or 0)
    draft = ModelDraft.objects.select_related("project", "item", "created_by").filter(pk=draft_id)
    found = draft.first()
    if found is None:
        raise DomainError("the draft this job was for no longer exists")
    if found.status == DraftStatus.READY:
        return {"draft_id": found.pk, "candidates": found.candidates.count(), "kind": found.kind}
    ModelDraft.objects.filter(pk=draft_id).update(job=job, status=DraftStatus.PENDING, error="")
    try:
        result = llm_services.model_call_job(job=job, progress=progress)
    except DomainError as exc:
        _fail(draft_id, f"the model call failed: {exc.message}")
        raise
    except Exception:
        _fail(draft_id, "the model call did not finish")
        raise
    found.model = str(result.get("model") or "")[:200]
    found.call_id = result.get("model_call_id")
    user = job.created_by or found.created_by
    if user is None:
        raise DomainError("the user who asked for the draft no longer exists")
    try:
        with transaction.atomic():
            candidates = _apply(found, user, str(result.get("answer") or ""))
            DraftCandidate.objects.bulk_create(candidates)
            found.status = DraftStatus.READY
            found.error = ""
            found.job = job
            found.save(update_fields=["model", "call", "status", "error", "job"])
    except DraftParseError as exc:
        message = f"The model's reply could not be read: {exc}."
        ModelDraft.objects.filter(pk=draft_id).update(model=found.model, call=found.call_id)
        _fail(draft_id, message)
        raise DomainError(message) from exc
    except DomainError as exc:
        ModelDraft.objects.filter(pk=draft_id).update(model=found.model, call=found.call_id)
        _fail(draft_id, f"the draft could not be saved: {exc.message}")
        raise
    except Exception:
        ModelDraft.objects.filter(pk=draft_id).update(model=found.model, call=found.call_id)
        _fail(draft_id, "the draft could not be saved (an unexpected error, logged)")
        raise
    return {
        **result,
        "draft_id": found.pk,
        "kind": found.kind,
        "candidates": len(candidates),
    }


# --------------------------------------------------------------------------- deciding


def _clean_query(text: Any) -> str:
    query = str(text or "").replace("\r\n", "\n").strip()
    if not query:
        raise ValidationFailed("query: write the query (or reject the candidate)")
    if len(query) > 5_000:
        raise ValidationFailed(f"query: at most 5000 characters (this has {len(query)})")
    return query


def _clean_rubric(value: Any) -> list[str]:
    if not isinstance(value, list | tuple) or len(value) != RUBRIC_SIZE:
        raise ValidationFailed(f"rubric: give all {RUBRIC_SIZE} criteria r1..r{RUBRIC_SIZE}")
    out = []
    for n, text in enumerate(value, start=1):
        criterion = " ".join(str(text or "").split())
        if not criterion:
            raise ValidationFailed(f"r{n}: write the criterion")
        if len(criterion) > 1_000:
            raise ValidationFailed(f"r{n}: at most 1000 characters")
        out.append(criterion)
    return out


def _reject_answer(candidate: DraftCandidate, user: User) -> dict[str, Any]:
    """Put the answer back as it was before the draft, if nobody saved on top of it."""
    saved = dict(candidate.saved_as or {})
    response = Response.objects.select_related("item__project").get(pk=saved["response"])
    latest = ResponseVersion.objects.filter(response=response).aggregate(n=Max("number"))["n"]
    if latest != saved.get("number"):
        raise Conflict(
            f"version {latest} of the answer was saved after the draft; reject nothing, "
            "and change the answer in the tag editor instead"
        )
    version = tag_services.response_revert(
        response=response,
        user=user,
        number=int(saved.get("base") or 1),
        base_number=latest,
        note=f"drafted answer (version {latest}) rejected",
    )
    return {**saved, "reverted_as": version.number}


def _reject_plan(candidate: DraftCandidate, user: User) -> dict[str, Any]:
    """Put the plan back as it was before the draft (``plan_revert``, so the plan editor's
    rules and history apply), if nobody saved on top of it. A draft that made the plan (no
    earlier version) has nothing to put back: the rejection is recorded, the plan stays for
    the annotator to rewrite in the plan editor."""
    saved = dict(candidate.saved_as or {})
    plan = (
        Plan.objects.select_related("item__project").filter(pk=int(saved.get("plan") or 0)).first()
    )
    if plan is None:
        raise Conflict("the drafted plan was removed since; there is nothing to reject")
    number, base = saved.get("number"), saved.get("base")
    if not number or not base:
        return {**saved, "reverted_as": None}
    latest = _plan_latest(plan)
    if latest is None or latest != number:
        raise Conflict(
            f"version {latest} of the plan was saved after the draft; reject nothing, "
            "and change the plan in the plan editor instead"
        )
    plan_revert(
        plan=plan,
        user=user,
        number=int(base),
        base_number=latest,
        note=f"drafted plan (version {latest}) rejected",
    )
    return {**saved, "reverted_as": latest + 1}


def candidate_decide(
    *, candidate: DraftCandidate, user: User, action: str, content: Any = None
) -> DraftCandidate:
    """Keep, edit or reject one candidate.

    * queries: keep or edit makes a draft item (provenance "drafted by <model>") with the
      draft's category and intent; ``content`` is the edited query.
    * rubric: keep or edit writes the ten criteria to the item; ``content`` is the edited list.
    * answer, plan: already saved as a version when drafted; keep and edit record the
      decision (edit: the annotator goes on in the tag or plan editor); reject of an answer
      or a plan puts back the version before the draft (409 if someone saved since).

    A candidate is decided once: a second decision answers 409 naming who decided."""
    draft = candidate.draft
    project = draft.project
    permissions.require(user=user, project=project, action="edit", item=draft.item)
    if action not in ACTIONS:
        raise ValidationFailed("action: keep, edit or reject")
    with transaction.atomic():
        locked = DraftCandidate.objects.select_for_update().get(pk=candidate.pk)
        if locked.status != CandidateStatus.PENDING:
            who = locked.decided_by.get_username() if locked.decided_by else "someone"
            raise Conflict(f"this candidate was already {locked.status} by {who}")
        status = {"keep": CandidateStatus.KEPT, "edit": CandidateStatus.EDITED}.get(
            action, CandidateStatus.REJECTED
        )
        final: Any = None
        provenance = f"drafted by {draft.model or 'a model'}"[:200]
        if draft.kind == DraftKind.QUERIES and action != "reject":
            final = locked.content if action == "keep" else _clean_query(content)
            if final == locked.content:
                status = CandidateStatus.KEPT
            locked.item = item_create(
                project=project,
                user=user,
                data={
                    "query": final,
                    "category": draft.params.get("category", ""),
                    "intent": draft.params.get("intent", ""),
                },
                provenance=provenance,
            )
        elif draft.kind == DraftKind.RUBRIC and action != "reject":
            final = locked.content if action == "keep" else _clean_rubric(content)
            if final == locked.content:
                status = CandidateStatus.KEPT
            assert draft.item is not None
            item_update(
                item=draft.item,
                user=user,
                changes={"rubric": [{"key": f"r{n}", "text": t} for n, t in enumerate(final, 1)]},
                base_version=None,
                note=provenance,
            )
        elif draft.kind == DraftKind.ANSWER and action == "reject":
            locked.saved_as = _reject_answer(locked, user)
        elif draft.kind == DraftKind.PLAN and action == "reject":
            locked.saved_as = _reject_plan(locked, user)
        elif action != "reject":
            final = locked.content
        locked.status = status
        locked.final = final
        locked.decided_by = user
        locked.decided_at = timezone.now()
        locked.full_clean(exclude=["draft", "item", "decided_by"])
        locked.save()
    return locked
