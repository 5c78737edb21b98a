"""Model calls as jobs: which model a project uses, starting a call (through the job
pipeline), running it (the model-call kind's runner), recording it as a ModelCall row, and
retrying a failed call as a new job."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from benchmark import permissions
from benchmark.exceptions import Conflict, DomainError, ValidationFailed
from benchmark.jobs import services
from benchmark.jobs.kinds import Progress
from benchmark.llm.cache import CachedAnswer
from benchmark.llm.client import (
    CACHE_MODES,
    CacheMode,
    ChatClient,
    ChatRequest,
    ChatResult,
    ImageInput,
    ModelConfig,
    ModelError,
    ModelNotConfigured,
)
from benchmark.models import Image, Item, Job, JobStatus, ModelCall, Project
from benchmark.typing import User

log = logging.getLogger(__name__)

MODEL_CALL_KIND = "model_call"
MAX_PROMPT_CHARS = 200_000
MAX_IMAGES = 32

HOW_TO_CONFIGURE = (
    "Set BENCHWRIGHT_MODEL_BASE_URL (e.g. http://127.0.0.1:11434/v1 for Ollama) and "
    "BENCHWRIGHT_MODEL_NAME, plus BENCHWRIGHT_MODEL_API_KEY if the endpoint needs a key, in the "
    "environment of the web server and the worker; or give the project its own model in its "
    'settings: {"model": {"base_url": ..., "model": ..., "api_key_env": "NAME_OF_KEY_VARIABLE"}}, '
    "where the key variable must be listed in MODEL_API_KEY_ENV_ALLOWLIST."
)


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class ResolvedModel:
    config: ModelConfig
    source: str  # "project settings" or "environment"
    cache_mode: CacheMode
    params: dict[str, Any]


def _number(raw: dict[str, Any], name: str, default: float, kind: type) -> Any:
    value = raw.get(name, default)
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ModelNotConfigured(f"the project's model setting {name!r} must be a number") from None


DEFAULT_KEY_ENV = "BENCHWRIGHT_MODEL_API_KEY"


def _same_endpoint(a: str, b: str) -> bool:
    return a.strip().rstrip("/") == b.strip().rstrip("/")


def api_key_env_allowed() -> dict[str, str | None]:
    """The environment variables a project may name as its "api_key_env"
    (MODEL_API_KEY_ENV_ALLOWLIST), each with the only base URL its key goes to (None: any).
    Names only: never the keys."""
    allowed: dict[str, str | None] = {}
    for entry in settings.MODEL_API_KEY_ENV_ALLOWLIST:
        entry_name, _, url = str(entry).strip().partition("=")
        if entry_name.strip():
            allowed[entry_name.strip()] = url.strip() or None
    return allowed


def _api_key_from_environment(*, name: str, base_url: str, env_url: str) -> str:
    """The key in the environment variable ``name``, which a project's settings named as its
    "api_key_env". Only variables in MODEL_API_KEY_ENV_ALLOWLIST may be named (any other, such
    as HOME or SECRET_KEY, would be sent to a URL the project chose), and an entry
    ``NAME=URL`` allows NAME for that base URL only; the default key variable goes only to the
    default base URL. ModelNotConfigured, naming the setting, for anything else."""
    allowed = api_key_env_allowed()
    setting = 'the project\'s model setting "api_key_env"'
    if name not in allowed:
        raise ModelNotConfigured(
            f"{setting} names {name}, which is not an allowed key variable: the operator must "
            "add it to MODEL_API_KEY_ENV_ALLOWLIST in the server's environment"
        )
    endpoint = env_url if name == DEFAULT_KEY_ENV else allowed[name]
    if endpoint is not None and not _same_endpoint(endpoint, base_url):
        raise ModelNotConfigured(
            f"{setting} names {name}, which is the key of another endpoint; it is not sent to "
            f"{base_url}"
        )
    if name == DEFAULT_KEY_ENV:
        return str(settings.BENCHWRIGHT_MODEL_API_KEY)
    return os.environ.get(name, "")


def model_resolve(*, project: Project) -> ResolvedModel | None:
    """The model a project calls: ``Project.settings["model"]`` where it names a base URL or a
    model, else the BENCHWRIGHT_MODEL_* settings. None when neither names both a base URL and a
    model. The environment's API key goes only to the environment's base URL, never to a URL a
    project set, and a project may name as its key only an allow-listed environment variable
    (``_api_key_from_environment``). ModelNotConfigured for settings that are present but
    wrong."""
    raw = (project.settings or {}).get("model") or {}
    if not isinstance(raw, dict):
        raise ModelNotConfigured('the project\'s "model" setting must be an object')
    env_url = settings.BENCHWRIGHT_MODEL_BASE_URL
    base_url = str(raw.get("base_url") or env_url or "")
    model = str(raw.get("model") or settings.BENCHWRIGHT_MODEL_NAME or "")
    if not base_url or not model:
        return None
    if raw.get("api_key"):
        api_key = str(raw["api_key"])
    elif raw.get("api_key_env"):
        api_key = _api_key_from_environment(
            name=str(raw["api_key_env"]), base_url=base_url, env_url=env_url
        )
    elif base_url == env_url:
        api_key = settings.BENCHWRIGHT_MODEL_API_KEY
    else:
        api_key = ""
    mode = raw.get("cache", "use")
    if mode not in CACHE_MODES:
        raise ModelNotConfigured(f"the project's model cache mode must be one of {CACHE_MODES}")
    params = raw.get("params") or {}
    if not isinstance(params, dict):
        raise ModelNotConfigured('the project\'s model "params" must be an object')
    config = ModelConfig(
        base_url=base_url,
        model=model,
        api_key=api_key,
        timeout=_number(raw, "timeout", settings.BENCHWRIGHT_MODEL_TIMEOUT, float),
        max_retries=_number(raw, "max_retries", settings.BENCHWRIGHT_MODEL_MAX_RETRIES, int),
        backoff_base=_number(raw, "backoff_base", 0.5, float),
        concurrency=_number(raw, "concurrency", settings.BENCHWRIGHT_MODEL_CONCURRENCY, int),
        rpm=_number(raw, "rpm", settings.BENCHWRIGHT_MODEL_RPM, int),
    )
    source = "project settings" if raw.get("base_url") or raw.get("model") else "environment"
    return ResolvedModel(config=config, source=source, cache_mode=mode, params=params)


# --------------------------------------------------------------------------- the cache


class ModelCallCache:
    """The ModelCall table as a response cache: any recorded answer (no error) for the key.
    ``put`` does nothing, since every call is recorded by ``model_call_run``."""

    def get(self, key: str) -> CachedAnswer | None:
        row = (
            ModelCall.objects.filter(request_key=key, error="")
            .order_by("cached", "-created_at", "-id")
            .first()
        )
        if row is None:
            return None
        return CachedAnswer(
            text=row.answer,
            model=row.model,
            prompt_tokens=row.prompt_tokens,
            completion_tokens=row.completion_tokens,
            latency_ms=row.latency_ms or 0,
        )

    def put(self, key: str, answer: CachedAnswer) -> None:
        return None


# --------------------------------------------------------------------------- starting


#: Kinds of job that are one model call: their runner calls ``model_call_job`` (and may then
#: do something with the answer, as model drafting does). Failed jobs of these kinds "Retry"
#: runs again with the same parameters.
RETRYABLE_KINDS: set[str] = {MODEL_CALL_KIND}


def model_call_kind_register(name: str) -> None:
    """Declare ``name`` a model-call kind: ``model_call_start(kind=name)`` may start it and a
    failed one may be retried. Its runner calls ``model_call_job`` first (from an app's
    ``ready()``, next to registering the job kind)."""
    RETRYABLE_KINDS.add(name)


def model_call_start(
    *,
    project: Project,
    user: User,
    item: Item | None = None,
    purpose: str,
    prompt: str,
    images: list[str] | tuple[str, ...] = (),
    system: str = "",
    params: dict[str, Any] | None = None,
    mode: str | None = None,
    kind: str = MODEL_CALL_KIND,
    extra: dict[str, Any] | None = None,
) -> Job:
    """Check the request, create a model-call Job and enqueue its task after commit.
    ``images`` are sha256s of images of the project, sent in that order. ``mode`` overrides
    the project's cache mode ("use", "off" or "replay"). ``kind`` is a model-call kind
    (``model_call_kind_register``) whose runner does more with the answer; ``extra`` are
    params that runner reads (they may not replace the call's own)."""
    if kind not in RETRYABLE_KINDS:
        raise ValueError(f"{kind!r} is not a model-call kind")
    permissions.require(user=user, project=project, action="ask_model")
    prompt = (prompt or "").strip()
    if not prompt:
        raise ValidationFailed("write a prompt for the model")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise ValidationFailed(f"the prompt is longer than {MAX_PROMPT_CHARS} characters")
    purpose = (purpose or "").strip()
    if not purpose or len(purpose) > 50:
        raise ValidationFailed("a model call needs a purpose of at most 50 characters")
    if item is not None and item.project_id != project.pk:
        raise ValidationFailed("the item is not in this project")
    shas = _project_images(project, images)
    if mode is not None and mode not in CACHE_MODES:
        raise ValidationFailed(f"unknown cache mode {mode!r}")
    try:
        resolved = model_resolve(project=project)
    except ModelNotConfigured as exc:
        raise ValidationFailed(str(exc)) from exc
    if resolved is None:
        raise ValidationFailed("No model is configured. " + HOW_TO_CONFIGURE)
    return services.job_start(
        kind=kind,
        user=user,
        project=project,
        total=1,
        params={
            "project_id": project.pk,
            "item_id": item.pk if item is not None else None,
            "purpose": purpose,
            "system": system,
            "prompt": prompt,
            "images": shas,
            "params": params or {},
            "mode": mode,
            **{k: v for k, v in (extra or {}).items() if k not in _CALL_PARAMS},
        },
    )


_CALL_PARAMS = frozenset(
    {"project_id", "item_id", "purpose", "system", "prompt", "images", "params", "mode"}
)


def _project_images(project: Project, images: list[str] | tuple[str, ...]) -> list[str]:
    """The distinct hashes of ``images``, all of them images of the project."""
    shas = list(dict.fromkeys(images))
    if len(shas) > MAX_IMAGES:
        raise ValidationFailed(f"send at most {MAX_IMAGES} images")
    known = set(
        Image.objects.filter(sha256__in=shas, projects=project).values_list("sha256", flat=True)
    )
    unknown = [sha for sha in shas if sha not in known]
    if unknown:
        raise ValidationFailed(f"image {unknown[0][:12]} is not an image of this project")
    return shas


def job_retry(*, job: Job, user: User) -> Job:
    """Run a failed job again as a new job with the same parameters (``retry_of`` names the
    old one); the failed job stays as it was."""
    if job.project is None:
        raise ValidationFailed("only a project's jobs can be retried")
    permissions.require(user=user, project=job.project, action="ask_model")
    if job.kind not in RETRYABLE_KINDS:
        raise ValidationFailed(f"a {job.kind} job cannot be retried; start it again instead")
    if job.status != JobStatus.FAILED:
        raise Conflict("only a failed job can be retried")
    return services.job_start(
        kind=job.kind,
        user=user,
        project=job.project,
        total=job.total,
        params={**job.params, "retry_of": job.pk},
    )


# --------------------------------------------------------------------------- running


def image_input(image: Image) -> ImageInput:
    """A stored image's bytes, ready to send to a model; ModelError when its file is missing.
    Reads only the file, through a handle of its own (no query, and the instance is not
    changed), so worker threads may call it on a shared instance."""
    try:
        if not image.file.name:
            raise FileNotFoundError(image.sha256)
        with image.file.storage.open(image.file.name, "rb") as handle:
            data = handle.read()
    except (FileNotFoundError, IsADirectoryError, ValueError):
        raise ModelError(f"the file of image {image.sha256[:12]} is missing") from None
    return ImageInput(sha256=image.sha256, data=data)


def _load_images(shas: list[str]) -> list[ImageInput]:
    by_sha = {img.sha256: img for img in Image.objects.filter(sha256__in=shas)}
    out = []
    for sha in shas:
        image = by_sha.get(sha)
        if image is None:
            raise ModelError(f"image {sha[:12]} no longer exists")
        out.append(image_input(image))
    return out


def _record(
    *,
    job: Job,
    config: ModelConfig,
    request: ChatRequest,
    result: ChatResult | None,
    error: str = "",
    key: str,
    attempts: int = 0,
) -> ModelCall:
    p = job.params
    fields: dict[str, Any] = {
        "request_key": key,
        "project_id": job.project_id,
        "item_id": p.get("item_id"),
        "purpose": p.get("purpose", ""),
        "endpoint": config.base_url[:500],
        "model": config.model[:200],
        "system": request.system,
        "prompt": request.prompt,
        "image_sha256s": [img.sha256 for img in request.images],
        "params": request.params,
        "answer": result.text if result else "",
        "latency_ms": result.latency_ms if result else None,
        "prompt_tokens": result.prompt_tokens if result else None,
        "completion_tokens": result.completion_tokens if result else None,
        "attempts": result.attempts if result else attempts,
        "error": error,
        "cached": result.cached if result else False,
        "created_by_id": job.created_by_id,
    }
    if fields["item_id"] is not None and not Item.objects.filter(pk=fields["item_id"]).exists():
        fields["item_id"] = None
    call, _ = ModelCall.objects.update_or_create(job=job, defaults=fields)
    return call


def model_call_job(*, job: Job, progress: Progress) -> dict[str, Any]:
    """The model-call kind's runner: call the model (or answer from the cache) and record a
    ModelCall row, also for a failed call (then the error is the job's message)."""
    p = job.params
    try:
        if job.project is None:
            raise ModelError("the job has no project")
        resolved = model_resolve(project=job.project)
        if resolved is None:
            raise ModelNotConfigured("No model is configured. " + HOW_TO_CONFIGURE)
    except ModelError as exc:
        raise DomainError(str(exc)) from exc
    config = resolved.config
    # Recorded answers are keyed by endpoint and project too: never another endpoint's or
    # another project's answer.
    scope = f"project:{job.project_id}"
    request = ChatRequest(prompt=p.get("prompt", ""), system=p.get("system", ""))
    key = request.key(config.model, endpoint=config.base_url, scope=scope)
    try:
        request = ChatRequest(
            prompt=p.get("prompt", ""),
            system=p.get("system", ""),
            images=tuple(_load_images(list(p.get("images") or []))),
            params={**resolved.params, **(p.get("params") or {})},
        )
        client = ChatClient(
            config, cache=ModelCallCache(), mode=p.get("mode") or resolved.cache_mode, scope=scope
        )
        key = client.key(request)
        result = client.complete(
            request, progress=lambda message: progress(progress=0, message=message)
        )
    except ModelError as exc:
        attempts = getattr(exc, "attempts", 0)
        _record(
            job=job,
            config=config,
            request=request,
            result=None,
            error=str(exc),
            key=key,
            attempts=attempts,
        )
        raise DomainError(str(exc)) from exc
    except Exception as exc:
        # Recorded as a failed call; the pipeline logs the traceback and fails the job (or
        # records it as cancelled).
        message = (
            "cancelled"
            if isinstance(exc, services.JobCancelled)
            else f"unexpected error: {exc.__class__.__name__}"
        )
        _record(job=job, config=config, request=request, result=None, error=message, key=key)
        raise
    call = _record(job=job, config=config, request=request, result=result, key=key)
    return {
        "answer": result.text,
        "model": result.model,
        "model_call_id": call.pk,
        "item_id": call.item_id,
        "latency_ms": result.latency_ms,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "cached": result.cached,
        "attempts": result.attempts,
    }
