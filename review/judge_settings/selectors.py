"""Reading a project's judge settings: the templates a judge run uses (the project's current
text, or the built-in template) and the LLM-I reward weights, and the settings page's data.

``judge_templates_for`` and ``judge_weights_for`` are what the judge runner and
``judge_run_create`` call (the caller has checked the user's permission on the project);
``judge_settings_get`` is the page's read and checks that the user may review the project.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import OuterRef, Subquery

from benchmark import permissions
from benchmark.exceptions import DomainError, Forbidden
from benchmark.judges import Template
from benchmark.judges import llmi as llmi_judge
from benchmark.models import Project
from benchmark.typing import AnyUser
from review.judge_settings.presenters import text_diff
from review.judges.models import JudgeTemplateVersion, JudgeWeights
from review.judges.specs import JudgeSpec, judge_spec, judge_specs


def _editable() -> list[JudgeSpec]:
    """The judges whose templates a project may edit, in the registry's order."""
    return [spec for spec in judge_specs() if spec.project_templates]


def builtin_by_id() -> dict[str, Template]:
    """Every template a project may edit, by id (a template shared by two judges is one
    text), in the judges' order."""
    return {t.id: t for spec in _editable() for t in spec.templates}


def agent_names() -> dict[str, str]:
    """Template id -> the agent its system text must name (each ATP-Bench MAM agent is
    identified by its name in the system message, issue 10)."""
    return {k: v for spec in _editable() for k, v in spec.agent_templates.items()}


@dataclass(frozen=True)
class WeightsPreset:
    name: str
    label: str
    weights: llmi_judge.Weights
    source: str


WEIGHT_PRESETS: dict[str, WeightsPreset] = {
    "equal": WeightsPreset(
        name="equal",
        label="Equal (default)",
        weights=llmi_judge.Weights(),
        source="1/3 each: the default, since issue 10 asks for equal weights unless the "
        "project sets its own.",
    ),
    "paper": WeightsPreset(
        name="paper",
        label="LLM-I paper (0.2 / 0.5 / 0.3)",
        weights=llmi_judge.PAPER_TRAINING_WEIGHTS,
        source="LLM-I §4.1 Setup, “Training”: the reward trade-off coefficients of the "
        "paper's RL training, w_rule = 0.2, w_llm = 0.5, w_mllm = 0.3. The paper reports "
        "its evaluation with separate judges, not with R.",
    ),
}


def builtin_templates(judge: str) -> tuple[Template, ...]:
    """The built-in templates of a judge, in the order its calls use them."""
    return judge_spec(judge).templates


def _as_template(row: JudgeTemplateVersion | None, builtin: Template) -> Template:
    """What a version means: its own text, or (none, or a reset) the built-in template."""
    if row is None or row.is_default:
        return builtin
    return Template(
        id=builtin.id, system=row.system, user=row.user, description=builtin.description
    )


def _newest(project: Project, ids: list[str]) -> dict[str, JudgeTemplateVersion]:
    """The newest version of each template id the project has edited (one query)."""
    newest = (
        JudgeTemplateVersion.objects.filter(
            project=OuterRef("project"), template_id=OuterRef("template_id")
        )
        .order_by("-number")
        .values("number")[:1]
    )
    rows = JudgeTemplateVersion.objects.filter(
        project=project, template_id__in=ids, number=Subquery(newest)
    ).select_related("author")
    return {row.template_id: row for row in rows}


def template_current(*, project: Project, template_id: str) -> JudgeTemplateVersion | None:
    """The newest version of one template in the project (None: never edited)."""
    return _newest(project, [template_id]).get(template_id)


def judge_templates_for(
    *, project: Project, judge: str, versions: Mapping[str, str] | None = None
) -> dict[str, Template]:
    """The templates a run of ``judge`` in ``project`` uses, by id, in the judge's order.

    Without ``versions``: the project's current text of each, or the built-in template where
    the project has none (or was reset to it). With ``versions`` (a run's recorded
    ``{id: version}``): the text of exactly those versions, so a resumed run makes the very
    calls it made before; a DomainError when one of them no longer exists anywhere."""
    builtins = builtin_templates(judge)
    if versions is None:
        rows = _newest(project, [t.id for t in builtins])
        return {t.id: _as_template(rows.get(t.id), t) for t in builtins}
    chosen: dict[str, Template] = {}
    wanted: dict[str, str] = {}
    for builtin in builtins:
        version = versions.get(builtin.id)
        if version is None or version == builtin.version:
            chosen[builtin.id] = builtin
        else:
            wanted[builtin.id] = version
    if wanted:
        stored = JudgeTemplateVersion.objects.filter(
            project=project, template_id__in=list(wanted), version__in=list(wanted.values())
        ).order_by("number")
        found = {r.template_id: r for r in stored if wanted[r.template_id] == r.version}
        for builtin in builtins:
            if builtin.id not in wanted:
                continue
            row = found.get(builtin.id)
            if row is None:
                raise DomainError(
                    f"template {builtin.id} version {wanted[builtin.id]} is no longer stored; "
                    "start a new run"
                )
            chosen[builtin.id] = Template(
                id=builtin.id, system=row.system, user=row.user, description=builtin.description
            )
    return {t.id: chosen[t.id] for t in builtins}


# --------------------------------------------------------------------------- weights


