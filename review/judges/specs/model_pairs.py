"""Model against model, in both orders (``pairwise-models``, ``benchmark.judge_prompts.pairwise``):
two models' answers to the same items, each pair asked twice (model A's answer first, then model
B's); a verdict that flips with the order is a tie. The run's selection names the two models
(``models``: A then B) and the pairs (``pairs``: ``[[A's answer id, B's answer id], ...]``, one
per item, chosen when the run starts: every item both answered, or a human evaluation's pairs
of those two models, ``human_eval_task``).

Figures (``pw.comparison_figures``): A wins, ties and B wins as shares of the pairs with a 95 %
Wilson interval, A's win share (ties as half), the flip rate and the longer-answer rate. The run
page adds, read when it is drawn (``run_extra``): the judge's agreement with people who rated the
same pairs in a human evaluation (Cohen's kappa with a bootstrap interval,
``benchmark.metrics.judge_rater.judge_calibration``), and, when the judge model is model A or
B, its self-preference (``pw.self_preference``) against the other raters of those pairs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from django.core.paginator import Page
from django.db.models import Q, QuerySet

from benchmark.judge_prompts import Call, Judgment, Template
from benchmark.judge_prompts import pairwise as pw
from benchmark.models import DataFormat, JobStatus, Origin, Project, Response
from review.judges.specs.base import Column, JudgeSpec
from review.judges.specs.subjects import Answers

if TYPE_CHECKING:
    from review.judges.models import JudgeRun

#: The people's preference of a human-evaluation pair ("a": the answer shown first), read as
#: the winner when the pair is shown in the comparison's order, and when it is shown swapped.
_SHOWN = {"a": "A", "b": "B", "tie": "tie"}
_SWAPPED = {"a": "B", "b": "A", "tie": "tie"}


def pair_of(key: str) -> tuple[int, int]:
    a, _, b = key.partition(":")
    return int(a), int(b)


def comparison_pairs(*, project: Project, model_a: str, model_b: str) -> list[list[int]]:
    """``[A's answer id, B's answer id]`` for every item of the project both models answered
    (each model's first answer to the item), in item order."""
    rows = (
        Response.objects.filter(
            item__project=project, origin=Origin.MODEL, model_name__in=[model_a, model_b]
        )
        .order_by("item__position", "item_id", "id")
        .values_list("item_id", "model_name", "pk")
    )
    found: dict[int, dict[str, int]] = {}
    for item_id, model, pk in rows:
        found.setdefault(item_id, {}).setdefault(model, pk)
    return [[m[model_a], m[model_b]] for m in found.values() if model_a in m and model_b in m]


class ModelPairs(Answers):
    """Model A's answers, each with B's answer to the same item as ``versus``; a run's calls
    are stored on A's answer."""

    key = "pairs"
    noun = "pair"
    plural = "pairs"
    everything = "two models"
    article_template = "review/judges/model_pairs/_pair.html"
    uploads = False

    def _with_versus(self, run_selection: Mapping[str, Any], things: list[Response]) -> None:
        versus = {int(a): int(b) for a, b in run_selection.get("pairs") or []}
        others = Response.objects.in_bulk([versus[t.pk] for t in things if t.pk in versus])
        for thing in things:
            thing.versus = others.get(versus.get(thing.pk, 0))  # type: ignore[attr-defined]

    def run_selection(self, *, project: Project, selection: Mapping[str, Any]) -> Mapping[str, Any]:
        """Without ``pairs`` (``manage.py judge --judge pairwise-models --model-answers A
        --model-answers B``), the pairs of every item both models answered, chosen now: the
        run's report and figures read its pairs from the selection. ``identical``: A's answers
        whose pair is two identical texts (a tie without a call, listed from here)."""
        models = list(selection.get("models") or [])
        pairs = selection.get("pairs")
        if pairs is None:
            if len(models) != 2 or models[0] == models[1]:
                return selection
            pairs = comparison_pairs(project=project, model_a=models[0], model_b=models[1])
            selection = {**selection, "pairs": pairs}
        if "identical" not in selection:
            ids = {int(pk) for pair in pairs for pk in pair}
            texts = dict(Response.objects.filter(pk__in=ids).values_list("pk", "text"))
            same = [
                int(a)
                for a, b in pairs
                if int(a) in texts
                and int(b) in texts
                and pw.identical(texts[int(a)], texts[int(b)])
            ]
            selection = {**selection, "identical": same}
        return selection

    def run_things(self, *, project: Project, selection: Mapping[str, Any]) -> list[Any]:
        pairs = selection.get("pairs")
        if pairs is None:
            models = list(selection.get("models") or [])
            if len(models) != 2 or models[0] == models[1]:
                return []
            pairs = comparison_pairs(project=project, model_a=models[0], model_b=models[1])
            selection = {**selection, "pairs": pairs}
        ids = [int(a) for a, _ in pairs]
        found = {
            r.pk: r
            for r in Response.objects.filter(pk__in=ids, item__project=project).select_related(
                "item"
            )
        }
        things = [found[pk] for pk in dict.fromkeys(ids) if pk in found]
        self._with_versus(selection, things)
        return [t for t in things if t.versus is not None]  # type: ignore[attr-defined]

    def nothing_to_judge(self, models: Sequence[str]) -> str:
        if len(models) != 2 or models[0] == models[1]:
            return "choose two different models to compare"
        return f"{models[0]} and {models[1]} have answered no item in common"

    def run_load(self, *, run: JudgeRun, ids: Any) -> dict[int, Any]:
        """The pairs with calls and the identical pairs (a tie with none)."""
        things = self.load(ids)
        same = [pk for pk in self._identical(run) if pk not in things]
        if same:
            things.update(self.load(same))
        self._with_versus(run.selection or {}, list(things.values()))
        return things

    def _identical(self, run: JudgeRun) -> list[int]:
        return [int(pk) for pk in (run.selection or {}).get("identical") or []]

    def _judged(self, run: JudgeRun) -> QuerySet[Response]:
        """A's answers of the pairs the run asked about, and of its identical pairs."""
        return Response.objects.filter(
            Q(pk__in=run.calls.values("response_id")) | Q(pk__in=self._identical(run))
        )

    def source_of(self, thing: Response) -> str:
        versus = getattr(thing, "versus", None)
        return f"{thing.model_name} vs {versus.model_name if versus else '?'}"

    def report_fields(self, thing: Response) -> dict[str, Any]:
        versus = getattr(thing, "versus", None)
        return {
            **super().report_fields(thing),
            "versus": versus.pk if versus else None,
            "model_b": versus.model_name if versus else None,
        }

    def sources(self, *, run: JudgeRun) -> list[tuple[str, int]]:
        models = list((run.selection or {}).get("models") or ["?", "?"])
        n = self._judged(run).count()
        return [(f"{models[0]} vs {models[-1]}", n)] if n else []

    def page(self, *, run: JudgeRun, source: str, page: Any, per_page: int) -> Page[Any]:
        current = super().page(run=run, source="", page=page, per_page=per_page)
        self._with_versus(run.selection or {}, [thing for thing, _ in current.object_list])
        return current

    def page_fields(self, thing: Response, rows: list[Any]) -> dict[str, Any]:
        return {**super().page_fields(thing, rows), "versus": getattr(thing, "versus", None)}


PAIRS = ModelPairs()


@dataclass(frozen=True)
class PairValue:
    """One pair's verdict from A's side (None: a call failed) and its key ``"<A>:<B>"``."""

    verdict: pw.PairVerdict | None
    key: str


def _shares(figures: pw.ComparisonFigures) -> dict[str, Any]:
    return {
        "a_win": figures.a_win.value,
        "tie": figures.tie.value,
        "b_win": figures.b_win.value,
        "win_share": figures.win_share.value,
        "flip": figures.flip.value,
        "n": figures.n,
        "excluded": figures.excluded,
    }


class ModelPairsJudge(JudgeSpec):
    name = "pairwise-models"
    label = "Model vs model, both orders"
    rates = PAIRS
    compares_models = True
    formats = (DataFormat.ATP, DataFormat.LLMI)
    templates = (pw.PAIRWISE_TEMPLATE,)
    agents = {pw.AB: "model A's answer first", pw.BA: "model B's answer first"}
    columns = (
        Column("a_win", "A wins", "%"),
        Column("tie", "Ties", "%"),
        Column("b_win", "B wins", "%"),
        Column("flip", "Flipped with the order", "%", lower_is_better=True),
    )
    count_columns = (Column("n", "Pairs"), Column("excluded", "Excluded"))
    figures_heading = "Model A against model B"
    result_template = "review/judges/model_pairs/result.html"
    definitions_template = "review/judges/model_pairs/definitions.html"
    overall_template = "review/judges/model_pairs/overall.html"

    def parsers(self, subject: Response) -> Mapping[str, Callable[[str], Any]]:
        return {pw.AB: pw.parse_preference, pw.BA: pw.parse_preference}

    def first_call_count(self, subject: Response) -> int:
        versus = getattr(subject, "versus", None)
        return 0 if versus is None or pw.identical(subject.text, versus.text) else 2

    def first_calls(
        self, subject: Response, model: str, templates: Mapping[str, Template]
    ) -> list[Call]:
        versus = getattr(subject, "versus", None)
        if versus is None:
            return []
        return pw.pair_calls(
            query=subject.item.query,
            answer=subject.text,
            other=versus.text,
            model=model,
            template=templates[pw.PAIRWISE_TEMPLATE.id],
        )

    def scores(
        self, subject: Response, judgments: Mapping[str, Judgment[Any]], run: JudgeRun
    ) -> tuple[Any, dict[str, Any]]:
        versus = getattr(subject, "versus", None)
        same = versus is not None and pw.identical(subject.text, versus.text)
        verdict = pw.verdict_of(
            dict(judgments),
            answer_length=len(subject.text),
            other_length=len(versus.text) if versus is not None else 0,
            same=same,
        )
        choices = {
            label: (j.value.choice if j.value is not None else None)
            for label, j in judgments.items()
        }
        key = f"{subject.pk}:{versus.pk if versus is not None else 0}"
        return PairValue(verdict=verdict, key=key), {
            "winner": pw.WINNER_OF[verdict.outcome] if verdict else None,
            "flipped": verdict.flipped if verdict else None,
            "a_first": choices.get(pw.AB),
            "b_first": choices.get(pw.BA),
            "identical": same,
        }

    def figures(self, values: Sequence[Any]) -> dict[str, Any]:
        return _shares(pw.comparison_figures([v.verdict for v in values]))

    def summary_figures(
        self, values: Sequence[Any], models: Mapping[str, Mapping[str, Any]], run: JudgeRun
    ) -> dict[str, Any]:
        """The comparison's figures with their intervals, the two models, and each pair's
        winner by key (what people and other runs are compared with)."""
        figures = pw.comparison_figures([v.verdict for v in values])
        chosen = list((run.selection or {}).get("models") or [])
        return {
            **_shares(figures),
            "comparison": figures.as_dict(),
            "model_a": chosen[0] if chosen else "",
            "model_b": chosen[-1] if chosen else "",
            "verdicts": {
                v.key: pw.WINNER_OF[v.verdict.outcome] for v in values if v.verdict is not None
            },
        }

    def result(
        self,
        subject: Response,
        judgments: Mapping[str, Judgment[Any]],
        rows: Mapping[str, Any],
        run: JudgeRun,
    ) -> dict[str, Any]:
        """The verdict and, for each order, the judge's raw output as stored."""
        raw = {
            label: (row.outputs[-1] if row.outputs else row.error) for label, row in rows.items()
        }
        return {
            "scores": self.scores(subject, judgments, run)[1],
            "raw_a_first": raw.get(pw.AB, ""),
            "raw_b_first": raw.get(pw.BA, ""),
        }

    def run_extra(self, run: JudgeRun, summary: Mapping[str, Any]) -> dict[str, Any]:
        """People's agreement with the judge on the pairs they rated, and the judge model's
        self-preference when it is model A or B (see the module's docstring). Kept in
        Django's cache under a key naming all they are computed from (:func:`extra_key`), so
        the bootstrap and the reading of every rating run once per state, not per view."""
        from django.core.cache import cache

        key = extra_key(run, summary)
        kept = cache.get(key)
        if kept is not None:
            return dict(kept)
        extra = extra_compute(run, summary)
        cache.set(key, extra, EXTRA_CACHE_SECONDS)
        return extra


#: How long a run's agreement with people and self-preference stay in Django's cache. The key
#: names everything they are computed from, so a kept value is never stale: a change is a new
#: key.
EXTRA_CACHE_SECONDS = 7 * 24 * 3600
#: Bumped when what they hold or how they are computed changes (old keys are then unread).
EXTRA_CACHE_VERSION = 1


def extra_key(run: JudgeRun, summary: Mapping[str, Any]) -> str:
    """The cache key of :func:`extra_compute`: a digest of the run's verdicts, its two models
    and judge model, the state of the project's human-evaluation ratings of pairs (how many,
    the largest id, the sum of their versions, the latest edit: an added, removed or edited
    rating moves it) and, when the judge model is model A or B, the other judge models'
    finished runs (each with its job: a run's verdicts change only with a new job). One or two
    small queries."""
    import hashlib

    import orjson
    from django.db.models import Count, Max, Sum

    from annotation.judgment_tasks.models import Judgment as PersonJudgment
    from annotation.judgment_tasks.models import UnitKind

    ratings = PersonJudgment.objects.filter(
        task__project_id=run.project_id, task__unit_kind=UnitKind.ANSWER_PAIR
    ).aggregate(n=Count("id"), last=Max("id"), versions=Sum("version"), edit=Max("edited_at"))
    state = [
        EXTRA_CACHE_VERSION,
        run.pk,
        run.model,
        summary.get("model_a"),
        summary.get("model_b"),
        sorted((summary.get("verdicts") or {}).items()),
        [
            ratings["n"],
            ratings["last"],
            ratings["versions"],
            ratings["edit"].isoformat() if ratings["edit"] else None,
        ],
        # Other judge models count only for self-preference (the judge is model A or B).
        list(_other_runs(run).order_by("pk").values_list("pk", "job_id"))
        if _own_side(run, summary)
        else [],
    ]
    digest = hashlib.blake2b(orjson.dumps(state), digest_size=16).hexdigest()
    return f"pairwise-extra:v{EXTRA_CACHE_VERSION}:run{run.pk}:{digest}"


def _own_side(run: JudgeRun, summary: Mapping[str, Any]) -> str:
    """ "A" or "B" when the judge model is model A or B of the comparison, else ""."""
    if run.model == summary.get("model_a"):
        return "A"
    return "B" if run.model == summary.get("model_b") else ""


def extra_compute(run: JudgeRun, summary: Mapping[str, Any]) -> dict[str, Any]:
    """People's agreement and self-preference, computed (what :meth:`ModelPairsJudge.run_extra`
    keeps in the cache)."""
    verdicts: dict[str, str] = dict(summary.get("verdicts") or {})
    people = people_winners(run.project, verdicts)
    extra: dict[str, Any] = {"people": people_agreement(people, verdicts)}
    side = _own_side(run, summary)
    if side and verdicts:
        others = [w for _, _, w in people] + other_runs_winners(run, verdicts)
        extra["self_preference"] = asdict(
            pw.self_preference(side=side, own=list(verdicts.values()), others=others)
        )
        extra["self_model"] = run.model
    return extra


def people_winners(project: Project, verdicts: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """``(pair key, person, winner)`` of every human-evaluation rating of the project on a
    pair the run judged (shown in either order), read in the run's order."""
    from annotation.judgment_tasks.models import Judgment as PersonJudgment
    from annotation.judgment_tasks.models import UnitKind
    from annotation.judgment_tasks.units import pair_parse

    rows = PersonJudgment.objects.filter(
        task__project=project, task__unit_kind=UnitKind.ANSWER_PAIR
    ).values_list("unit", "user__username", "value")
    out = []
    for unit, person, value in rows.iterator(2000):
        try:
            first, second = pair_parse(unit)
        except Exception:  # noqa: BLE001 - a unit that is not a pair is not one of ours
            continue
        if f"{first}:{second}" in verdicts and value in _SHOWN:
            out.append((f"{first}:{second}", person, _SHOWN[value]))
        elif f"{second}:{first}" in verdicts and value in _SWAPPED:
            out.append((f"{second}:{first}", person, _SWAPPED[value]))
    return out


def people_agreement(
    people: list[tuple[str, str, str]], verdicts: Mapping[str, str]
) -> dict[str, Any] | None:
    """The judge against the people's majority per pair: Cohen's kappa with its bootstrap
    interval, percent agreement, pairs compared, ties left out; None when nobody rated."""
    if not people:
        return None
    from benchmark.metrics.judge_rater import judge_calibration  # lazy: NumPy

    report = judge_calibration(people, dict(verdicts), "nominal", ["A", "B", "tie"])
    overall = report["overall"]
    return {
        "kappa": overall["kappa"],
        "percent_agreement": overall["percent_agreement"],
        "n_units": overall["n_units"],
        "n_ratings": len(people),
        "n_people": len({person for _, person, _ in people}),
        "n_ties": report["n_ties"],
        "flagged": overall["flagged"],
        "threshold": report["threshold"],
    }


def _other_runs(run: JudgeRun) -> QuerySet[JudgeRun]:
    """The project's finished runs of the same judge with another judge model."""
    from review.judges.models import JudgeRun as Run

    return (
        Run.objects.filter(
            project_id=run.project_id, judge=run.judge, job__status=JobStatus.SUCCEEDED
        )
        .exclude(pk=run.pk)
        .exclude(model=run.model)
    )


def other_runs_winners(run: JudgeRun, verdicts: Mapping[str, str]) -> list[str]:
    """The winners other judge models gave the same pairs (their finished runs of this judge
    on the project, either order of the two models), read in this run's order. One query."""
    others = _other_runs(run).select_related("job")
    winners = []
    for other in others:
        result = other.job.result if other.job is not None else None
        summary = result.get("summary") if isinstance(result, dict) else None
        theirs = (summary or {}).get("verdicts") if isinstance(summary, dict) else None
        for key, winner in (theirs or {}).items():
            a, b = pair_of(key)
            if key in verdicts:
                winners.append(winner)
            elif f"{b}:{a}" in verdicts:
                winners.append({"A": "B", "B": "A"}.get(winner, winner))
    return winners


JUDGE = ModelPairsJudge()
