"""What a judge rates (``JudgeSpec.rates``): model answers, plans, or the checkpoints of an
Agentic-MME agent run. A subject knows where a run's calls are stored (a ``JudgeCall`` per
answer, a ``PlanJudgeCall`` per plan), which of the project's things a run judges, how they are
ordered, named and grouped ("source": the answering model, or "ground truth"), and how the
pages word them. The judge runner, the reports and the pages work through it for every judge.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count, Model, QuerySet

from benchmark.models import ItemStatus, Origin, Plan, Project, Response
from review.judges.models import CallRecord, JudgeCall, JudgeRun, PlanJudgeCall

GROUND_TRUTH = "ground truth"


class Subject:
    """The things one kind of judge rates. Judges that rate the same things share one."""

    key: str = ""
    noun: str = ""
    plural: str = ""
    #: The table heading of a source (the answering model, or where a plan came from).
    source_header: str = "Model"
    #: What a run with no models chosen judges ("every model", "ground truth").
    everything: str = ""
    all_sources: str = "all models"
    #: The partial that shows one thing with its judge's result (``JudgeSpec.result_template``).
    article_template: str = ""
    #: Answer files can be uploaded (and imported) when a run starts.
    uploads: bool = False
    #: The project's ground truth is one of the sources a run judges (plans).
    ground_truth_source: bool = False
    #: Where a run's calls are stored: the model, its foreign key to the thing, the run's
    #: related name. None: the calls are not stored as judge calls (made during run scoring).
    call_model: type[CallRecord] | None = None
    fk: str = ""
    related: str = ""

    @property
    def fk_id(self) -> str:
        return f"{self.fk}_id"

    def calls(self, run: JudgeRun) -> QuerySet[Any]:
        """The run's stored calls."""
        return getattr(run, self.related).all()  # type: ignore[no-any-return]

    def call_row(self, *, run: JudgeRun, thing: Model, key: str, **fields: Any) -> CallRecord:
        model: type[Any] | None = self.call_model
        assert model is not None
        return model(run=run, key=key, **{self.fk: thing}, **fields)  # type: ignore[no-any-return]

    def to_judge(self, *, project: Project, models: Sequence[str] = ()) -> list[Any]:
        raise NotImplementedError

    def run_selection(self, *, project: Project, selection: Mapping[str, Any]) -> Mapping[str, Any]:
        """What a new run records as its ``selection``: ``selection`` with whatever it leaves
        to be chosen when the run starts filled in (by default nothing), so the run reads the
        same things for as long as it exists."""
        return selection

    def run_things(self, *, project: Project, selection: Mapping[str, Any]) -> list[Any]:
        """What a run with this ``selection`` (``JudgeRun.selection``) judges: by default
        ``to_judge`` of its ``models``."""
        return self.to_judge(project=project, models=selection.get("models") or [])

    def nothing_to_judge(self, models: Sequence[str]) -> str:
        raise NotImplementedError

    def counts(self, *, project: Project) -> tuple[int | None, list[tuple[str, int]]]:
        """For the start form: the ground-truth count (None: not asked) and ``(model, count)``."""
        raise NotImplementedError

    def source_of(self, thing: Any) -> str:
        raise NotImplementedError

    def load(self, ids: Any) -> dict[int, Any]:
        """The things of these ids (a queryset of ids), by id, as the report reads them."""
        raise NotImplementedError

    def run_load(self, *, run: JudgeRun, ids: Any) -> dict[int, Any]:
        """``load`` for one run's report (a subject that reads the run's selection)."""
        return self.load(ids)

    def order(self, thing: Any) -> tuple[Any, ...]:
        raise NotImplementedError

    def report_fields(self, thing: Any) -> dict[str, Any]:
        """What a report entry says of the thing (before its scores)."""
        raise NotImplementedError

    def sources(self, *, run: JudgeRun) -> list[tuple[str, int]]:
        """``(source, things judged)`` of the run."""
        raise NotImplementedError

    def page(self, *, run: JudgeRun, source: str, page: Any, per_page: int) -> Page[Any]:
        """One page of the run's things (of one source, or all) in order; ``object_list``
        holds ``(thing, its stored calls)`` pairs."""
        raise NotImplementedError

    def page_fields(self, thing: Any, rows: list[Any]) -> dict[str, Any]:
        """What the page shows of the thing besides its judge's result."""
        return {"calls": rows, "failed": [row for row in rows if not row.ok]}

    def _with_calls(self, run: JudgeRun, things: list[Any]) -> list[tuple[Any, list[Any]]]:
        rows: dict[int, list[Any]] = defaultdict(list)
        calls = (
            self.calls(run)
            .filter(**{f"{self.fk_id}__in": [t.pk for t in things]})
            .defer("messages")
        )
        for row in calls.order_by("id"):
            rows[getattr(row, self.fk_id)].append(row)
        return [(thing, rows[thing.pk]) for thing in things]

    def __repr__(self) -> str:
        return f"<subject {self.key}>"