@dataclass(frozen=True)
class ProjectWeights:
    """The weights a run uses now: ``number`` 0 means the default (no project setting)."""

    weights: llmi_judge.Weights
    number: int
    preset: str
    row: JudgeWeights | None = None

    def as_record(self) -> dict[str, Any]:
        """What a JudgeRun records (``JudgeRun.weights``)."""
        return {
            "rule": self.weights.rule,
            "llm": self.weights.llm,
            "mllm": self.weights.mllm,
            "version": self.number,
            "preset": self.preset,
        }


def judge_weights_for(*, project: Project) -> ProjectWeights:
    row = (
        JudgeWeights.objects.filter(project=project)
        .select_related("created_by")
        .order_by("-number")
        .first()
    )
    if row is None:
        return ProjectWeights(weights=llmi_judge.Weights(), number=0, preset="equal")
    weights = llmi_judge.Weights(rule=row.rule, llm=row.llm, mllm=row.mllm)
    return ProjectWeights(weights=weights, number=row.number, preset=row.preset, row=row)


def weights_of_run(record: Mapping[str, Any] | None) -> llmi_judge.Weights:
    """The weights a run recorded; the default (equal) for a run that recorded none."""
    if not record:
        return llmi_judge.Weights()
    return llmi_judge.Weights(
        rule=float(record["rule"]), llm=float(record["llm"]), mllm=float(record["mllm"])
    )


# --------------------------------------------------------------------------- the page


@dataclass
class VersionEntry:
    row: JudgeTemplateVersion
    template: Template
    diff: dict[str, list[tuple[str, str]]]
    previous_label: str


@dataclass
class TemplateEntry:
    builtin: Template
    current: Template
    row: JudgeTemplateVersion | None
    judges: list[str]
    history: list[VersionEntry] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.builtin.id

    @property
    def number(self) -> int:
        return self.row.number if self.row is not None else 0

    @property
    def is_builtin(self) -> bool:
        return self.row is None or self.row.is_default

    @property
    def placeholders(self) -> list[str]:
        return sorted(self.builtin.placeholders)

    @property
    def anchor(self) -> str:
        return "tpl-" + self.builtin.id.replace(".", "-")

    @property
    def agent_name(self) -> str:
        return agent_names().get(self.builtin.id, "")


@dataclass
class JudgeSettings:
    project: Project
    judges: list[dict[str, Any]]
    templates: list[TemplateEntry]
    weights: ProjectWeights
    weights_history: list[JudgeWeights]
    presets: list[WeightsPreset]
    can_edit: bool

    def template(self, template_id: str) -> TemplateEntry | None:
        return next((t for t in self.templates if t.id == template_id), None)


def judge_settings_get(*, user: AnyUser, project: Project) -> JudgeSettings:
    """Everything the settings page shows. Forbidden unless the user may review the project
    (reviewers see it; admins edit it: ``can_edit``)."""
    if not permissions.can(user=user, project=project, action="run_judges"):
        raise Forbidden("Only reviewers and admins see the judge settings.")
    builtin_ids = builtin_by_id()
    rows = list(
        JudgeTemplateVersion.objects.filter(project=project, template_id__in=list(builtin_ids))
        .select_related("author")
        .order_by("template_id", "number")
    )
    by_id: dict[str, list[JudgeTemplateVersion]] = {}
    for row in rows:
        by_id.setdefault(row.template_id, []).append(row)
    used_by: dict[str, list[str]] = {}
    judges = []
    for spec in _editable():
        judges.append(
            {"name": spec.name, "label": spec.label, "templates": [t.id for t in spec.templates]}
        )
        for t in spec.templates:
            used_by.setdefault(t.id, []).append(spec.label)
    entries = []
    for template_id, builtin in builtin_ids.items():
        versions = by_id.get(template_id, [])
        history = []
        previous, previous_label = builtin, "the built-in text"
        for row in versions:
            shown = _as_template(row, builtin)
            if row.is_default:
                # Show the built-in text of the moment it was chosen again.
                shown = Template(id=builtin.id, system=row.system, user=row.user)
            history.append(
                VersionEntry(
                    row=row,
                    template=shown,
                    diff={
                        "system": text_diff(previous.system, shown.system),
                        "user": text_diff(previous.user, shown.user),
                    },
                    previous_label=previous_label,
                )
            )
            previous, previous_label = shown, f"version {row.number}"
        history.reverse()
        current_row = versions[-1] if versions else None
        entries.append(
            TemplateEntry(
                builtin=builtin,
                current=_as_template(current_row, builtin),
                row=current_row,
                judges=used_by.get(template_id, []),
                history=history,
            )
        )
    weights_rows = list(
        JudgeWeights.objects.filter(project=project)
        .select_related("created_by")
        .order_by("-number")
    )
    if weights_rows:
        top = weights_rows[0]
        weights = ProjectWeights(
            weights=llmi_judge.Weights(rule=top.rule, llm=top.llm, mllm=top.mllm),
            number=top.number,
            preset=top.preset,
            row=top,
        )
    else:
        weights = ProjectWeights(weights=llmi_judge.Weights(), number=0, preset="equal")
    return JudgeSettings(
        project=project,
        judges=judges,
        templates=entries,
        weights=weights,
        weights_history=weights_rows,
        presets=list(WEIGHT_PRESETS.values()),
        can_edit=permissions.can(user=user, project=project, action="manage"),
    )
