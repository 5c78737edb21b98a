"""Rendering interleaved answers as their reader sees them. Pure Python (no Django).

* ``markup``: Markdown to sanitized HTML (markdown-it with raw HTML off, then nh3), tool calls
  drawn in place by a caller's function; the result is a ``SanitizedHtml``, which templates
  print with the ``sanitized`` filter (``{% load sanitized %}``);
* ``preview``: the tag editor's preview (nothing executed);
* ``calls``: what each tool call asks for, the limits, and what became of it (``CallResult``:
  ``rendered``, ``placeholder`` or ``failed`` with a reason);
* ``providers``: image generation and editing (OpenAI-compatible images API), image search
  (an HTTP JSON endpoint) and code (``benchmark.sandbox``);
* ``execute``: executing the calls of many answers concurrently, with a cache;
* ``document``: the rendered document as HTML, and as a standalone file.

The Django side (models, the cache table, the job and the pages) is ``review.answer_rendering``.
"""

from benchmark.rendering.calls import (
    EXECUTORS,
    LABELS,
    REASONS,
    STATUSES,
    CallPlan,
    CallResult,
    Limits,
    Source,
    Task,
    clean_code,
    plan_calls,
)
from benchmark.rendering.document import data_url, document_html, standalone_html
from benchmark.rendering.execute import AnswerInput, BatchRenderer, Outcome, run_task, task_for
from benchmark.rendering.markup import SanitizedHtml
from benchmark.rendering.providers import (
    Found,
    HttpImageSearch,
    ImageEndpoint,
    OpenAIImageEditor,
    OpenAIImageGenerator,
    ProviderError,
    Providers,
    SandboxCodeRunner,
    sandbox_code_runner,
)

__all__ = [
    "EXECUTORS",
    "LABELS",
    "REASONS",
    "STATUSES",
    "AnswerInput",
    "BatchRenderer",
    "CallPlan",
    "CallResult",
    "Found",
    "HttpImageSearch",
    "ImageEndpoint",
    "Limits",
    "OpenAIImageEditor",
    "OpenAIImageGenerator",
    "Outcome",
    "ProviderError",
    "Providers",
    "SandboxCodeRunner",
    "SanitizedHtml",
    "Source",
    "Task",
    "clean_code",
    "data_url",
    "document_html",
    "plan_calls",
    "run_task",
    "sandbox_code_runner",
    "standalone_html",
    "task_for",
]