# =========================================================================== model answers


def answers_for(*, project: Project, models: Sequence[str] = ()) -> list[Response]:
    """The project's model answers (of the named models, or all), in item order."""
    rows = Response.objects.filter(item__project=project, origin=Origin.MODEL).select_related(
        "item"
    )
    if models:
        rows = rows.filter(model_name__in=list(models))
    return list(rows.order_by("item__position", "item_id", "model_name", "id"))


def model_answer_counts(*, project: Project) -> list[tuple[str, int]]:
    """``(model, number of stored answers)`` of the project's model answers, by name."""
    rows = (
        Response.objects.filter(item__project=project, origin=Origin.MODEL)
        .values("model_name")
        .annotate(n=Count("id"))
        .order_by("model_name")
    )
    return [(r["model_name"], r["n"]) for r in rows]


class Answers(Subject):
    key = "answers"
    noun = "answer"
    plural = "answers"
    everything = "every model"
    article_template = "review/judges/_answer.html"
    uploads = True
    call_model = JudgeCall
    fk = "response"
    related = "calls"

    def to_judge(self, *, project: Project, models: Sequence[str] = ()) -> list[Response]:
        return answers_for(project=project, models=models)

    def nothing_to_judge(self, models: Sequence[str]) -> str:
        which = f" of {', '.join(models)}" if models else ""
        return f"the project has no model answers{which} to judge; import some"

    def counts(self, *, project: Project) -> tuple[int | None, list[tuple[str, int]]]:
        return None, model_answer_counts(project=project)

    def source_of(self, thing: Response) -> str:
        return thing.model_name

    def load(self, ids: Any) -> dict[int, Response]:
        # Each answer once (not once per call), and of it only what the report reads.
        return {
            r.pk: r
            for r in Response.objects.filter(pk__in=ids)
            .select_related("item")
            .defer("raw", "item__raw", "item__documents")
        }

    def order(self, thing: Response) -> tuple[Any, ...]:
        return (thing.item.position, thing.item_id, thing.model_name, thing.pk)

    def report_fields(self, thing: Response) -> dict[str, Any]:
        return {
            "response": thing.pk,
            "item": thing.item.external_id,
            "model": thing.model_name,
            "verified": thing.item.status == ItemStatus.VERIFIED,
        }

    def _judged(self, run: JudgeRun) -> QuerySet[Response]:
        return Response.objects.filter(pk__in=run.calls.values("response_id"))

    def sources(self, *, run: JudgeRun) -> list[tuple[str, int]]:
        rows = self._judged(run).values("model_name").annotate(n=Count("id")).order_by("model_name")
        return [(r["model_name"], r["n"]) for r in rows]

    def page(self, *, run: JudgeRun, source: str, page: Any, per_page: int) -> Page[Any]:
        responses = (
            self._judged(run)
            .select_related("item")
            .order_by("item__position", "item_id", "model_name", "id")
        )
        if source:
            responses = responses.filter(model_name=source)
        current: Page[Any] = Paginator(responses, per_page).get_page(page)
        current.object_list = self._with_calls(run, list(current.object_list))
        return current

    def page_fields(self, thing: Response, rows: list[Any]) -> dict[str, Any]:
        return {
            "response": thing,
            "item": thing.item,
            "model": thing.model_name,
            **super().page_fields(thing, rows),
        }


# =========================================================================== plans


def plans_for(*, project: Project, models: Sequence[str] = ()) -> list[Plan]:
    """The plans a run judges, in item order: ground truth (the item's plan first, then its
    alternatives), or the plans of the named models."""
    plans = Plan.objects.filter(item__project=project).select_related("item")
    if models:
        plans = plans.filter(origin=Origin.MODEL, model_name__in=list(models))
    else:
        plans = plans.filter(origin=Origin.GROUND_TRUTH)
    return list(plans.order_by("item__position", "item_id", "is_alternative", "position", "id"))


def plan_source(plan: Plan) -> str:
    return GROUND_TRUTH if plan.origin == Origin.GROUND_TRUTH else plan.model_name or "model"


