"""What every judge shares: templates, calls with cache keys, strict parsing, judgments.

Pure Python (no Django). A judge is three things:

* a :class:`Template` (plain data: system and user text with ``{named}`` placeholders, a stable
  id and a version that is a hash of the text, so a report records which text produced it);
* a parser that is strict about the format the template asked for: it returns the parsed value
  or raises :class:`JudgeOutputError` saying what was wrong. It tolerates only what is plainly
  the same format: surrounding whitespace, and a ```json fence around JSON;
* an aggregation over :class:`Judgment` values, some of which may be failures.

The job layer runs :class:`Call` objects (OpenAI chat messages plus a cache key), feeds the raw
outputs back through :func:`judgment_from_outputs`, retries a failed parse once
(:func:`should_retry`), and hands the judgments to the judge's report function. Failed judgments
keep their raw text and are excluded from the figures, which count them (``excluded``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")

MAX_ATTEMPTS = 2
"""A call whose output does not parse is retried once, then recorded as failed."""


class JudgeOutputError(ValueError):
    """A judge's output is not in the format its template asked for."""


class TemplateError(ValueError):
    """A template cannot be rendered (a placeholder has no value, or the text is malformed)."""


# --------------------------------------------------------------------------- templates


@dataclass(frozen=True)
class Template:
    """A judge prompt: system and user text with ``{name}`` placeholders (``{{`` for a brace).

    ``version`` is the first 12 hex digits of the sha256 of the id and both texts, so any edit
    gives a new version and the same text always the same one.
    """

    id: str
    system: str
    user: str
    description: str = ""

    @property
    def version(self) -> str:
        blob = canonical_json({"id": self.id, "system": self.system, "user": self.user})
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]

    @property
    def placeholders(self) -> frozenset[str]:
        return frozenset(placeholders(self.system) | placeholders(self.user))


