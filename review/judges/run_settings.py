"""What a judge run uses: the project's current text of each template (or the built-in
template) and the LLM-I reward weights. The judge runner and ``judge_run_create`` call these
(the caller has checked the user's permission on the project); the judge settings feature
(``review.judge_settings``) edits them and shows them on its page.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import OuterRef, Subquery

from benchmark.exceptions import DomainError
from benchmark.judge_prompts import Template
from benchmark.judge_prompts import llmi as llmi_judge
from benchmark.models import Project
from review.judges.models import JudgeTemplateVersion, JudgeWeights
from review.judges.specs import judge_spec


def builtin_templates(judge: str) -> tuple[Template, ...]:
    """The built-in templates of a judge, in the order its calls use them."""
    return judge_spec(judge).templates


def template_of_version(row: JudgeTemplateVersion | None, builtin: Template) -> Template:
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
        return {t.id: template_of_version(rows.get(t.id), t) for t in builtins}
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
