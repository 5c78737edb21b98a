"""Tool providers of a project's evaluation runs, configured per project.

Retrieval (Agentic-MME's ``google_search``, ``google_lens_search``, ``fetch_webpage``,
``download_image``): the project's settings name an HTTP retrieval API,

    {"evaluation": {"retrieval": {"base_url": "https://search.example.org/v1",
                                  "api_key_env": "RETRIEVAL_KEY",
                                  "concurrency": 4, "rpm": 60, "max_retries": 3}}}

(the last three optional: calls at once per process, requests a minute from all threads, 0
for no cap, and retries of a transient failure, with backoff and a 429's Retry-After; the
model client's machinery, ``benchmark.pacing``), and the key is read from the environment variable, which must be allow-listed like a model
key (``MODEL_API_KEY_ENV_ALLOWLIST``, ``NAME=URL`` for that base URL only). The provider class
is the Agentic-MME protocol's (``RETRIEVAL_CLASS``); this factory is listed in
``EVALUATION_TOOL_PROVIDERS`` by default. Without the setting: no provider, and the tools
answer "not available here" (a replay answers them from the record)."""

from __future__ import annotations

import os
from typing import Any

from django.utils.module_loading import import_string

from benchmark.exceptions import ValidationFailed
from benchmark.llm.services import api_key_env_allowed
from benchmark.models import Project

RETRIEVAL_CLASS = "benchmark.evaluation.mme_retrieval.HttpRetrievalProvider"
SETTING = 'the project\'s setting "evaluation.retrieval"'
#: The provider's limits a project may set: (lowest, highest).
LIMITS = {"concurrency": (1, 64), "rpm": (0, 100_000), "max_retries": (0, 10)}


def _limits(raw: dict[str, Any]) -> dict[str, int]:
    limits = {}
    for name, (low, high) in LIMITS.items():
        if raw.get(name) in (None, ""):
            continue
        value = raw[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValidationFailed(
                f"{SETTING}: {name} must be a whole number from {low} to {high}, not {value!r}"
            )
        limits[name] = value
    return limits


def retrieval_provider(project: Project) -> Any:
    """The project's retrieval provider, or None when it configures none. ValidationFailed
    naming the setting when it is wrong."""
    raw = ((project.settings or {}).get("evaluation") or {}).get("retrieval")
    if not raw:
        return None
    if not isinstance(raw, dict) or not str(raw.get("base_url") or "").startswith(
        ("http://", "https://")
    ):
        raise ValidationFailed(f"{SETTING} needs an http(s) base_url")
    base_url = str(raw["base_url"])
    limits = _limits(raw)
    key = ""
    name = str(raw.get("api_key_env") or "")
    if name:
        allowed = api_key_env_allowed()
        if name not in allowed:
            raise ValidationFailed(
                f"{SETTING} names {name}, which is not an allowed key variable: the operator "
                "must add it to MODEL_API_KEY_ENV_ALLOWLIST"
            )
        only = allowed[name]
        if only is not None and only.rstrip("/") != base_url.rstrip("/"):
            raise ValidationFailed(
                f"{SETTING} names {name}, which is the key of another endpoint; it is not "
                f"sent to {base_url}"
            )
        key = os.environ.get(name, "")
    try:
        provider_class = import_string(RETRIEVAL_CLASS)
    except ImportError:
        return None
    return provider_class(base_url=base_url, api_key=key, **limits)
