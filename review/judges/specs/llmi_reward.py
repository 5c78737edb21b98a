"""The LLM-I judges (``benchmark.judge_prompts.llmi``):

* ``llmi-llm``: one call per answer, text quality and tag quality 1-5 each, normalised as
  (s - 1) / 4; per model ``r_llm`` = the mean of their mean.
* ``llmi-mllm``: the LLM call and the MLLM call on the rendered answer (image quality, task
  relevance, text-image relevance, with the produced images attached): ``r_mllm`` and the
  reward R = w_rule R_rule + w_llm R_llm + w_mllm R_mllm R_rule with the weights the run
  recorded (the project's when it was created; equal, 1/3 each, by default). R_rule is LLM-I's
  image-number rule for the item's constraint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from benchmark.judge_prompts import Call, Judgment, Template
from benchmark.judge_prompts import llmi as llmi_judge
from benchmark.judge_prompts.base import mean
from benchmark.models import DataFormat, Project, Response
from benchmark.tags import parse_image_num
from review.judges.inputs import image_refs, rendered_answer, rendered_images
from review.judges.specs.base import Column, JudgeSpec, missing
from review.judges.specs.subjects import ANSWERS

if TYPE_CHECKING:
    from review.judges.models import JudgeRun

EQUAL_WEIGHTS = llmi_judge.Weights()


def image_num_of(response: Response) -> Any:
    """The item's LLM-I image-number constraint; unconstrained (0) when it has none."""
    value = (response.item.constraints or {}).get("image_num")
    if value is None:
        return 0
    try:
        parse_image_num(value)
    except (TypeError, ValueError):
        return 0
    return value


def reward(
    response: Response, judgments: Mapping[str, Judgment[Any]], weights: llmi_judge.Weights
) -> llmi_judge.AnswerReward:
    return llmi_judge.answer_reward(
        llmi_judge.rule_reward(response.text, image_num_of(response)),
        judgments.get("llm") or missing("llm"),
        judgments.get("mllm") or missing("mllm"),
        weights,
    )


def run_weights(run: JudgeRun) -> llmi_judge.Weights:
    """The weights the run recorded; the default (equal) for a run that recorded none."""
    from review.judges.run_settings import weights_of_run  # lazy: it imports the spec registry

    return weights_of_run(run.weights)


EQUAL = {"rule": 1 / 3, "llm": 1 / 3, "mllm": 1 / 3}


def weights_shown(run: JudgeRun) -> dict[str, Any]:
    """The weights of R = w_rule R_rule + w_llm R_llm + w_mllm R_mllm R_rule as the run's page
    states them: the ones it recorded (``weights``, else ``selection["weights"]``), else equal
    weights. ``default`` says the weights are the equal default; ``preset`` where they came
    from."""
    raw = getattr(run, "weights", None) or (run.selection or {}).get("weights")
    if isinstance(raw, Mapping) and all(
        isinstance(raw.get(k), int | float) and not isinstance(raw.get(k), bool) for k in EQUAL
    ):
        weights = {k: float(raw[k]) for k in EQUAL}
        equal = all(abs(v - 1 / 3) < 1e-9 for v in weights.values())
        return weights | {"default": equal, "preset": str(raw.get("preset") or "")}
    return {**EQUAL, "default": True, "preset": ""}


