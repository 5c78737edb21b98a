"""LLM-I judges and the composite reward (LLM-I §2.2.2, eq. 2).

* **LLM judge** (text only): two 1-5 scores, (i) text quality (fluency, coherence, relevance of
  the narrative) and (ii) tag quality (natural placement, fitting source and params), answered
  as exactly two lines ``Text: n`` and ``Image: n``.
* **MLLM judge** (the rendered answer, images attached): three 1-5 scores, answered as exactly
  three lines ``Image quality: n``, ``Task relevance: n``, ``Text-image relevance: n``.

Scores are normalised to [0, 1] as (s - 1) / 4. R_llm and R_mllm are the means of the
normalised scores; R_rule is :func:`benchmark.tags.rule_score` (the image-count rule), and

    R = w_rule * R_rule + w_llm * R_llm + w_mllm * R_mllm * R_rule

R_rule gates the MLLM term. Default weights are 1/3 each (issue 10). Note: the paper's training
setup (§4.1 Setup, "Training") does give w_rule = 0.2, w_llm = 0.5, w_mllm = 0.3; they are
:data:`PAPER_TRAINING_WEIGHTS`, for callers who want the paper's figures. An answer whose LLM or
MLLM judgment failed has no R and is excluded from the model's means (counted in ``excluded``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchmark.tags import parse, rule_score
from benchmark.tags.validate import ImageNum

from .base import (
    Call,
    Judgment,
    Template,
    build_call,
    mean,
    normalise_1_to_5,
    parse_score_lines,
)

LLM_LABELS = ("Text", "Image")
MLLM_LABELS = ("Image quality", "Task relevance", "Text-image relevance")

LLM_TEMPLATE = Template(
    id="llmi.llm_judge",
    description="LLM-I LLM judge: text quality and tag quality, 1-5 each",
    system=(
        "You judge an answer that interleaves text with image tool tags "
        "(<imgen>{{...}}</imgen>); the images themselves are not shown to you.\n"
        "Give two scores from 1 (very poor) to 5 (excellent):\n"
        "Text: how fluent, coherent and relevant to the task the written narrative is.\n"
        "Image: how good the image tags are: placed where an image naturally belongs, with a "
        "source and parameters that fit what the image should show.\n"
        "Reply with exactly two lines and nothing else:\nText: n\nImage: n"
    ),
    user="Task:\n{prompt}\n\nAnswer:\n{answer}",
)

MLLM_TEMPLATE = Template(
    id="llmi.mllm_judge",
    description="LLM-I MLLM judge: image quality, task relevance, text-image relevance, 1-5",
    system=(
        "You judge a finished answer that interleaves text and images; the images are "
        "attached in the order they appear, and [image k] in the text marks where image k "
        "stands.\nGive three scores from 1 (very poor) to 5 (excellent):\n"
        "Image quality: the technical and aesthetic quality of the images.\n"
        "Task relevance: how well the images serve the task's objective.\n"
        "Text-image relevance: how well each image matches the text around it.\n"
        "Reply with exactly three lines and nothing else:\n"
        "Image quality: n\nTask relevance: n\nText-image relevance: n"
    ),
    user="Task:\n{prompt}\n\nAnswer:\n{answer}",
)


@dataclass(frozen=True)
class Weights:
    rule: float = 1 / 3
    llm: float = 1 / 3
    mllm: float = 1 / 3


PAPER_TRAINING_WEIGHTS = Weights(rule=0.2, llm=0.5, mllm=0.3)


@dataclass(frozen=True)
class LlmScores:
    text: int
    image: int

    @property
    def normalised(self) -> float:
        """R_llm: mean of the two normalised scores."""
        return (normalise_1_to_5(self.text) + normalise_1_to_5(self.image)) / 2


@dataclass(frozen=True)
class MllmScores:
    image_quality: int
    task_relevance: int
    text_image_relevance: int

    @property
    def normalised(self) -> float:
        """R_mllm: mean of the three normalised scores."""
        scores = (self.image_quality, self.task_relevance, self.text_image_relevance)
        return sum(normalise_1_to_5(s) for s in scores) / 3


def parse_llm(raw: str) -> LlmScores:
    text, image = parse_score_lines(raw, LLM_LABELS, 1, 5)
    return LlmScores(text=text, image=image)


def parse_mllm(raw: str) -> MllmScores:
    quality, task, pairing = parse_score_lines(raw, MLLM_LABELS, 1, 5)
    return MllmScores(image_quality=quality, task_relevance=task, text_image_relevance=pairing)


def llm_call(*, prompt: str, answer: str, model: str, template: Template = LLM_TEMPLATE) -> Call:
    return build_call(template, model, "llm", {"prompt": prompt, "answer": answer})


def mllm_call(
    *,
    prompt: str,
    rendered_answer: str,
    images: Sequence[str],
    model: str,
    template: Template = MLLM_TEMPLATE,
) -> Call:
    """``rendered_answer``: the answer with each tag replaced by ``[image k]``; ``images``:
    the generated images in that order (data URLs or references)."""
    return build_call(
        template, model, "mllm", {"prompt": prompt, "answer": rendered_answer}, images
    )


def rule_reward(answer: str, image_num: ImageNum) -> float:
    """R_rule for an LLM-I answer: its ``<imgen>`` tags counted against the prompt's
    image-number constraint."""
    return rule_score(len(parse(answer, "llmi").tools), image_num)


def reward(r_rule: float, r_llm: float, r_mllm: float, weights: Weights = Weights()) -> float:
    """R = w_rule * R_rule + w_llm * R_llm + w_mllm * R_mllm * R_rule."""
    return weights.rule * r_rule + weights.llm * r_llm + weights.mllm * r_mllm * r_rule


@dataclass(frozen=True)
class AnswerReward:
    r_rule: float
    llm: Judgment[LlmScores]
    mllm: Judgment[MllmScores]
    weights: Weights

    @property
    def r_llm(self) -> float | None:
        return self.llm.value.normalised if self.llm.value is not None else None

    @property
    def r_mllm(self) -> float | None:
        return self.mllm.value.normalised if self.mllm.value is not None else None

    @property
    def r(self) -> float | None:
        if self.r_llm is None or self.r_mllm is None:
            return None
        return reward(self.r_rule, self.r_llm, self.r_mllm, self.weights)


def answer_reward(
    r_rule: float,
    llm: Judgment[LlmScores],
    mllm: Judgment[MllmScores],
    weights: Weights = Weights(),
) -> AnswerReward:
    return AnswerReward(r_rule=r_rule, llm=llm, mllm=mllm, weights=weights)


@dataclass(frozen=True)
class RewardFigure:
    """Per model: means over answers with both judgments valid (``n``); ``excluded`` counts
    the rest."""

    r: float | None
    r_rule: float | None
    r_llm: float | None
    r_mllm: float | None
    n: int
    excluded: int


def reward_figure(answers: Sequence[AnswerReward]) -> RewardFigure:
    kept = [a for a in answers if a.r is not None]
    return RewardFigure(
        r=mean([a.r for a in kept if a.r is not None]),
        r_rule=mean([a.r_rule for a in kept]),
        r_llm=mean([a.r_llm for a in kept if a.r_llm is not None]),
        r_mllm=mean([a.r_mllm for a in kept if a.r_mllm is not None]),
        n=len(kept),
        excluded=len(answers) - len(kept),
    )
