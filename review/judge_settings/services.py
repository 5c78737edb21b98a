"""Editing a project's judge settings (project admins): a judge template's text, a reset to the
built-in text, and the LLM-I reward weights.

Every save adds a version; nothing is overwritten. A save names the version it was made on
(``base_number``, 0 for the built-in text / the default weights): when someone saved since,
it raises a Conflict carrying their version (409 with the other person's change), and a
database constraint (one number per template and project) catches two saves at once.

A template's text must render (``benchmark.judge_prompts.base``: ``{name}`` placeholders, ``{{``
and ``}}`` for a literal brace), use exactly the placeholders of the built-in template (the
judge fills in those and no others), stay under ``MAX_TEMPLATE_CHARS`` per part, and for an
ATP-Bench MAM agent keep the agent's name in the system text. Weights must be numbers of 0
or more with a positive sum; they are stored normalised to sum 1.
"""

from __future__ import annotations

import math
from typing import Any

from django.db import transaction

from benchmark import permissions
from benchmark.exceptions import ValidationFailed
from benchmark.judge_prompts import Template, TemplateError, render
from benchmark.judge_prompts.base import placeholders
from benchmark.models import Project
from benchmark.typing import User
from benchmark.versions import StaleVersion, version_save
from review.judge_settings.selectors import WEIGHT_PRESETS, agent_names, builtin_by_id
from review.judges.models import JudgeTemplateVersion, JudgeWeights
from review.judges.run_settings import judge_weights_for, template_current

MAX_TEMPLATE_CHARS = 20_000
MAX_NOTE_CHARS = 300
BRACES = "write {{ and }} for a literal brace"