class LlmJudge(JudgeSpec):
    name = "llmi-llm"
    label = "LLM-I LLM judge"
    rates = ANSWERS
    # Made for LLM-I; it judges any interleaved answer (both tag syntaxes).
    formats = (DataFormat.LLMI, DataFormat.ATP)
    templates: ClassVar[tuple[Template, ...]] = (llmi_judge.LLM_TEMPLATE,)
    agents = {"llm": "LLM judge"}
    #: People rate the judge's report ("Rate the judge").
    report_templates: ClassVar[Mapping[str, str]] = {"llm": llmi_judge.LLM_TEMPLATE.id}
    columns: ClassVar[tuple[Column, ...]] = (Column("r_llm", "R_llm", digits=3),)
    result_template = "review/judges/llmi_reward/llm_result.html"
    definitions_template = "review/judges/llmi_reward/llm_definitions.html"
    human_eval = {"likert": {"score": ("r_llm", "r_llm")}, "pair": {"bt": ("r_llm", None)}}

    def parsers(self, subject: Response) -> Mapping[str, Any]:
        return {"llm": llmi_judge.parse_llm, "mllm": llmi_judge.parse_mllm}

    def first_call_count(self, subject: Response) -> int:
        return 1

    def first_calls(
        self, subject: Response, model: str, templates: Mapping[str, Template]
    ) -> list[Call]:
        return [
            llmi_judge.llm_call(
                prompt=subject.item.query,
                answer=subject.text,
                model=model,
                template=templates[llmi_judge.LLM_TEMPLATE.id],
            )
        ]

    def report_verdict(self, label: str, value: Any) -> str | None:
        """The report's scores, in the order the judge gives them ("text 4, image 3"; the
        MLLM judge's "image quality 4, task relevance 5, text-image relevance 3")."""
        if isinstance(value, llmi_judge.LlmScores):
            return f"text {value.text}, image {value.image}"
        if isinstance(value, llmi_judge.MllmScores):
            return (
                f"image quality {value.image_quality}, task relevance {value.task_relevance}, "
                f"text-image relevance {value.text_image_relevance}"
            )
        return None

    def weights(self, run: JudgeRun) -> llmi_judge.Weights:
        """The weights of the per-answer R in the report (the LLM judge has no R)."""
        return EQUAL_WEIGHTS

    def scores(
        self, subject: Response, judgments: Mapping[str, Judgment[Any]], run: JudgeRun
    ) -> tuple[Any, dict[str, Any]]:
        answer = reward(subject, judgments, self.weights(run))
        scores: dict[str, Any] = {
            "llm": vars(answer.llm.value) if answer.llm.value else None,
            "mllm": vars(answer.mllm.value) if answer.mllm.value else None,
            "r_rule": answer.r_rule,
            "r_llm": answer.r_llm,
            "r_mllm": answer.r_mllm,
            "r": answer.r,
        }
        return answer, scores

    def figures(self, values: Sequence[Any]) -> dict[str, Any]:
        kept = [a.r_llm for a in values if a.r_llm is not None]
        return {"r_llm": mean(kept), "n": len(kept), "excluded": len(values) - len(kept)}

    def result(
        self,
        subject: Response,
        judgments: Mapping[str, Judgment[Any]],
        rows: Mapping[str, Any],
        run: JudgeRun,
    ) -> dict[str, Any]:
        shown = weights_shown(run)
        weights = llmi_judge.Weights(rule=shown["rule"], llm=shown["llm"], mllm=shown["mllm"])
        answer = reward(subject, judgments, weights)
        return {
            "llm": answer.llm.value,
            "mllm": answer.mllm.value,
            "r_rule": answer.r_rule,
            "r_llm": answer.r_llm,
            "r_mllm": answer.r_mllm,
            "r": answer.r if self.uses_weights else None,
        }


class MllmJudge(LlmJudge):
    name = "llmi-mllm"
    label = "LLM-I MLLM judge (with the LLM judge: reward R)"
    templates = (llmi_judge.LLM_TEMPLATE, llmi_judge.MLLM_TEMPLATE)
    agents = {"llm": "LLM judge", "mllm": "MLLM judge"}
    report_templates = {
        "llm": llmi_judge.LLM_TEMPLATE.id,
        "mllm": llmi_judge.MLLM_TEMPLATE.id,
    }
    columns = (
        Column("r", "R", digits=3),
        Column("r_rule", "R_rule", digits=3),
        Column("r_llm", "R_llm", digits=3),
        Column("r_mllm", "R_mllm", digits=3),
    )
    result_template = "review/judges/llmi_reward/mllm_result.html"
    definitions_template = "review/judges/llmi_reward/mllm_definitions.html"
    uses_weights = True
    human_eval = {"likert": {"score": ("r", "r")}, "pair": {"bt": ("r", None)}}

    def first_call_count(self, subject: Response) -> int:
        return 2

    def first_calls(
        self, subject: Response, model: str, templates: Mapping[str, Template]
    ) -> list[Call]:
        rendered = rendered_images(subject)
        return [
            *super().first_calls(subject, model, templates),
            llmi_judge.mllm_call(
                prompt=subject.item.query,
                rendered_answer=rendered_answer(subject.text, rendered),
                images=image_refs(rendered or []),
                model=model,
                template=templates[llmi_judge.MLLM_TEMPLATE.id],
            ),
        ]

    def run_settings(self, project: Project) -> dict[str, Any]:
        """The project's reward weights (else equal), recorded as ``JudgeRun.weights``."""
        from review.judges.run_settings import judge_weights_for  # lazy: as run_weights

        return judge_weights_for(project=project).as_record()

    def weights(self, run: JudgeRun) -> llmi_judge.Weights:
        return run_weights(run)

    def figures(self, values: Sequence[Any]) -> dict[str, Any]:
        figure = llmi_judge.reward_figure(values)
        return {
            "r": figure.r,
            "r_rule": figure.r_rule,
            "r_llm": figure.r_llm,
            "r_mllm": figure.r_mllm,
            "n": figure.n,
            "excluded": figure.excluded,
        }

    def summary_figures(
        self, values: Sequence[Any], models: Mapping[str, Mapping[str, Any]], run: JudgeRun
    ) -> dict[str, Any]:
        weights = run_weights(run)
        return {
            **super().summary_figures(values, models, run),
            "weights": {"rule": weights.rule, "llm": weights.llm, "mllm": weights.mllm},
        }


LLM_JUDGE = LlmJudge()
MLLM_JUDGE = MllmJudge()
