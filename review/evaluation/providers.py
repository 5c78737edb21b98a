"""Tool providers of a project's evaluation runs, configured per project: each an HTTP API
(``benchmark.evaluation.http_tools``) named in the project's settings, with its key read from
an allow-listed environment variable and its limits checked here, once for every provider.

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
answer "not available here" (a replay answers them from the record).

m&m's tools that no code here runs (object detection, image segmentation, automatic speech
recognition and the public APIs): ``{"evaluation": {"mms_tools": {...}}}`` with the same keys,
plus ``tools``, the list of those tools the service implements (default: all twelve). The
provider is ``benchmark.evaluation.mms_provided.MmsToolProvider`` (``MMS_TOOLS_CLASS``), made
by ``mms_tool_provider``, which is also listed by default."""

from __future__ import annotations

import os
from typing import Any

from django.utils.module_loading import import_string

from benchmark.exceptions import ValidationFailed
from benchmark.llm.services import api_key_env_allowed
from benchmark.models import Project

RETRIEVAL_CLASS = "benchmark.evaluation.mme_retrieval.HttpRetrievalProvider"
MMS_TOOLS_CLASS = "benchmark.evaluation.mms_provided.MmsToolProvider"
#: The provider's limits a project may set: (lowest, highest).
LIMITS = {"concurrency": (1, 64), "rpm": (0, 100_000), "max_retries": (0, 10)}


def _setting(key: str) -> str:
    return f'the project\'s setting "evaluation.{key}"'


def _limits(raw: dict[str, Any], setting: str) -> dict[str, int]:
    limits = {}
    for name, (low, high) in LIMITS.items():
        if raw.get(name) in (None, ""):
            continue
        value = raw[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValidationFailed(
                f"{setting}: {name} must be a whole number from {low} to {high}, not {value!r}"
            )
        limits[name] = value
    return limits


def _configured(project: Project, key: str) -> Any:
    """What the project's setting ``evaluation.<key>`` holds (falsy: no provider)."""
    return ((project.settings or {}).get("evaluation") or {}).get(key)


def _http_provider(project: Project, key: str, class_path: str, tools: tuple[str, ...] = ()) -> Any:
    """The provider ``class_path`` at the HTTP API the project's setting ``evaluation.<key>``
    names, or None when it names none. ``tools``: the tools the setting may list under
    ``tools`` (the provider offers those only); empty for a provider without that choice.
    ValidationFailed naming the setting when it is wrong."""
    setting = _setting(key)
    raw = _configured(project, key)
    if not raw:
        return None
    if not isinstance(raw, dict) or not str(raw.get("base_url") or "").startswith(
        ("http://", "https://")
    ):
        raise ValidationFailed(f"{setting} needs an http(s) base_url")
    base_url = str(raw["base_url"])
    options: dict[str, Any] = dict(_limits(raw, setting))
    if tools and raw.get("tools") not in (None, ""):
        chosen = raw["tools"]
        if (
            not isinstance(chosen, list)
            or not chosen
            or not all(isinstance(t, str) for t in chosen)
        ):
            raise ValidationFailed(f"{setting}: tools must be a list of tool names")
        unknown = [t for t in chosen if t not in tools]
        if unknown:
            raise ValidationFailed(
                f"{setting}: {unknown[0]!r} is not one of its tools ({', '.join(tools)})"
            )
        options["offered"] = tuple(dict.fromkeys(chosen))
    api_key = ""
    name = str(raw.get("api_key_env") or "")
    if name:
        allowed = api_key_env_allowed()
        if name not in allowed:
            raise ValidationFailed(
                f"{setting} names {name}, which is not an allowed key variable: the operator "
                "must add it to MODEL_API_KEY_ENV_ALLOWLIST"
            )
        only = allowed[name]
        if only is not None and only.rstrip("/") != base_url.rstrip("/"):
            raise ValidationFailed(
                f"{setting} names {name}, which is the key of another endpoint; it is not "
                f"sent to {base_url}"
            )
        api_key = os.environ.get(name, "")
    try:
        provider_class = import_string(class_path)
    except ImportError:
        return None
    return provider_class(base_url=base_url, api_key=api_key, **options)


def retrieval_provider(project: Project) -> Any:
    """The project's retrieval provider, or None when it configures none. ValidationFailed
    naming the setting when it is wrong."""
    return _http_provider(project, "retrieval", RETRIEVAL_CLASS)


def mms_tool_provider(project: Project) -> Any:
    """The project's provider of m&m's detection, segmentation, speech and public-API tools
    (``evaluation.mms_tools``), or None when it configures none. ValidationFailed naming the
    setting when it is wrong."""
    if not _configured(project, "mms_tools"):
        # Every project's runs ask (the factories are the operator's list): the m&m's tools'
        # names are loaded (with Pillow and the image operations, ~25 ms) only where needed.
        return None
    from benchmark.evaluation.mms_tools import PROVIDED_TOOLS

    return _http_provider(project, "mms_tools", MMS_TOOLS_CLASS, PROVIDED_TOOLS)
