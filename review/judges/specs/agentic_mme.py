"""The Agentic-MME judges (``benchmark.judge_prompts.agentic_mme``), which rate the checkpoints of an
agent run while the run is scored (``review.runs.judging``), not as a judge run of their own:
their verdicts become part of the run's score, with what decided each checkpoint.

* ``agentic-mme-s`` (search checkpoints): one call per search checkpoint with its description,
  keywords and expected finding, the agent's queries and the results; PASS or FAIL.
* ``agentic-mme-v`` (visual checkpoints): the checkpoint's question about each image the run
  produced from the checkpoint's match onwards, one call per image with the image attached;
  the checkpoint passes when any answer shows the expected answer (the released any-pass
  rule). Its answers stand beside reviewers' answers to the same visual checks (agreement on a
  run set's page).

Their calls go through the same call lifecycle as every judge (``review.judges.calls``).
Their templates are the project's to version (the judge settings page, or worked examples made
from an upload's correction cases: ``review.runs.examples``); scoring reads the newest version.
A correction case is written as the checkpoint's inputs (``check_example_input``) and the
reviewers' answer in the judge's own format (``check_example_answer``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchmark.judge_prompts import Call, Judgment, Template
from benchmark.judge_prompts import agentic_mme as mme_judges
from benchmark.judge_prompts.examples import shorten
from benchmark.models import DataFormat
from review.judges.specs.base import JudgeSpec
from review.judges.specs.subjects import CHECKPOINTS

if TYPE_CHECKING:
    from review.judges.models import JudgeRun

RUNS_IN = (
    "when the runs of a trajectory project are scored with the project's model configured "
    "(Runs page, manage.py score_runs)"
)


@dataclass(frozen=True)
class SearchStep:
    """A search checkpoint and what the run retrieved for it."""

    description: str
    keywords: Sequence[str]
    expected: str
    queries: Sequence[str]
    results: Sequence[str]


@dataclass(frozen=True)
class VisualCheck:
    """A visual checkpoint's question and expected answer, and the images to ask about
    (``sha256:`` references or data URLs)."""

    question: str
    expected: str
    images: Sequence[str]


class SearchJudge(JudgeSpec):
    name = "agentic-mme-s"
    label = "Agentic-MME S judge (search checkpoints)"
    rates = CHECKPOINTS
    formats = (DataFormat.AGENTIC_MME,)
    templates = (mme_judges.S_TEMPLATE,)
    runnable = False
    runs_in = RUNS_IN
    agents = {"search": "S judge"}

    def parsers(self, subject: Any) -> Mapping[str, Callable[[str], Any]]:
        return {"search": mme_judges.parse_s}

    def first_call_count(self, subject: SearchStep) -> int:
        return 1

    def first_calls(
        self, subject: SearchStep, model: str, templates: Mapping[str, Template]
    ) -> list[Call]:
        return [
            mme_judges.s_call(
                description=subject.description,
                keywords=list(subject.keywords),
                expected=subject.expected,
                queries=list(subject.queries),
                results=list(subject.results),
                model=model,
                template=templates.get(mme_judges.S_TEMPLATE.id, mme_judges.S_TEMPLATE),
            )
        ]

    def scores(
        self, subject: SearchStep, judgments: Mapping[str, Judgment[Any]], run: JudgeRun | None
    ) -> tuple[Any, dict[str, Any]]:
        """The checkpoint's verdict: passed (True/False), None when the judge gave none."""
        judgment = judgments.get("search")
        value = judgment.value if judgment is not None else None
        passed = None if value is None else bool(value.passed)
        return passed, {"passed": passed}

    def checkpoint_answer(self, cp: Mapping[str, Any]) -> tuple[bool, int | None]:
        """Whether this judge decided a checkpoint of a stored run score, and its answer
        (1 PASS / 0 FAIL): a search checkpoint whose check the S judge gave a verdict on (where
        its reply did not parse twice the proxy decided, and it is not counted)."""
        if cp.get("kind") != "search" or cp.get("method") != "judge":
            return False, None
        detail = cp.get("detail") or {}
        if "queries" not in detail or detail.get("undetermined"):
            return False, None
        return True, int(bool(cp.get("passed")))

    def check_example_input(self, cp: Mapping[str, Any], detail: Mapping[str, Any]) -> str:
        """The search step as the S judge saw it: description, keywords, expected finding and
        the agent's queries (``cp``: the item's checkpoint; ``detail``: the stored score's)."""
        sc = cp.get("search_check") if isinstance(cp.get("search_check"), Mapping) else {}
        keywords = ", ".join(str(k) for k in (sc or {}).get("keywords") or []) or "(none)"
        queries = "; ".join(str(q) for q in detail.get("queries") or []) or "(none)"
        expected = (sc or {}).get("expected") or "(not stated)"
        return (
            f"Step description: {shorten(str(cp.get('description') or ''), 200)} | "
            f"Search keywords: {keywords} | Expected finding: {shorten(str(expected), 150)} | "
            f"Agent's queries: {shorten(queries, 200)}"
        )

    def check_example_answer(self, people: int, cp: Mapping[str, Any]) -> str:
        return "PASS" if people else "FAIL"