class TemplateInvalid(ValidationFailed):
    """The edited text cannot be used; ``errors`` maps ``"system"``, ``"user"`` or ``""``
    (the whole template) to its messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        parts = [f"{where} text: {m}" if where else m for where, ms in errors.items() for m in ms]
        super().__init__("; ".join(parts))


def _template_stale(
    template_id: str, base_number: int, current: JudgeTemplateVersion
) -> StaleVersion:
    """Someone saved a version of the template after ``base_number``; ``current`` is theirs."""
    who = current.author.get_username() if current.author else "someone"
    opened = f"version {base_number}" if base_number else "the built-in text"
    return StaleVersion(
        f"{who} saved version {current.number} of {template_id} after you opened {opened}; "
        "your text was not saved. Their version is shown: apply your change to it and "
        "save again.",
        current=current,
        base_number=base_number,
    )


def _weights_stale(base_number: int, current: JudgeWeights) -> StaleVersion:
    who = current.created_by.get_username() if current.created_by else "someone"
    return StaleVersion(
        f"{who} saved weights version {current.number} (rule {current.rule:.3g}, llm "
        f"{current.llm:.3g}, mllm {current.mllm:.3g}) after you opened version "
        f"{base_number}; yours were not saved. Check theirs and save again.",
        current=current,
        base_number=base_number,
    )


def _normalise_newlines(text: str) -> str:
    # Browsers send a textarea's lines with CRLF; the built-in texts use LF.
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _part_errors(text: str) -> tuple[set[str], str]:
    """The placeholders of one part (system or user text), or what is wrong with it."""
    if not text.strip():
        return set(), "must not be empty"
    if len(text) > MAX_TEMPLATE_CHARS:
        return set(), f"is {len(text):,} characters long; at most {MAX_TEMPLATE_CHARS:,}"
    try:
        return placeholders(text), ""
    except TemplateError as exc:
        return set(), f"{exc} ({BRACES})"


def template_check(*, template_id: str, system: str, user_text: str) -> Template:
    """The edited template, or TemplateInvalid naming every problem."""
    builtin = _builtin(template_id)
    errors: dict[str, list[str]] = {}
    used: set[str] = set()
    for where, text in (("system", system), ("user", user_text)):
        names, error = _part_errors(text)
        if error:
            errors[where] = [error]
        used |= names
    if errors:
        raise TemplateInvalid(errors)
    wanted = builtin.placeholders
    missing, unknown = sorted(wanted - used), sorted(used - wanted)
    if missing:
        errors.setdefault("", []).append(
            "keep the placeholder(s) "
            + ", ".join(f"{{{n}}}" for n in missing)
            + ": the judge fills them in with each answer's data"
        )
    if unknown:
        errors.setdefault("", []).append(
            "unknown placeholder(s) "
            + ", ".join(f"{{{n}}}" for n in unknown)
            + "; this template can use only "
            + ", ".join(f"{{{n}}}" for n in sorted(wanted))
            + f" ({BRACES})"
        )
    agent = agent_names().get(template_id)
    if agent and agent not in system:
        errors.setdefault("system", []).append(
            f"must name the agent, {agent!r}: the MAM agents are told apart by their name"
        )
    template = Template(
        id=builtin.id, system=system, user=user_text, description=builtin.description
    )
    if not errors:
        try:
            render(template, {name: f"<{name}>" for name in wanted})
        except TemplateError as exc:  # pragma: no cover - the checks above cover it
            errors.setdefault("", []).append(str(exc))
    if errors:
        raise TemplateInvalid(errors)
    return template


def _builtin(template_id: str) -> Template:
    builtins = builtin_by_id()
    builtin = builtins.get(template_id)
    if builtin is None:
        raise ValidationFailed(
            f"unknown judge template {template_id!r}; one of {', '.join(sorted(builtins))}"
        )
    return builtin


def _add_version(
    *, project: Project, template_id: str, base_number: int, fields: dict[str, Any]
) -> JudgeTemplateVersion:
    """Add version base_number + 1, or raise StaleVersion when base_number is stale."""

    def create(number: int, base: int | None, _written: Any) -> JudgeTemplateVersion:
        row = JudgeTemplateVersion(
            project=project, template_id=template_id, number=number, base_number=base or 0, **fields
        )
        row.full_clean(validate_constraints=False)
        row.save()
        return row

    with transaction.atomic():
        return version_save(
            latest=template_current(project=project, template_id=template_id),
            versions=JudgeTemplateVersion.objects.filter(
                project=project, template_id=template_id
            ).select_related("author"),
            base_number=base_number,
            stale=lambda current: _template_stale(template_id, base_number, current),
            create=create,
        )


def _current_template(project: Project, template_id: str) -> tuple[Template, int]:
    builtin = _builtin(template_id)
    row = template_current(project=project, template_id=template_id)
    if row is None:
        return builtin, 0
    if row.is_default:
        return builtin, row.number
    return Template(id=builtin.id, system=row.system, user=row.user), row.number


def _check_base(base_number: Any) -> int:
    if isinstance(base_number, bool) or not isinstance(base_number, int) or base_number < 0:
        raise ValidationFailed(f"base version must be a number of 0 or more, got {base_number!r}")
    return base_number


def _check_note(note: str) -> str:
    note = note.strip()
    if len(note) > MAX_NOTE_CHARS:
        raise ValidationFailed(f"the note is {len(note)} characters long; at most {MAX_NOTE_CHARS}")
    return note


def judge_template_save(
    *,
    project: Project,
    user: User,
    template_id: str,
    system: str,
    user_text: str,
    base_number: int,
    note: str = "",
) -> JudgeTemplateVersion:
    """Save the project's new text of a judge template as a new version (project admins).
    ValidationFailed (TemplateInvalid) for text the judge cannot use or no change;
    StaleVersion when someone saved after ``base_number``."""
    permissions.require(user=user, project=project, action="manage")
    return judge_template_version_create(
        project=project,
        user=user,
        template_id=template_id,
        system=system,
        user_text=user_text,
        base_number=base_number,
        note=note,
    )


def judge_template_version_create(
    *,
    project: Project,
    user: User,
    template_id: str,
    system: str,
    user_text: str,
    base_number: int,
    note: str = "",
) -> JudgeTemplateVersion:
    """The template-version service itself, for a caller that has checked the user may do
    it (the settings page: admins, ``judge_template_save``; worked examples from corrections:
    reviewers, ``review.agreement.judge_examples``). The same checks, the same new version."""
    base_number = _check_base(base_number)
    note = _check_note(note)
    template = template_check(
        template_id=template_id,
        system=_normalise_newlines(system),
        user_text=_normalise_newlines(user_text),
    )
    current, number = _current_template(project, template_id)
    if number == base_number and current.version == template.version:
        raise ValidationFailed(
            "the text is the same as the current one"
            + (f" (version {number})" if number else " (the built-in text)")
            + "; nothing was saved"
        )
    return _add_version(
        project=project,
        template_id=template_id,
        base_number=base_number,
        fields={
            "system": template.system,
            "user": template.user,
            "version": template.version,
            "is_default": False,
            "note": note,
            "author": user,
        },
    )


def judge_template_reset(
    *, project: Project, user: User, template_id: str, base_number: int, note: str = ""
) -> JudgeTemplateVersion:
    """Go back to the built-in text: a new version that follows the built-in template (the
    history keeps every earlier one). ValidationFailed when the project uses it already."""
    permissions.require(user=user, project=project, action="manage")
    base_number = _check_base(base_number)
    note = _check_note(note)
    builtin = _builtin(template_id)
    row = template_current(project=project, template_id=template_id)
    if (row.number if row else 0) == base_number and (row is None or row.is_default):
        raise ValidationFailed(f"{template_id} already uses the built-in text; nothing was saved")
    return _add_version(
        project=project,
        template_id=template_id,
        base_number=base_number,
        fields={
            "system": builtin.system,
            "user": builtin.user,
            "version": builtin.version,
            "is_default": True,
            "note": note or "reset to the built-in text",
            "author": user,
        },
    )


# --------------------------------------------------------------------------- weights


def _weight(name: str, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValidationFailed(f"w_{name} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(number):
        raise ValidationFailed(f"w_{name} must be a finite number, got {value!r}")
    if number < 0:
        raise ValidationFailed(f"w_{name} must be 0 or more, got {number:g}")
    return number


def judge_weights_save(
    *,
    project: Project,
    user: User,
    base_number: int,
    rule: Any = None,
    llm: Any = None,
    mllm: Any = None,
    preset: str = "",
) -> JudgeWeights:
    """Save the project's LLM-I reward weights as a new version (project admins): the given
    values, or a preset's (``WEIGHT_PRESETS``: "equal", "paper"). Each must be 0 or more and
    their sum above 0; they are stored divided by their sum, so they sum to 1 (2, 5, 3 is
    stored as 0.2, 0.5, 0.3). StaleVersion when someone saved after ``base_number``."""
    permissions.require(user=user, project=project, action="manage")
    base_number = _check_base(base_number)
    if preset:
        chosen = WEIGHT_PRESETS.get(preset)
        if chosen is None:
            raise ValidationFailed(f"unknown preset {preset!r}; one of {', '.join(WEIGHT_PRESETS)}")
        rule, llm, mllm = chosen.weights.rule, chosen.weights.llm, chosen.weights.mllm
    values = [_weight("rule", rule), _weight("llm", llm), _weight("mllm", mllm)]
    total = sum(values)
    if total <= 0:
        raise ValidationFailed(
            "at least one weight must be above 0 (they are divided by their sum)"
        )
    rule_n, llm_n, mllm_n = (v / total for v in values)
    with transaction.atomic():
        current = judge_weights_for(project=project)

        def unchanged() -> None:
            now = current.weights
            if all(
                math.isclose(a, b, abs_tol=1e-9)
                for a, b in ((rule_n, now.rule), (llm_n, now.llm), (mllm_n, now.mllm))
            ):
                raise ValidationFailed("these are the weights in use already; nothing was saved")

        def create(number: int, _base: int | None, _written: Any) -> JudgeWeights:
            row = JudgeWeights(
                project=project,
                number=number,
                rule=rule_n,
                llm=llm_n,
                mllm=mllm_n,
                preset=preset,
                created_by=user,
            )
            row.full_clean(validate_constraints=False)
            row.save()
            return row

        row = version_save(
            latest=current.row,
            versions=JudgeWeights.objects.filter(project=project).select_related("created_by"),
            base_number=base_number,
            stale=lambda latest: _weights_stale(base_number, latest),
            before=unchanged,
            create=create,
        )
    return row
