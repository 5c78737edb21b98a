"""What a model judge declares, once: :class:`JudgeSpec`.

A judge is one spec object (a module in this package and a line in ``__init__``): its name and
label; what it rates (a :class:`~review.judges.specs.subjects.Subject`: model answers, plans,
or Agentic-MME run checkpoints); the benchmark formats it applies to; its prompt templates
(``benchmark.judge_prompts``); how it calls the model (the calls of one thing it rates, in one or two
stages, and the parser of each call's label); how its judgments aggregate into one thing's
scores and per-model figures; its report columns; its partials (the result of one thing, the
definitions of its figures, extra figure tables); and how its figures meet people's (human
evaluation scales, judgment tasks it can rate alongside annotators).

The runner (``review.judges.services``), the reports (``review.judges.selectors`` and
``reports``), the pages, the settings page, human evaluation and agreement ask the spec; none of
them names a judge.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from benchmark.judge_prompts import Attempt, Call, JudgeOutputError, Judgment, Template
from benchmark.judge_prompts.examples import WorkedExample, examples_block

if TYPE_CHECKING:
    from annotation.judgment_tasks.models import JudgmentTask
    from benchmark.models import Project
    from review.judges.models import JudgeRun
    from review.judges.specs.subjects import Subject


@dataclass(frozen=True)
class Column:
    """One per-model figure: its key in the summary, how the page names and prints it, and
    which way it ranks (MI: fewer missed images is better)."""

    name: str
    label: str
    unit: str = ""
    digits: int = 2
    lower_is_better: bool = False


#: The counts after the figures in a run's table, for a judge that declares none.
ANSWERS_COUNTS = (Column("n", "Answers"), Column("excluded", "Excluded"))


def missing(label: str) -> Judgment[Any]:
    """The judgment of a call that was never made (or not stored)."""
    return Judgment(label=label, value=None, attempts=(Attempt(raw="", error="not run"),))


def _no_parser(label: str) -> Callable[[str], Any]:
    def parse(raw: str) -> Any:
        raise JudgeOutputError(f"this judge makes no call labelled {label!r}")

    return parse


class JudgeSpec:
    """One model judge. Subclass it in the judge's own module, set the attributes, override
    the hooks it needs, and register an instance (``review.judges.specs``)."""

    #: The stored name (``JudgeRun.judge``, ``manage.py judge --judge``): at most 20 characters.
    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    #: What one judgment is about (``subjects.ANSWERS``, ``PLANS``, ``CHECKPOINTS``).
    rates: ClassVar[Subject]
    #: The benchmark formats (``DataFormat`` values) whose projects this judge applies to.
    formats: ClassVar[tuple[str, ...]] = ()
    #: The built-in prompt templates, in the order its calls use them.
    templates: ClassVar[tuple[Template, ...]] = ()
    #: Whether a project may edit those templates on the judge settings page.
    project_templates: ClassVar[bool] = True
    #: Call label -> how the pages name that agent ("precision" -> "Precision Inspector").
    agents: ClassVar[Mapping[str, str]] = {}
    #: Template id -> the agent its system text must name (checked when a project edits it).
    agent_templates: ClassVar[Mapping[str, str]] = {}
    #: True: run as a judge run by the judge runner; False: its calls are made elsewhere
    #: (``runs_in`` says where).
    runnable: ClassVar[bool] = True
    runs_in: ClassVar[str] = ""
    #: It judges two models' answers against each other (a run's selection names the two
    #: models and the pairs): started from "Compare two models", not with one model's answers
    #: (the "Judge answers" page, an evaluation's judges, the leaderboard's columns).
    compares_models: ClassVar[bool] = False
    #: The per-model figures, headline first; the counts after them; extra per-model columns
    #: shown in the spec's own figures partial (ATP-Bench's sub-check shares).
    columns: ClassVar[tuple[Column, ...]] = ()
    count_columns: ClassVar[tuple[Column, ...]] = ANSWERS_COUNTS
    sub_columns: ClassVar[tuple[Column, ...]] = ()
    figures_heading: ClassVar[str] = "Figures per model"
    #: Templates (partials): one thing's result on the run page (by default its scores as a
    #: list), the definitions of the figures, and (optional) what the figures table does not
    #: show, the overall figure.
    result_template: ClassVar[str] = "review/judges/_scores.html"
    definitions_template: ClassVar[str] = ""
    figures_template: ClassVar[str] = ""
    overall_template: ClassVar[str] = ""
    #: The run records the project's LLM-I reward weights and its pages state them.
    uses_weights: ClassVar[bool] = False
    #: The answers' released rubric scores are shown beside this judge's.
    released_scores: ClassVar[bool] = False
    #: It scores rubric criteria of answers: people's "score the criteria" tasks compare with
    #: it unit by unit.
    rates_criteria: ClassVar[bool] = False
    #: Human evaluation: per scale key, per human figure, (this judge's per-model figure, the
    #: per-answer score in its report or None: per model only).
    human_eval: ClassVar[Mapping[str, Mapping[str, tuple[str, str | None]]]] = {}

    # ------------------------------------------------------------------ calls

    def parsers(self, subject: Any) -> Mapping[str, Callable[[str], Any]]:
        """The strict parser of each call label this judge makes for ``subject``."""
        return {}

    def parser(self, label: str, subject: Any) -> Callable[[str], Any]:
        """The strict parser of a call's output, by the call's label."""
        return self.parsers(subject).get(label) or self.label_parser(label) or _no_parser(label)

    def label_parser(self, label: str) -> Callable[[str], Any] | None:
        """The parser of labels ``parsers`` does not list (rubric criteria "r1", "r2"...)."""
        return None

    def first_call_count(self, subject: Any) -> int:
        """How many calls ``first_calls`` makes, without building them."""
        raise NotImplementedError

    def first_calls(
        self, subject: Any, model: str, templates: Mapping[str, Template]
    ) -> list[Call]:
        """The calls of one thing that need no other call's result."""
        raise NotImplementedError

    #: Calls made after the first stage (``later_calls``) at most per thing.
    later_call_count: ClassVar[int] = 0

    def later_calls(
        self,
        subject: Any,
        judgments: Mapping[str, Judgment[Any]],
        model: str,
        templates: Mapping[str, Template],
    ) -> list[Call]:
        """The calls of one thing that read the first stage's ``judgments`` (by label)."""
        return []

    def run_settings(self, project: Project) -> dict[str, Any]:
        """What a new run records besides its templates (``JudgeRun.weights``)."""
        return {}

    # ------------------------------------------------------------------ aggregation

    def scores(
        self, subject: Any, judgments: Mapping[str, Judgment[Any]], run: JudgeRun
    ) -> tuple[Any, dict[str, Any]]:
        """One thing's aggregated value (what ``figures`` takes) and its scores as the report
        prints them."""
        raise NotImplementedError

    def figures(self, values: Sequence[Any]) -> dict[str, Any]:
        """Per-model (or per-source) figures over the values of ``scores``; holds ``n`` and
        ``excluded``."""
        raise NotImplementedError

    def summary_figures(
        self, values: Sequence[Any], models: Mapping[str, Mapping[str, Any]], run: JudgeRun
    ) -> dict[str, Any]:
        """What the run's summary holds besides ``models``: by default the answers excluded,
        all models."""
        return {"excluded": sum(m["excluded"] for m in models.values())}

    def run_extra(self, run: JudgeRun, summary: Mapping[str, Any]) -> dict[str, Any]:
        """What the run's page shows besides its stored figures, read when the page is drawn
        (``overall_template`` gets it as ``extra``): figures against people's ratings or other
        runs that may have come since the run ended. Nothing by default."""
        return {}

    def result(
        self,
        subject: Any,
        judgments: Mapping[str, Judgment[Any]],
        rows: Mapping[str, Any],
        run: JudgeRun,
    ) -> dict[str, Any]:
        """What ``result_template`` shows of one thing (``rows``: its stored calls by label);
        by default its ``scores``."""
        return {"scores": self.scores(subject, judgments, run)[1]}

    # ------------------------------------------------------------------ people

    def rates_task(self, task: JudgmentTask) -> bool:
        """This judge rates the units of ``task`` on its scale (agreement: the judge as a
        rater)."""
        return False

    def rater_run(self, run: JudgeRun) -> bool:
        """A finished run of this judge can rate alongside the task's people."""
        return True

    def rater_values(self, run: JudgeRun) -> dict[str, Any]:
        """``{unit key: value or None}`` of a run, on the units ``rates_task`` accepts."""
        return {}

    def checkpoint_answer(self, cp: Mapping[str, Any]) -> tuple[bool, Any]:
        """For a judge that rates agent runs' checkpoints while runs are scored (the
        Agentic-MME S and V judges): whether it answered the checkpoint ``cp`` of a stored
        run score (``RunScore.to_dict()``), and its answer. Other judges answer none."""
        return False, None

    # ------------------------------------------------------------------ worked examples

    def call_unit(self, subject: Any, call: Call) -> str:
        """The unit people's judgments name for what ``call`` rates (``response:<id>:<label>``
        by default), or "" when people rate no such unit. A held-back run makes only the calls
        whose unit is in its set."""
        return f"{self.rates.fk}:{subject.pk}:{call.label}"

    def worked_example_answer(self, value: Any) -> str:
        """People's ``value`` written as this judge is asked to answer."""
        return str(value)

    def worked_example_input(self, unit: str, project: Project) -> str:
        """A short summary of what the judge is shown for ``unit`` (read from the project)."""
        return f"unit {unit}"

    def check_example_input(self, cp: Mapping[str, Any], detail: Mapping[str, Any]) -> str:
        """For a judge that answers checkpoints while runs are scored: a short summary of
        what it is shown for the checkpoint ``cp`` (``detail``: the stored score's)."""
        return str(cp.get("description") or cp.get("id") or "")

    def check_example_answer(self, people: Any, cp: Mapping[str, Any]) -> str:
        """For such a judge: the reviewers' answer (1 / 0) to ``cp`` written as it answers."""
        return self.worked_example_answer(people)

    def worked_examples_templates(self) -> tuple[str, ...]:
        """The ids of the templates that get the worked examples (by default every template
        the project may edit)."""
        return tuple(t.id for t in self.templates) if self.project_templates else ()

    def worked_examples_block(self, cases: Sequence[WorkedExample]) -> str:
        """The text the worked examples add to a template (``benchmark.judge_prompts.examples``)."""
        return examples_block(cases)

    # ------------------------------------------------------------------ reports people rate

    #: Call label -> the id of the template of the agent whose reports people rate 0-2 in
    #: "Rate the judge" tasks (``review.rate_judge``). A reviewer's correction of such a
    #: report (the agent's output as it should have been) becomes a worked example of that
    #: agent's template only (``review.agreement.judge_examples.reports``).
    report_templates: ClassVar[Mapping[str, str]] = {}

    def report_verdict(self, label: str, value: Any) -> str | None:
        """The verdict of the agent ``label`` in its parsed report ``value`` (what ``parser``
        gives), as text: two reports with the same text give the same verdict. None when the
        report has no value."""
        return None

    def held_back_call_units(self, units: Sequence[str]) -> list[str]:
        """The call units a held-back run makes so that the reports ``units`` are made (a
        later agent needs the reports it reads): by default ``units`` themselves."""
        return sorted(set(units))

    def __repr__(self) -> str:
        return f"<judge {self.name}>"
