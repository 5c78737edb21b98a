"""The scales of response-level human evaluation, as raters read them on screen (our own
words, following the papers):

* ``atp``: ATP-Bench App. B.2 (Table 11). Three values per answer: ``inappr`` (# Inappr., how
  many images are inappropriate: redundant, irrelevant or poor), ``mi`` (MI, how many images
  are missing where the answer needed one) and ``fs`` (FS, a final score 1-5 weighing
  coherence, pacing, text-image alignment and aesthetic utility). One judgment holds the three
  as an object (scheme ``scores``); a unit's outcome is the median of each.
* ``likert``: LLM-I §3 / App. C (Table 2, "Human"). A five-point Likert score of the whole
  answer, with criteria for each point; the results report the *average scoring rate*, the
  mean score / 5 as a percentage.
* ``pair``: a preference between two answers to the same item from two models, shown as A
  and B (the side is drawn per pair when the task is made): "a", "b" or "tie".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ATP, LIKERT, PAIR = "atp", "likert", "pair"

#: Counts above this are taken for a slip of the finger (no answer carries 50 images).
MAX_COUNT = 50


@dataclass(frozen=True)
class Field:
    """One value of a rating: its key in the judgment, its name, bounds and what it asks."""

    key: str
    label: str
    low: int
    high: int
    help: str
    #: Whether the figure ranks models upwards (FS) or downwards (counts of faults).
    higher_is_better: bool = True
    #: Krippendorff's level of measurement for the agreement on this field.
    level: str = "ordinal"
    points: tuple[tuple[int, str, str], ...] = ()


@dataclass(frozen=True)
class Scale:
    key: str
    title: str
    unit_kind: str
    question: str
    scheme: str
    consensus: str
    fields: tuple[Field, ...] = ()
    labels: list[dict[str, Any]] = field(default_factory=list)
    intro: str = ""

    def field_of(self, key: str) -> Field | None:
        return next((f for f in self.fields if f.key == key), None)


FS_POINTS = (
    (5, "Excellent", "Strong on all four: one clear line of thought, images exactly where "
     "the text needs them, each image showing what its text says, every image clear and worth "
     "its space."),
    (4, "Good", "Small flaws in one or two of the four; a reader would not be held up."),
    (3, "Fair", "Noticeable flaws: an image out of place or loosely tied to its text, uneven "
     "pacing, or a figure that is hard to read; still a usable document."),
    (2, "Poor", "Serious problems in several of the four: images that do not fit, long "
     "stretches that needed a figure, or a confusing order."),
    (1, "Very poor", "Fails as an illustrated document: incoherent, or images missing, broken "
     "or misleading throughout."),
)  # fmt: skip

LIKERT_POINTS = (
    (5, "Excellent", "Does everything the prompt asks. Every requested image is there, "
     "correct, informative and placed where it helps; the text is accurate and well organised; "
     "text and images support each other."),
    (4, "Good", "Does what the prompt asks with small gaps: the images are there and relevant, "
     "perhaps one weaker or slightly out of place; minor slips in the text."),
    (3, "Fair", "Covers the main request but misses parts: some images missing, generic or "
     "only loosely tied to the text, or noticeable errors in the content."),
    (2, "Poor", "Much of the prompt is unmet: most images missing, wrong or merely decorative; "
     "the text has substantial errors or little structure."),
    (1, "Very poor", "Does not address the prompt or is unusable: no meaningful images where "
     "they were needed, broken or empty output."),
)  # fmt: skip

ATP_FIELDS = (
    Field(
        "inappr",
        "# Inappr.",
        0,
        MAX_COUNT,
        "How many images are inappropriate: redundant (they repeat what another image or "
        "the text already shows), irrelevant to the text around them, or of poor quality "
        "(unreadable, broken, wrong). A tool call that produced no image is not counted "
        "here.",
        higher_is_better=False,
        level="ratio",
    ),
    Field(
        "mi",
        "MI",
        0,
        MAX_COUNT,
        "How many images are missing: places where the reader needed a figure (the query "
        "asks for one, or the text refers to or clearly calls for one) and there is none, "
        "including where a tool call failed and left nothing.",
        higher_is_better=False,
        level="ratio",
    ),
    Field(
        "fs",
        "FS",
        1,
        5,
        "The final score of the whole document, 1 to 5, weighing four things: coherence "
        "(text and images make one argument in a sensible order), pacing (images come "
        "where the text needs them, neither bunched nor sparse), text-image alignment "
        "(each image shows what the text around it says) and aesthetic utility (images "
        "are clear, legible and worth their space).",
        points=FS_POINTS,
    ),
)

ATP_SCALE = Scale(
    key=ATP,
    title="ATP-Bench B.2: # Inappr., MI and FS",
    unit_kind="answer-eval",
    question="Read the answer as its reader would. Count the inappropriate images and the "
    "missed images, and give a final score from 1 to 5.",
    scheme="scores",
    consensus="median",
    fields=ATP_FIELDS,
    labels=[{"value": f.key, "label": f.label, "min": f.low, "max": f.high} for f in ATP_FIELDS],
    intro="ATP-Bench (App. B.2) had people rate rendered answers on these three values; lower "
    "is better for # Inappr. and MI, higher for FS.",
)

LIKERT_SCALE = Scale(
    key=LIKERT,
    title="LLM-I Likert 1-5",
    unit_kind="answer-eval",
    question="How good is this answer to the prompt, text and images together? Score it 1 to 5 "
    "by the criteria of each point.",
    scheme="ordinal",
    consensus="median",
    fields=(
        Field(
            "score",
            "Likert",
            1,
            5,
            "The overall quality of the interleaved answer, by the criteria of each point.",
            points=LIKERT_POINTS,
        ),
    ),
    labels=[
        {"value": n, "label": f"{n} · {name}", "accept": n >= 4}
        for n, name, _ in reversed(LIKERT_POINTS)
    ],
    intro="LLM-I (§3, App. C) rated LLMI-Bench answers on a five-point Likert scale with "
    "criteria for each point, and reports the average scoring rate: mean score / 5.",
)

PAIR_SCALE = Scale(
    key=PAIR,
    title="Pairwise preference (A / B / tie)",
    unit_kind="answer-pair",
    question="Which answer serves the reader better, text and images together? Choose A, B, "
    "or a tie when they are equally good (or equally poor).",
    scheme="nominal",
    consensus="majority",
    labels=[
        {"value": "a", "label": "A is better", "accept": True},
        {"value": "b", "label": "B is better", "accept": True},
        {"value": "tie", "label": "Tie", "accept": True},
    ],
    intro="Two answers to the same query from two different models, side by side; which side "
    "each is shown on is drawn at random for each pair. Win rates count a tie as half a win; "
    "a Bradley-Terry model ranks the models.",
)

SCALES: dict[str, Scale] = {s.key: s for s in (ATP_SCALE, LIKERT_SCALE, PAIR_SCALE)}


def scale_of(task: Any) -> Scale | None:
    """The scale a response-level evaluation task was made with; None for other tasks."""
    if task.unit_kind not in ("answer-eval", "answer-pair"):
        return None
    return SCALES.get(str((task.unit_params or {}).get("scale") or ""))
