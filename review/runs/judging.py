"""Agentic-MME model judges for run scoring (issue 10).

With a judge model, a run is scored as ``benchmark.metrics.agentic_mme.score_run`` does with
the S judge as its ``search_check`` hook; then every visual checkpoint with a visual check is
put to the V judge: the checkpoint's question about each image the run produced from the
checkpoint's match (the tool call its code check matched) onwards, one call per image with the
image attached, and the checkpoint passes when any answer shows the expected answer (the
released any-pass rule, ``benchmark.judge_prompts.agentic_mme``). A reply that does not parse is asked
again once; if it still does not parse (or the endpoint fails), that checkpoint keeps the
proxy's result and says why. Each checkpoint records in ``detail["decided_by"]`` what decided
it: "judge", "proxy", "person" (set by ``apply_visual_verdicts``) or "rule" (a deterministic
check: a tool call, an answer check). Without a judge nothing changes: the proxies decide.

The S and V judges are judge specs (``review.judges.specs.agentic_mme``: templates, calls,
parsers, the any-pass rule) and each call goes through the judges' one call lifecycle
(``review.judges.calls.call_ask``: ask, parse strictly, ask once more). Calls go through
``ChatClient`` with no cache of its own; this module reads and fills the cache itself so that
only replies that parse are kept (a retry must reach the model, not the cache).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from benchmark.judge_prompts.base import Call, Judgment, Template, judgment_from_outputs
from benchmark.llm.cache import ResponseCache
from benchmark.llm.client import ChatClient, ChatRequest, ChatResult, ImageInput, ModelConfig
from benchmark.metrics import agentic_mme as mme
from review.judges.calls import call_ask
from review.judges.specs.agentic_mme import S_JUDGE, V_JUDGE, SearchStep, VisualCheck

T = TypeVar("T")

JUDGE = "judge"
PROXY = "proxy"
PERSON = "person"
RULE = "rule"


@dataclass
class RunJudge:
    """A judge model for run scoring: its client (no cache), the cache it reads and fills,
    and the sampling parameters sent with each call. After an endpoint error the judge is
    ``broken`` and every later checkpoint keeps the proxy (one slow failure, not hundreds)."""

    config: ModelConfig
    cache: ResponseCache | None = None
    params: dict[str, Any] = field(default_factory=dict)
    scope: str = ""
    templates: dict[str, Template] = field(default_factory=dict)
    """The S and V templates by id (the project's newest versions, ``run_judge_templates``);
    a template not here is the built-in one."""
    offline: bool = False
    """Answer only from the cache (a person's answer rescoring a run in a web request must not
    wait for a model): a miss keeps the proxy for that checkpoint."""
    broken: str = ""
    calls: int = 0

    @property
    def model(self) -> str:
        return self.config.model

    def client(self) -> ChatClient:
        return ChatClient(self.config, cache=None, mode="off", scope=self.scope)

    def judge(self, call: Call, parse: Any, images: Sequence[ImageInput] = ()) -> Judgment[Any]:
        """Ask ``call`` (its system and user text, with ``images``), parse the reply, ask once
        more when it does not parse. A cached reply counts as the first answer."""
        client = self.client()
        request = _request(call, images, self.params)
        key = client.key(request)
        hit = self.cache.get(key) if self.cache is not None else None

        def may_ask() -> bool:
            if self.broken:
                return False
            if self.offline:
                self.broken = "no recorded answer, and no model is asked while a person answers"
                return False
            return True

        def keep(result: ChatResult, judgment: Judgment[Any]) -> None:
            if judgment.ok and self.cache is not None:
                self.cache.put(key, result.to_cache())

        outcome = call_ask(
            client=client,
            call=call,
            parse=parse,
            request=request,
            outputs=[hit.text] if hit is not None else [],
            may_ask=may_ask,
            on_answer=keep,
        )
        self.calls += outcome.asked
        if outcome.transport_error:
            self.broken = outcome.transport_error
            return judgment_from_outputs(call, outcome.outputs, parse)
        return outcome.judgment


def _request(call: Call, images: Sequence[ImageInput], params: Mapping[str, Any]) -> ChatRequest:
    return ChatRequest.from_messages(call.messages, images=tuple(images), params=dict(params))


def _failure(judgment: Judgment[Any], broken: str) -> str:
    if broken:
        return f"the judge could not be asked ({broken})"
    return f"the judge's reply did not parse twice ({judgment.error})"


# --------------------------------------------------------------------------- S judge


class SearchJudge:
    """The ``search_check`` hook: the S judge, and the proxy where the judge gives no verdict
    (recorded per checkpoint id in ``fallbacks``)."""

    def __init__(self, judge: RunJudge) -> None:
        self.judge = judge
        self.fallbacks: dict[str, str] = {}

    def __call__(
        self, cp: Mapping[str, Any], queries: Sequence[str], contexts: Sequence[str]
    ) -> bool | None:
        sc = cp.get("search_check") if isinstance(cp.get("search_check"), Mapping) else {}
        keywords = [str(k) for k in (sc or {}).get("keywords") or [] if str(k).strip()]
        expected = mme.expected_finding(cp) or ""
        step = SearchStep(
            description=str(cp.get("description") or ""),
            keywords=keywords,
            expected=expected,
            queries=list(queries),
            results=list(contexts),
        )
        (call,) = S_JUDGE.first_calls(step, self.judge.model, self.judge.templates)
        judgment = self.judge.judge(call, S_JUDGE.parser(call.label, step))
        passed, _ = S_JUDGE.scores(step, {call.label: judgment}, None)
        if passed is not None:
            return bool(passed)
        self.fallbacks[str(cp.get("id"))] = _failure(judgment, self.judge.broken)
        if not expected:
            return None
        squash = " ".join(expected.casefold().split())
        return any(squash in " ".join(c.casefold().split()) for c in contexts)


# --------------------------------------------------------------------------- V judge


def images_from_match(run: mme.RunRecord, hit_index: int | None) -> list[Path]:
    """The images the run produced from the event ``hit_index`` onwards (its own image
    included), in order; every produced image when the checkpoint matched no call."""
    produced = run.produced_images()
    if hit_index is None:
        return produced
    found: dict[Path, None] = {}
    for position, ev in enumerate(run.events):
        if not isinstance(ev, Mapping) or mme.is_declared_only(ev):
            continue
        index = ev.get("index", position)
        if not isinstance(index, int) or isinstance(index, bool):
            index = position
        if index < hit_index:
            continue
        path = run.event_image_path(ev)
        if path is not None:
            found.setdefault(path.resolve(), None)
    return list(found)


def _image_input(path: Path) -> ImageInput:
    data = path.read_bytes()
    return ImageInput(sha256=hashlib.sha256(data).hexdigest(), data=data)


def _visual_judge(
    judge: RunJudge, cp: Mapping[str, Any], result: mme.CheckpointResult, run: mme.RunRecord
) -> None:
    vc = cp.get("visual_check") or {}
    question = str(vc.get("question", ""))
    expected = str(vc.get("expected_answer", ""))
    proxy = result.detail.get("visual")
    paths = images_from_match(run, result.hit_index)
    if not paths:
        result.detail["judge_fallback"] = "the run produced no image from the match onwards"
        return
    if not question.strip() or not expected.strip():
        result.detail["judge_fallback"] = "the checkpoint has no question or expected answer"
        return
    inputs: list[ImageInput] = []
    for path in paths:
        try:
            inputs.append(_image_input(path))
        except OSError as exc:
            result.detail["judge_fallback"] = f"{path.name} cannot be read ({exc})"
            return
    check = VisualCheck(
        question=question, expected=expected, images=[f"sha256:{i.sha256}" for i in inputs]
    )
    calls = V_JUDGE.first_calls(check, judge.model, judge.templates)
    judgments = [
        judge.judge(call, V_JUDGE.parser(call.label, check), [image])
        for call, image in zip(calls, inputs, strict=True)
    ]
    outcome, _ = V_JUDGE.scores(check, {j.label: j for j in judgments}, None)
    if outcome.passed is None:
        failed = next((j for j in judgments if not j.ok), None)
        result.detail["judge_fallback"] = (
            _failure(failed, judge.broken) if failed else "no judgment"
        )
        return
    names = {f"image {n}": p.name for n, p in enumerate(paths, start=1)}
    result.detail["proxy"] = proxy
    result.detail["visual"] = {
        "method": JUDGE,
        "model": judge.model,
        "passed": outcome.passed,
        "images": [
            {
                "image": names[j.label],
                "answer": j.value.answer if j.value else None,
                "error": j.error,
            }
            for j in judgments
        ],
        "excluded": outcome.excluded,
    }
    result.visual_passed = outcome.passed
    result.method = JUDGE
    result.detail["decided_by"] = JUDGE


# --------------------------------------------------------------------------- re-asking


def checkpoints_rejudge(
    task: Mapping[str, Any],
    run: mme.RunRecord,
    *,
    judge: RunJudge,
    kind: str,
    ids: Sequence[str],
    accepted: Sequence[str] = (),
) -> dict[str, int | None]:
    """Ask ``judge`` again on the checkpoints ``ids`` of ``kind`` ("search": the S judge on
    the run's queries and results; "visual": the V judge on the images from the match
    onwards, the any-pass rule) of a stored run, and nothing else: ``{id: 1 / 0}``, None
    where the judge gave no verdict (its reply did not parse twice, no image...).
    ValueError for another kind."""
    rejudge = _REJUDGE_BY_KIND.get(kind)
    if rejudge is None:
        raise ValueError(f"kind: {kind!r} is not a checkpoint kind ({', '.join(_REJUDGE_BY_KIND)})")
    found = rejudge(task, run, judge, set(ids), accepted)
    return {cid: found.get(cid) for cid in ids}


def _search_rejudge(
    task: Mapping[str, Any],
    run: mme.RunRecord,
    judge: RunJudge,
    wanted: set[str],
    accepted: Sequence[str],
) -> dict[str, int | None]:
    """:func:`checkpoints_rejudge` for search checkpoints: the S judge, through the scorer."""
    search = SearchJudge(judge)
    found: dict[str, int | None] = {}

    def only(cp: Mapping[str, Any], queries: Sequence[str], contexts: Sequence[str]) -> bool | None:
        cid = str(cp.get("id"))
        if cid not in wanted:
            return None
        passed = search(cp, queries, contexts)
        found[cid] = None if cid in search.fallbacks or passed is None else int(passed)
        return passed

    mme.score_run(task, run, search_check=only, accepted=accepted)
    return found


def _visual_rejudge(
    task: Mapping[str, Any],
    run: mme.RunRecord,
    judge: RunJudge,
    wanted: set[str],
    accepted: Sequence[str],
) -> dict[str, int | None]:
    """:func:`checkpoints_rejudge` for visual checkpoints: the V judge on each one's images."""
    found: dict[str, int | None] = {}
    score = mme.score_run(task, run, accepted=accepted)
    checkpoints = {
        str(cp.get("id")): cp
        for cp in (task.get("process_evaluation") or {}).get("checkpoints") or []
        if isinstance(cp, Mapping)
    }
    for res in score.checkpoints:
        if res.kind != "visual" or res.id not in wanted or res.id not in checkpoints:
            continue
        _visual_judge(judge, checkpoints[res.id], res, run)
        visual = res.detail.get("visual")
        if isinstance(visual, Mapping) and visual.get("method") == JUDGE:
            passed = visual.get("passed")
            found[res.id] = None if passed is None else int(bool(passed))
    return found


#: How each checkpoint kind is judged again.
_REJUDGE_BY_KIND = {"search": _search_rejudge, "visual": _visual_rejudge}


# --------------------------------------------------------------------------- scoring


def recompute(score: mme.RunScore) -> mme.RunScore:
    """V, V_true, S, the undetermined count, base and PQS from the checkpoints, as
    ``score_run`` computes them (after a judge or a person changed a checkpoint)."""
    visual = [r for r in score.checkpoints if r.kind == "visual"]
    visual_checked = [r for r in visual if r.has_visual_check]
    search = [r for r in score.checkpoints if r.kind == "search"]
    for r in visual:
        r.passed = _visual_passed(r)
    score.V = _share([bool(r.passed) for r in visual])
    score.S = _share([bool(r.passed) for r in search])
    score.V_true = _share([r.visual_passed is True for r in visual_checked])
    score.undetermined = sum(1 for r in visual_checked if r.visual_passed is None) + sum(
        1 for r in search if r.detail.get("undetermined")
    )
    valid = [x for x in (score.S, score.V) if x is not None]
    score.base = sum(valid) / len(valid) if valid else 0.0
    score.pqs = score.base * (1.0 - score.penalty)
    return score


def _visual_passed(r: mme.CheckpointResult) -> bool:
    """A visual checkpoint passes when every check it has passed, and it has at least one."""
    return (
        (not r.has_tool_check or bool(r.tool_passed))
        and (not r.has_visual_check or r.visual_passed is True)
        and (r.has_tool_check or r.has_visual_check)
    )


def _share(passed: Sequence[bool]) -> float | None:
    return sum(passed) / len(passed) if passed else None


def _mark_decided(score: mme.RunScore) -> None:
    for res in score.checkpoints:
        if "decided_by" in res.detail:
            continue
        if res.kind == "search" and res.method in ("search_proxy", JUDGE):
            res.detail["decided_by"] = PROXY if res.method == "search_proxy" else JUDGE
        elif res.kind == "visual" and res.has_visual_check:
            res.detail["decided_by"] = PROXY
        else:
            res.detail["decided_by"] = RULE


def score_run_judged(
    task: Mapping[str, Any],
    run: mme.RunRecord,
    *,
    judge: RunJudge | None,
    accepted: Sequence[str] = (),
) -> mme.RunScore:
    """``score_run`` with the judge model deciding S and V_true where it gives a verdict,
    the proxies elsewhere; every checkpoint says what decided it."""
    if judge is None:
        score = mme.score_run(task, run, accepted=accepted)
        _mark_decided(score)
        return score
    search = SearchJudge(judge)
    score = mme.score_run(task, run, search_check=search, accepted=accepted)
    for res in score.checkpoints:
        if res.kind == "search" and res.id in search.fallbacks:
            res.method = "search_proxy"
            res.detail["judge_fallback"] = search.fallbacks[res.id]
    checkpoints = {
        str(cp.get("id")): cp
        for cp in (task.get("process_evaluation") or {}).get("checkpoints") or []
        if isinstance(cp, Mapping)
    }
    for res in score.checkpoints:
        if res.kind == "visual" and res.has_visual_check and res.id in checkpoints:
            _visual_judge(judge, checkpoints[res.id], res, run)
    _mark_decided(score)
    return recompute(score)