class VisualJudge(JudgeSpec):
    name = "agentic-mme-v"
    label = "Agentic-MME V judge (visual checkpoints)"
    rates = CHECKPOINTS
    formats = (DataFormat.AGENTIC_MME,)
    templates = (mme_judges.V_TEMPLATE,)
    runnable = False
    runs_in = RUNS_IN

    def label_parser(self, label: str) -> Callable[[str], Any] | None:
        return mme_judges.parse_v if label.startswith("image ") else None

    def first_call_count(self, subject: VisualCheck) -> int:
        return len(subject.images)

    def first_calls(
        self, subject: VisualCheck, model: str, templates: Mapping[str, Template]
    ) -> list[Call]:
        """One call per image, labelled ``image 1``, ``image 2``..."""
        return mme_judges.v_calls(
            question=subject.question,
            images=list(subject.images),
            model=model,
            template=templates.get(mme_judges.V_TEMPLATE.id, mme_judges.V_TEMPLATE),
        )

    def scores(
        self, subject: VisualCheck, judgments: Mapping[str, Judgment[Any]], run: JudgeRun | None
    ) -> tuple[Any, dict[str, Any]]:
        """The any-pass rule over the per-image judgments (``VCheckpoint``)."""
        outcome = mme_judges.v_checkpoint(list(judgments.values()), subject.expected)
        return outcome, {"passed": outcome.passed, "excluded": outcome.excluded}

    def checkpoint_answer(self, cp: Mapping[str, Any]) -> tuple[bool, int | None]:
        """Whether this judge answered a visual checkpoint of a stored run score, and its
        answer (1 / 0 / None): ``detail["visual"]`` when the judge decided the check,
        ``detail["judge"]`` once a person's answer replaced it."""
        if cp.get("kind") != "visual" or not cp.get("has_visual_check"):
            return False, None
        detail = cp.get("detail") or {}
        decided = detail.get("decided_by")
        if decided == "judge":
            answer = detail.get("visual")
        elif decided == "person":
            answer = detail.get("judge")  # the judge's answer a person's replaced
        else:
            return False, None
        if not isinstance(answer, Mapping) or answer.get("method") != "judge":
            return False, None
        passed = answer.get("passed")
        return True, None if passed is None else int(bool(passed))

    def check_example_input(self, cp: Mapping[str, Any], detail: Mapping[str, Any]) -> str:
        """The visual check as the V judge is asked it: the question and what answer shows a
        pass (the image itself is not in the prompt)."""
        vc = cp.get("visual_check") if isinstance(cp.get("visual_check"), Mapping) else {}
        question = str((vc or {}).get("question") or "")
        expected = str((vc or {}).get("expected_answer") or "")
        return f"Question: {shorten(question, 300)} | An answer showing {expected!r} passes"

    def check_example_answer(self, people: int, cp: Mapping[str, Any]) -> str:
        """``Answer: <expected>`` where reviewers saw it in the image; else an answer that
        does not show it."""
        vc = cp.get("visual_check") if isinstance(cp.get("visual_check"), Mapping) else {}
        expected = str((vc or {}).get("expected_answer") or "").strip()
        if people and expected:
            return f"Answer: {expected}"
        return "Answer: the image does not show it"


S_JUDGE = SearchJudge()
V_JUDGE = VisualJudge()