def placeholders(text: str) -> set[str]:
    """The ``{name}`` placeholders in a text."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise TemplateError(f"malformed template text: {exc}") from None
    names = set()
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            raise TemplateError(f"placeholder {{{name}}} must be a plain name like {{answer}}")
        names.add(name)
    return names


def render_text(text: str, values: Mapping[str, Any]) -> str:
    missing = sorted(placeholders(text) - set(values))
    if missing:
        raise TemplateError(f"no value for placeholder(s): {', '.join(missing)}")
    return text.format_map({k: str(v) for k, v in values.items()})


def render(template: Template, values: Mapping[str, Any]) -> tuple[str, str]:
    """The template's (system, user) text with the values filled in.

    Raises :class:`TemplateError` naming every placeholder that has no value. Extra values are
    ignored (a template edited to drop a placeholder still renders).
    """
    missing = sorted(template.placeholders - set(values))
    if missing:
        raise TemplateError(
            f"template {template.id!r}: no value for placeholder(s): {', '.join(missing)}"
        )
    return render_text(template.system, values), render_text(template.user, values)


# --------------------------------------------------------------------------- calls


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the same data always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cache_key(template: Template, model: str, inputs: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of template id and version, model and inputs."""
    blob = canonical_json(
        {"template": template.id, "version": template.version, "model": model, "inputs": inputs}
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Call:
    """One request to a judge model, ready to send, cache and replay.

    ``messages`` are OpenAI chat messages; images are ``image_url`` parts whose URL is what the
    caller passed (a data URL, or a reference such as ``sha256:...`` the job layer resolves).
    ``inputs`` are what the key was made from; ``label`` says which part of the report the call
    fills (``"r3"``, ``"precision"``, ``"image 2"``...).
    """

    key: str
    template_id: str
    template_version: str
    model: str
    label: str
    messages: list[dict[str, Any]]
    inputs: dict[str, Any] = field(default_factory=dict)

    @property
    def image_refs(self) -> list[str]:
        """The URLs of the call's image parts, in order (``sha256:...`` references or data
        URLs, as passed to :func:`build_call`)."""
        return [
            part["image_url"]["url"]
            for message in self.messages
            if isinstance(message.get("content"), list)
            for part in message["content"]
            if part.get("type") == "image_url"
        ]


def image_part(ref: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": ref}}


def build_call(
    template: Template,
    model: str,
    label: str,
    values: Mapping[str, Any],
    images: Sequence[str] = (),
) -> Call:
    """Render the template and wrap it as a :class:`Call` keyed on template, model and inputs
    (the placeholder values and the image references, in order)."""
    system, user = render(template, values)
    content: str | list[dict[str, Any]] = user
    if images:
        content = [{"type": "text", "text": user}, *(image_part(ref) for ref in images)]
    inputs: dict[str, Any] = {
        "values": {k: values[k] for k in sorted(template.placeholders)},
        "images": list(images),
    }
    return Call(
        key=cache_key(template, model, inputs),
        template_id=template.id,
        template_version=template.version,
        model=model,
        label=label,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": content}],
        inputs=inputs,
    )


# --------------------------------------------------------------------------- judgments


@dataclass(frozen=True)
class Attempt:
    raw: str
    error: str | None = None


@dataclass(frozen=True)
class Judgment(Generic[T]):
    """The parsed value of one call, or its failure with every raw output kept."""

    label: str
    value: T | None
    attempts: tuple[Attempt, ...]
    key: str = ""
    template_id: str = ""
    template_version: str = ""

    @property
    def ok(self) -> bool:
        return self.value is not None

    @property
    def error(self) -> str | None:
        return None if self.ok or not self.attempts else self.attempts[-1].error

    @property
    def raw(self) -> str:
        return self.attempts[-1].raw if self.attempts else ""


def judgment_from_outputs(
    call: Call | None, raws: Sequence[str], parse: Callable[[str], T], label: str = ""
) -> Judgment[T]:
    """Parse the outputs of one call in order (first try, then the retry); the first that
    parses wins. With none parsing the judgment is a failure keeping each raw text and error."""
    attempts: list[Attempt] = []
    value: T | None = None
    for raw in raws:
        try:
            value = parse(raw)
        except JudgeOutputError as exc:
            attempts.append(Attempt(raw=raw if isinstance(raw, str) else repr(raw), error=str(exc)))
            continue
        attempts.append(Attempt(raw=raw))
        break
    if not raws:
        attempts.append(Attempt(raw="", error="no output"))
    return Judgment(
        label=label or (call.label if call else ""),
        value=value,
        attempts=tuple(attempts),
        key=call.key if call else "",
        template_id=call.template_id if call else "",
        template_version=call.template_version if call else "",
    )


def should_retry(judgment: Judgment[Any]) -> bool:
    """True when the output did not parse and the call has not yet been retried."""
    return not judgment.ok and len(judgment.attempts) < MAX_ATTEMPTS


# --------------------------------------------------------------------------- strict parsing

_FENCE_RE = re.compile(r"\A```(?:json|JSON)?[ \t]*\n(.*)\n[ \t]*```\Z", re.DOTALL)


def output_text(raw: object) -> str:
    if not isinstance(raw, str):
        raise JudgeOutputError(f"expected text output, got {type(raw).__name__}")
    text = raw.strip()
    if not text:
        raise JudgeOutputError("empty output")
    return text


def load_json_object(raw: object) -> dict[str, Any]:
    """The JSON object the output consists of (optionally inside a ```json fence)."""
    text = output_text(raw)
    fenced = _FENCE_RE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        raise JudgeOutputError(f"not valid JSON: {msg}") from None
    if not isinstance(value, dict):
        raise JudgeOutputError(f"expected a JSON object, got {_json_type(value)}")
    return value


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "null"


def require_keys(obj: Mapping[str, Any], keys: Sequence[str], where: str = "") -> None:
    prefix = f"{where}: " if where else ""
    missing = [k for k in keys if k not in obj]
    if missing:
        raise JudgeOutputError(f"{prefix}missing key(s): {', '.join(missing)}")
    extra = sorted(set(obj) - set(keys))
    if extra:
        raise JudgeOutputError(f"{prefix}unexpected key(s): {', '.join(extra)}")


def require_int(value: Any, name: str, low: int, high: int) -> int:
    """An integer in [low, high]; a float with no fraction (2.0) is the same number."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise JudgeOutputError(f"{name} must be an integer, got {_json_type(value)}")
    if not low <= value <= high:
        raise JudgeOutputError(f"{name} must be between {low} and {high}, got {value}")
    return value


def require_str(value: Any, name: str, allow_empty: bool = True) -> str:
    if not isinstance(value, str):
        raise JudgeOutputError(f"{name} must be a string, got {_json_type(value)}")
    if not allow_empty and not value.strip():
        raise JudgeOutputError(f"{name} must not be empty")
    return value


def parse_score_lines(raw: object, labels: Sequence[str], low: int, high: int) -> list[int]:
    """Exactly one ``Label: n`` line per label, in order, nothing else (blank lines aside)."""
    lines = [line.strip() for line in output_text(raw).splitlines() if line.strip()]
    expected = "; ".join(f"{label}: n" for label in labels)
    if len(lines) != len(labels):
        raise JudgeOutputError(f"expected {len(labels)} lines ({expected}), got {len(lines)}")
    scores = []
    for line, label in zip(lines, labels, strict=True):
        name, sep, value = line.partition(":")
        if not sep or name.strip() != label:
            raise JudgeOutputError(f"expected a line '{label}: n', got {line[:80]!r}")
        value = value.strip()
        if not re.fullmatch(r"[+-]?\d{1,6}", value):
            raise JudgeOutputError(f"{label} must be an integer, got {value[:40]!r}")
        scores.append(require_int(int(value), label, low, high))
    return scores


def normalise_1_to_5(score: int) -> float:
    """A 1-5 score on [0, 1]: (s - 1) / 4."""
    return (score - 1) / 4


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
