"""Executing the tool calls of many answers: one task per distinct call, run concurrently,
answered from a cache where it can be. Pure Python (no Django): the caller gives the cache
lookup, the image store and the image loader, which run on the caller's thread only.

``BatchRenderer.render(answers)`` plans every answer (``benchmark.rendering.calls``), turns
each plan that needs executing into a :class:`Task` (or a placeholder when nothing is
configured for its tool), asks ``lookup`` for the cached results of all of them at once,
executes the rest (each distinct task once, however many answers ask for it) in a thread pool
(code runs at most ``code_workers`` programs at a time: each is a process), hands every
outcome to ``store`` as it arrives, and answers one list of :class:`CallResult` per answer, in
order. LLM-I edits of an image an earlier tag produced wait for that tag's result (a second
wave, and so on along a chain of edits). ``tick`` is called at least every
``tick_seconds`` while tasks run (the job's progress report, which raises when the job is
cancelled: the pool is shut down, queued tasks dropped, and the error propagates).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from threading import BoundedSemaphore

from benchmark.rendering.calls import (
    ERROR,
    FAILED,
    LIMIT,
    MISSING_IMAGE,
    NOT_AVAILABLE,
    NOT_CONFIGURED,
    PLACEHOLDER,
    RENDERED,
    TIMEOUT,
    CallPlan,
    CallResult,
    Limits,
    Task,
    plan_calls,
)
from benchmark.rendering.providers import Found, ProviderError, Providers
from benchmark.tags import ParsedText, Syntax, parse

__all__ = ["AnswerInput", "BatchRenderer", "Outcome", "run_task", "task_for"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AnswerInput:
    """One answer to render: its text and syntax, and the item's document and input images
    (sha256 in ``img_index`` order, None where not stored)."""

    id: int
    text: str
    syntax: Syntax
    documents: tuple[str | None, ...] = ()
    inputs: tuple[str | None, ...] = ()


@dataclass(frozen=True)
class Outcome:
    """What executing a task gave: image bytes (``data``) and a result whose ``image`` the
    store fills in, or a failure (``data`` None)."""

    result: CallResult
    data: bytes | None = field(default=None, repr=False)


@dataclass
class Stats:
    executed: int = 0
    cached: int = 0
    shared: int = 0  # calls answered by a task another call of the same batch asked for


def task_for(
    plan: CallPlan, providers: Providers, source_sha: str | None = None
) -> Task | CallResult:
    """The task that executes ``plan``, or the placeholder when nothing is configured for
    its tool. ``source_sha`` is the edited image (an edit's source)."""
    tool = plan.tool
    if tool == "diffusion":
        if providers.generate is None:
            return CallResult(
                status=PLACEHOLDER,
                reason=NOT_CONFIGURED,
                message="no image-generation endpoint is configured",
            )
        return Task(tool, (("prompt", plan.params["prompt"]),), providers.generate.name)
    if tool == "search":
        if providers.search is None:
            return CallResult(
                status=PLACEHOLDER,
                reason=NOT_CONFIGURED,
                message="no image-search provider is configured",
            )
        return Task(tool, (("query", plan.params["query"].strip()),), providers.search.name)
    if tool == "code":
        if providers.code is None:
            return CallResult(
                status=PLACEHOLDER,
                reason=NOT_AVAILABLE,
                message="code execution is not available",
            )
        return Task(tool, (("code", plan.params["code"]),), providers.code.name)
    if tool == "edit":
        if providers.edit is None:
            return CallResult(
                status=PLACEHOLDER,
                reason=NOT_CONFIGURED,
                message="no image-edit endpoint is configured",
                shown=source_sha,
            )
        return Task(
            tool, (("prompt", plan.params["prompt"]),), providers.edit.name, source_sha or ""
        )
    return CallResult(status=FAILED, reason=ERROR, message=f"no executor for {tool!r}")


def run_task(task: Task, providers: Providers, image: bytes | None = None) -> Outcome:
    """Execute one task; never raises (a provider's error is the failed result)."""
    try:
        found = _execute(task, providers, image)
    except ProviderError as exc:
        if exc.kind == "unavailable":
            return Outcome(
                CallResult(
                    status=PLACEHOLDER,
                    reason=NOT_AVAILABLE,
                    message=f"code execution is not available: {exc.message}",
                    provider=task.provider,
                    retry=True,
                )
            )
        reason = TIMEOUT if exc.kind == "timeout" else ERROR
        detail = dict(getattr(exc, "detail", {}) or {})
        return Outcome(
            CallResult(
                status=FAILED,
                reason=reason,
                message=exc.message,
                provider=task.provider,
                retry=exc.retry,
                detail=detail,
            )
        )
    except Exception as exc:  # noqa: BLE001 - a provider's bug must not stop the batch
        log.exception("rendering: %s via %s failed", task.tool, task.provider)
        return Outcome(
            CallResult(
                status=FAILED,
                reason=ERROR,
                message=f"unexpected error in {task.provider}: {type(exc).__name__}",
                provider=task.provider,
                retry=True,
            )
        )
    return Outcome(
        CallResult(status=RENDERED, provider=task.provider, detail=found.detail), found.data
    )


def _execute(task: Task, providers: Providers, image: bytes | None) -> Found:
    if task.tool == "diffusion" and providers.generate is not None:
        return providers.generate.generate(task.param("prompt"))
    if task.tool == "search" and providers.search is not None:
        return providers.search.search(task.param("query"))
    if task.tool == "code" and providers.code is not None:
        return providers.code.run(task.param("code"))
    if task.tool == "edit" and providers.edit is not None:
        if image is None:
            raise ProviderError("the image to edit could not be read")
        return providers.edit.edit(image, task.param("prompt"))
    raise ProviderError(f"no provider for {task.tool!r}")


Lookup = Callable[[Sequence[Task]], dict[str, CallResult]]
Store = Callable[[Task, Outcome], CallResult]
Load = Callable[[str], bytes | None]


@dataclass
class _Answer:
    answer: AnswerInput
    parsed: ParsedText
    plans: list[CallPlan]
    results: list[CallResult | None]


class BatchRenderer:
    """See the module docstring."""

    def __init__(
        self,
        *,
        providers: Providers,
        lookup: Lookup,
        store: Store,
        load: Load,
        workers: int | None = None,
        code_workers: int | None = None,
        limits: Limits | None = None,
        tick: Callable[[], None] | None = None,
        tick_seconds: float = 0.5,
    ) -> None:
        cpu = os.cpu_count() or 1
        self.providers = providers
        self.lookup = lookup
        self.store = store
        self.load = load
        self.limits = limits or Limits()
        self.workers = max(1, workers or max(4, 2 * cpu))
        self.code_slots = BoundedSemaphore(max(1, code_workers or cpu))
        self.tick = tick
        self.tick_seconds = tick_seconds
        self.stats = Stats()

    # ------------------------------------------------------------------ public

    def render(self, answers: Iterable[AnswerInput]) -> list[list[CallResult] | str]:
        """Per answer, its call results in tag order, or why it was not rendered (str)."""
        prepared: list[_Answer | str] = []
        for answer in answers:
            if len(answer.text) > self.limits.max_text_chars:
                prepared.append(
                    f"the answer is {len(answer.text):,} characters; the renderer takes at "
                    f"most {self.limits.max_text_chars:,}"
                )
                continue
            parsed = parse(answer.text, answer.syntax)
            plans = plan_calls(
                parsed, documents=answer.documents, inputs=answer.inputs, limits=self.limits
            )
            prepared.append(_Answer(answer, parsed, plans, [p.result for p in plans]))
        todo = [a for a in prepared if isinstance(a, _Answer)]
        with ThreadPoolExecutor(self.workers, thread_name_prefix="render") as pool:
            try:
                while self._wave(todo, pool):
                    pass
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                raise
        out: list[list[CallResult] | str] = []
        for a in prepared:
            if isinstance(a, str):
                out.append(a)
            else:
                out.append(
                    [
                        replace(r or _unresolved(), tool=_tool_of(plan))
                        for r, plan in zip(a.results, a.plans, strict=True)
                    ]
                )
        return out

    # ------------------------------------------------------------------ waves

    def _ready(self, a: _Answer, plan: CallPlan) -> tuple[bool, str | None, CallResult | None]:
        """(ready, edit source sha, failure) for a pending plan."""
        source = plan.source
        if source is None:
            return True, None, None
        if source.kind != "tag":
            return True, source.sha256, None
        earlier = a.results[source.index]
        if earlier is None:
            return False, None, None
        if earlier.image is None:
            return (
                True,
                None,
                CallResult(
                    status=FAILED,
                    reason=MISSING_IMAGE,
                    message=(
                        f"img_index {plan.params.get('img_index')} is the image of tag "
                        f"{source.index}, which produced none"
                    ),
                ),
            )
        return True, earlier.image, None

    def _wave(self, todo: list[_Answer], pool: ThreadPoolExecutor) -> bool:
        """Resolve every pending call whose inputs are known; False when none was pending."""
        pending, wanted, waiting = self._collect(todo)
        if not pending:
            return False
        if not waiting:
            return True  # failures or placeholders resolved; dependants next wave
        done = self.lookup(list(wanted.values()))
        self.stats.cached += sum(1 for _, _, t in waiting if t.key in done)
        missing = [t for k, t in wanted.items() if k not in done]
        done.update(self._execute_all(missing, pool))
        executed_keys = {t.key for t in missing}
        seen: set[str] = set()
        for a, i, task in waiting:
            result = done[task.key]
            if task.key in executed_keys:
                if task.key in seen:
                    self.stats.shared += 1
                    result = replace(result, cached=True)
                seen.add(task.key)
            a.results[i] = result
        return True

    def _collect(
        self, todo: list[_Answer]
    ) -> tuple[bool, dict[str, Task], list[tuple[_Answer, int, Task]]]:
        """(any call pending, the distinct tasks to run now, which call waits for which)."""
        wanted: dict[str, Task] = {}
        waiting: list[tuple[_Answer, int, Task]] = []
        pending = False
        for a in todo:
            for i, plan in enumerate(a.plans):
                if a.results[i] is not None:
                    continue
                pending = True
                ready, source_sha, failure = self._ready(a, plan)
                if not ready:
                    continue
                task = failure or task_for(plan, self.providers, source_sha)
                if isinstance(task, CallResult):
                    a.results[i] = task
                    continue
                wanted.setdefault(task.key, task)
                waiting.append((a, i, task))
        return pending, wanted, waiting

    def _execute_all(self, tasks: list[Task], pool: ThreadPoolExecutor) -> dict[str, CallResult]:
        out: dict[str, CallResult] = {}
        if not tasks:
            return out
        futures: dict[Future[Outcome], Task] = {}
        for task in tasks:
            image = None
            if task.input_sha256:
                image = self.load(task.input_sha256)
            futures[pool.submit(self._run, task, image)] = task
        last = time.monotonic()
        remaining = set(futures)
        while remaining:
            finished, remaining = wait(
                remaining, timeout=self.tick_seconds, return_when=FIRST_COMPLETED
            )
            for future in finished:
                task = futures.pop(future)
                outcome = future.result()
                self.stats.executed += 1
                out[task.key] = self.store(task, outcome)
            if self.tick is not None and time.monotonic() - last >= self.tick_seconds:
                self.tick()
                last = time.monotonic()
        return out

    def _run(self, task: Task, image: bytes | None) -> Outcome:
        if task.tool == "code":
            with self.code_slots:
                return run_task(task, self.providers, image)
        return run_task(task, self.providers, image)


def _tool_of(plan: CallPlan) -> str:
    return plan.tool or plan.label.strip().lower()[:40]


def _unresolved() -> CallResult:
    return CallResult(status=FAILED, reason=LIMIT, message="the call could not be resolved")