def plan_steps(plan: Plan) -> list[dict[str, Any]]:
    """A plan's steps as the page lists them: id, tool and its arguments as JSON text."""
    out = []
    for n, step in enumerate(plan.steps or []):
        if not isinstance(step, dict):
            out.append({"id": n, "name": "", "args": json.dumps(step, ensure_ascii=False)})
            continue
        args = step.get("args")
        out.append(
            {
                "id": step.get("id", n),
                "name": str(step.get("name") or ""),
                "args": json.dumps(args, ensure_ascii=False) if args not in (None, {}) else "",
            }
        )
    return out


_PLAN_ORDER = ("item__position", "item_id", "is_alternative", "position", "id")


class Plans(Subject):
    key = "plans"
    noun = "plan"
    plural = "plans"
    source_header = "Source"
    everything = GROUND_TRUTH
    all_sources = "all sources"
    article_template = "review/judges/_plan.html"
    ground_truth_source = True
    call_model = PlanJudgeCall
    fk = "plan"
    related = "plan_calls"

    def to_judge(self, *, project: Project, models: Sequence[str] = ()) -> list[Plan]:
        return plans_for(project=project, models=models)

    def nothing_to_judge(self, models: Sequence[str]) -> str:
        which = f"plans of {', '.join(models)}" if models else "ground-truth plans"
        return f"the project has no {which} to judge; import some"

    def counts(self, *, project: Project) -> tuple[int | None, list[tuple[str, int]]]:
        """The number of ground-truth plans (items' plans and their alternatives), and
        ``(model, number of plans it predicted)`` by name."""
        plans = Plan.objects.filter(item__project=project)
        ground_truth = plans.filter(origin=Origin.GROUND_TRUTH).count()
        rows = (
            plans.filter(origin=Origin.MODEL)
            .values("model_name")
            .annotate(n=Count("id"))
            .order_by("model_name")
        )
        return ground_truth, [(r["model_name"], r["n"]) for r in rows]

    def source_of(self, thing: Plan) -> str:
        return plan_source(thing)

    def load(self, ids: Any) -> dict[int, Plan]:
        return {p.pk: p for p in Plan.objects.filter(pk__in=ids).select_related("item")}

    def order(self, thing: Plan) -> tuple[Any, ...]:
        return (thing.item.position, thing.item_id, thing.is_alternative, thing.position, thing.pk)

    def report_fields(self, thing: Plan) -> dict[str, Any]:
        return {
            "item": thing.item.external_id,
            "plan": thing.key,
            "model": plan_source(thing),
            "alternative": thing.is_alternative,
        }

    def sources(self, *, run: JudgeRun) -> list[tuple[str, int]]:
        """ "ground truth" first, then the predicting models by name."""
        counts: dict[str, int] = defaultdict(int)
        rows = run.plan_calls.values("plan__origin", "plan__model_name").annotate(
            n=Count("plan", distinct=True)
        )
        for row in rows:
            if row["plan__origin"] == Origin.GROUND_TRUTH:
                counts[GROUND_TRUTH] += row["n"]
            else:
                counts[row["plan__model_name"] or "model"] += row["n"]
        return sorted(counts.items(), key=lambda kv: (kv[0] != GROUND_TRUTH, kv[0]))

    def page(self, *, run: JudgeRun, source: str, page: Any, per_page: int) -> Page[Any]:
        plans = Plan.objects.filter(pk__in=run.plan_calls.values("plan_id"))
        if source == GROUND_TRUTH:
            plans = plans.filter(origin=Origin.GROUND_TRUTH)
        elif source:
            plans = plans.filter(origin=Origin.MODEL, model_name=source)
        current: Page[Any] = Paginator(
            plans.select_related("item").order_by(*_PLAN_ORDER), per_page
        ).get_page(page)
        current.object_list = self._with_calls(run, list(current.object_list))
        return current

    def page_fields(self, thing: Plan, rows: list[Any]) -> dict[str, Any]:
        return {
            "plan": thing,
            "item": thing.item,
            "model": plan_source(thing),
            "steps": plan_steps(thing),
            **super().page_fields(thing, rows),
        }


# =========================================================================== run checkpoints


class Checkpoints(Subject):
    """The checkpoints of an Agentic-MME agent run: judged while the run is scored
    (``review.runs``), the verdicts kept in the run's score, not as judge calls."""

    key = "checkpoints"
    noun = "checkpoint"
    plural = "checkpoints"


ANSWERS = Answers()
PLANS = Plans()
CHECKPOINTS = Checkpoints()


def subject_of(specs: Iterable[Any]) -> Subject:
    """What the given judges rate, when they all rate the same things; answers otherwise (and
    for no judge)."""
    found = {spec.rates for spec in specs}
    return found.pop() if len(found) == 1 else ANSWERS
