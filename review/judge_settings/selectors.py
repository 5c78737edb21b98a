"""Reading a project's judge settings for the settings page (``judge_settings_get``, which
checks that the user may review the project), the editable templates and the weight presets.
What a judge run uses (templates and weights) is read by ``review.judges.run_settings``, below
this feature, since the judges run without it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchmark import permissions
from benchmark.exceptions import Forbidden
from benchmark.judge_prompts import Template
from benchmark.judge_prompts import llmi as llmi_judge
from benchmark.models import Project
from benchmark.typing import AnyUser
from review.judge_settings.presenters import text_diff
from review.judges.models import JudgeTemplateVersion, JudgeWeights
from review.judges.run_settings import (
    ProjectWeights,
    template_of_version,
)
from review.judges.specs import JudgeSpec, judge_specs


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
            shown = template_of_version(row, builtin)
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
                current=template_of_version(current_row, builtin),
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
