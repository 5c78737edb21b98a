"""Writes of model-in-the-loop backward drafting (Agentic-MME §2.3): start a session with a
description of the raw image, ask the same model about a crop, mark answers, save the drafted
question to the item.

Model calls go through ``benchmark.llm.services.model_call_start`` (a Job plus a Celery task
after commit); their purpose, ``drafting:<session>:<step>``, ties them to the session and is kept
by a retry. Every function here checks its input and raises ``ValidationFailed`` with a message
that says what to fix, and writes nothing when it does."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max

from annotation.backward_drafting.models import (
    DraftingCrop,
    DraftingDraft,
    DraftingMark,
    DraftingSession,
    DraftingStep,
    DraftingVerdict,
)
from annotation.verification import services as verification
from benchmark import permissions
from benchmark.exceptions import Conflict, ValidationFailed
from benchmark.images.services import box_pixels, image_derive, recipe_parse
from benchmark.llm import services as llm_services
from benchmark.llm.client import ModelNotConfigured
from benchmark.models import Image, Item, Job, ModelCall, Origin, Project, Trajectory
from benchmark.typing import User

DEFAULT_DESCRIBE_PROMPT = (
    "Describe this image comprehensively: every object and person, where each one is, and all "
    "text, numbers, signs and labels you can read, exactly as written. Say so when something is "
    "too small, too dark or too unclear to read."
)
DEFAULT_CROP_PROMPT = (
    "Describe this image in detail. Read out any text, numbers, signs or labels exactly as "
    "written, and say so when you cannot read something."
)
MAX_TEXT = 5_000
MAX_QUERY = 20_000
MATCH_TYPES = ("exact", "contains", "numeric")
REFERENCE_KEY = "reference"  # the Agentic-MME reader stores the task's reference path here


# --------------------------------------------------------------------------- helpers


def _text(value: str | None, *, name: str, limit: int = MAX_TEXT, required: bool = True) -> str:
    text = (value or "").replace("\r\n", "\n").strip()
    if required and not text:
        raise ValidationFailed(f"{name}: write something here")
    if len(text) > limit:
        raise ValidationFailed(f"{name}: at most {limit} characters (this has {len(text)})")
    return text


def _require_drafting(*, user: User, item: Item) -> Project:
    project = item.project
    permissions.require(user=user, project=project, action="edit")
    if not project.benchmark.offers.backward_drafting:
        raise ValidationFailed("backward drafting is for items of trajectory projects")
    return project


def _model(project: Project) -> llm_services.ResolvedModel:
    try:
        resolved = llm_services.model_resolve(project=project)
    except ModelNotConfigured as exc:
        raise ValidationFailed(f"the project's model settings are wrong: {exc}") from exc
    if resolved is None:
        raise ValidationFailed("No model is configured. " + llm_services.HOW_TO_CONFIGURE)
    return resolved


def _require_same_model(session: DraftingSession, project: Project) -> None:
    config = _model(project).config
    if config.model != session.model or config.base_url[:500] != session.endpoint:
        raise ValidationFailed(
            f"this session asked {session.model} at {session.endpoint}, but the project now "
            f"calls {config.model} at {config.base_url}. Start a new session, so that the "
            "answers you compare come from the same model."
        )


def _ask(
    *, session: DraftingSession, user: User, step: str, prompt: str, image: str, mode: str | None
) -> Job:
    return llm_services.model_call_start(
        project=session.item.project,
        user=user,
        item=session.item,
        purpose=session.purpose(step),
        prompt=prompt,
        images=[image],
        mode=mode or None,
    )


def item_image_shas(item: Item) -> list[str]:
    """The hashes of the item's own images, in source order (no duplicates)."""
    return list(dict.fromkeys(r.get("sha256") for r in item.image_refs or [] if r.get("sha256")))


# --------------------------------------------------------------------------- sessions


def drafting_session_start(
    *, item: Item, user: User, source_sha256: str, prompt: str, mode: str | None = None
) -> tuple[DraftingSession, Job]:
    """A new session on ``item`` drafting from one of its images, and its first question: the
    model is asked to describe the raw image. The session remembers the model it asked."""
    project = _require_drafting(user=user, item=item)
    if source_sha256 not in item_image_shas(item):
        raise ValidationFailed("raw image: choose one of the item's images")
    if not Image.objects.filter(sha256=source_sha256, projects=project).exists():
        raise ValidationFailed("raw image: its file was not stored, so it cannot be sent")
    prompt = _text(prompt, name="prompt", limit=llm_services.MAX_PROMPT_CHARS)
    config = _model(project).config
    with transaction.atomic():
        session = DraftingSession.objects.create(
            item=item,
            source_sha256=source_sha256,
            model=config.model[:200],
            endpoint=config.base_url[:500],
            created_by=user,
        )
        job = _ask(
            session=session,
            user=user,
            step=DraftingStep.DESCRIBE,
            prompt=prompt,
            image=source_sha256,
            mode=mode,
        )
    return session, job


def drafting_describe_ask(
    *, session: DraftingSession, user: User, prompt: str, mode: str | None = None
) -> Job:
    """Ask the session's model again to describe the raw image (another prompt, say)."""
    project = _require_drafting(user=user, item=session.item)
    prompt = _text(prompt, name="prompt", limit=llm_services.MAX_PROMPT_CHARS)
    _require_same_model(session, project)
    return _ask(
        session=session,
        user=user,
        step=DraftingStep.DESCRIBE,
        prompt=prompt,
        image=session.source_sha256,
        mode=mode,
    )


def drafting_crop_ask(
    *,
    session: DraftingSession,
    user: User,
    ground_truth: str,
    recipe: dict[str, Any] | str | None,
    prompt: str,
    mode: str | None = None,
) -> tuple[DraftingCrop, Job]:
    """Derive the image the annotator made from the raw image (a crop, a rotation...), keep it
    with the detail they are after (their ground truth), and ask the session's model about it."""
    project = _require_drafting(user=user, item=session.item)
    truth = _text(ground_truth, name="the detail the model missed (your ground truth)")
    prompt = _text(prompt, name="prompt", limit=llm_services.MAX_PROMPT_CHARS)
    if recipe in (None, "", {}):
        raise ValidationFailed(
            "crop: draw a box on the image (or apply an operation) before asking about it"
        )
    parsed = recipe_parse(recipe)
    if parsed.source_sha256 != session.source_sha256:
        raise ValidationFailed(
            "crop: the recipe starts from another image; make it from the session's raw image"
        )
    _require_same_model(session, project)
    derived = image_derive(project=project, user=user, recipe=parsed.to_dict())
    source = Image.objects.filter(sha256=session.source_sha256).only("width", "height").first()
    box = box_pixels(parsed, (source.width, source.height)) if source is not None else None
    with transaction.atomic():
        locked = DraftingSession.objects.select_for_update().get(pk=session.pk)
        last = locked.crops.aggregate(n=Max("number"))["n"] or 0
        crop = DraftingCrop.objects.create(
            session=locked,
            number=last + 1,
            image_sha256=derived.sha256,
            recipe=parsed.to_dict(),
            box_px=box or [],
            ground_truth=truth,
            created_by=user,
        )
        job = _ask(
            session=locked,
            user=user,
            step=DraftingStep.CROP,
            prompt=prompt,
            image=derived.sha256,
            mode=mode,
        )
    return crop, job


# --------------------------------------------------------------------------- marks


def drafting_mark_save(
    *,
    session: DraftingSession,
    call: ModelCall,
    user: User,
    perceives: bool | None,
    verdict: str,
    note: str = "",
) -> DraftingMark:
    """Record what ``user`` decided about one of the session's answers. Earlier marks stay;
    the latest counts."""
    _require_drafting(user=user, item=session.item)
    if call.item_id != session.item_id or call.purpose not in session.purposes:
        raise ValidationFailed("this model call does not belong to the drafting session")
    if call.error:
        raise ValidationFailed("the call failed, so there is no answer to mark; retry it first")
    if perceives is None:
        raise ValidationFailed("perceives: say whether the model perceives the detail (yes or no)")
    if verdict not in DraftingVerdict.values:
        raise ValidationFailed(
            "verdict: choose correct, confident hallucination, or hedged/cannot tell"
        )
    note = _text(note, name="note", required=False)
    mark = DraftingMark(
        session=session,
        call=call,
        perceives=perceives,
        verdict=verdict,
        note=note,
        marked_by=user,
    )
    mark.full_clean()
    with transaction.atomic():
        mark.save()
    return mark


# --------------------------------------------------------------------------- the draft


def item_draft_token(item: Item) -> str:
    """A short hash of what a draft overwrites (query, answer, match type): a save made on
    another value is stale."""
    text = "\0".join([item.query, item.expected_answer, item.match_type])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CheckpointDraft:
    """The pointed question about the derived image and its expected answer."""

    question: str
    expected_answer: str
    description: str = ""


def _code_check(op: str, params: dict[str, Any], image_index: int) -> dict[str, Any]:
    check: dict[str, Any] = {"verifier": f"verify_{op}_ast"}
    if op == "crop":
        check["image_index"] = image_index
        if params.get("bbox_2d") is not None:
            check["bbox_2d"] = [round(float(v)) for v in params["bbox_2d"]]
        elif params.get("box") is not None:
            check["box"] = [int(v) for v in params["box"]]
    elif op == "rotate":
        check["angle"] = params.get("angle")
    elif op == "flip":
        check["direction"] = params.get("direction")
    return check


def checkpoints_from_crop(
    *, crop: DraftingCrop, source_index: int, n_inputs: int, checkpoint: CheckpointDraft
) -> list[dict[str, Any]]:
    """The V checkpoints of the reference trajectory for the crop's recipe, one per operation,
    as the Agentic-MME task file writes them: ``code_check`` with the verifier and the
    operation's arguments (``image_index`` counts the input images, then each image an
    operation made), the pointed question on the last one, which also keeps the derived
    image's hash, recipe and pixel box."""
    steps = list((crop.recipe or {}).get("steps") or [])
    out: list[dict[str, Any]] = []
    for n, step in enumerate(steps):
        op = str(step.get("op", ""))
        index = source_index if n == 0 else n_inputs + n - 1
        out.append(
            {
                "id": f"C{n + 1}",
                "axis": "V",
                "description": "",
                "tools": [op],
                "code_check": _code_check(op, dict(step.get("params") or {}), index),
            }
        )
    last = out[-1]
    last["description"] = checkpoint.description or (
        f"{' then '.join(s.get('op', '') for s in steps).capitalize()} the image to expose "
        f"the detail: {crop.ground_truth}"
    )
    last["visual_check"] = {
        "question": checkpoint.question,
        "expected_answer": checkpoint.expected_answer,
    }
    last["image"] = {"sha256": crop.image_sha256, "recipe": crop.recipe, "box_px": crop.box_px}
    return out


def reference_has_checkpoints(item: Item) -> bool:
    trajectory = Trajectory.objects.filter(item=item, key=REFERENCE_KEY).first()
    return bool(trajectory and trajectory.checkpoints)


def drafting_draft_save(
    *,
    session: DraftingSession,
    user: User,
    query: str,
    expected_answer: str,
    match_type: str = "",
    base_token: str,
    checkpoint: CheckpointDraft | None = None,
) -> DraftingDraft:
    """Write the drafted question and answer to the item (its ``provenance`` then says who
    drafted it with which model) and, when asked, start the item's reference trajectory with
    the V checkpoints of the session's latest crop. ``base_token`` is ``item_draft_token`` of
    the item the form was made from; a different current value means someone saved in
    between: ``Conflict``, nothing written. What the item held before is kept in the draft.
    A blind verifier of the item may not (a state rule); a change of the answer reopens a
    verification that began against the old one."""
    _require_drafting(user=user, item=session.item)
    permissions.require(user=user, project=session.item.project, action="edit", item=session.item)
    query = _text(query, name="question", limit=MAX_QUERY)
    answer = _text(expected_answer, name="answer")
    match_type = (match_type or "").strip()
    if match_type and match_type not in MATCH_TYPES:
        raise ValidationFailed(f"match type: one of {', '.join(MATCH_TYPES)}, or leave it empty")
    if checkpoint is not None:
        checkpoint = CheckpointDraft(
            question=_text(checkpoint.question, name="checkpoint question"),
            expected_answer=_text(checkpoint.expected_answer, name="checkpoint answer"),
            description=_text(checkpoint.description, name="checkpoint intent", required=False),
        )
    with transaction.atomic():
        item = Item.objects.select_for_update().get(pk=session.item_id)
        if item_draft_token(item) != base_token:
            raise Conflict(
                "someone saved this item's question or answer while you were drafting; "
                "your text is kept below, compare it with theirs and save again"
            )
        checkpoint_id = ""
        if checkpoint is not None:
            crop = session.crops.order_by("-number").first()
            if crop is None:
                raise ValidationFailed(
                    "checkpoint: ask the model about a crop first; the checkpoint is made "
                    "from the session's latest crop"
                )
            trajectory, _ = Trajectory.objects.select_for_update().get_or_create(
                item=item, key=REFERENCE_KEY, defaults={"origin": Origin.GROUND_TRUTH}
            )
            if trajectory.checkpoints:
                raise ValidationFailed(
                    "checkpoint: the reference trajectory already has checkpoints; add this "
                    "one in the trajectory editor"
                )
            shas = item_image_shas(item)
            index = shas.index(session.source_sha256) if session.source_sha256 in shas else 0
            trajectory.checkpoints = checkpoints_from_crop(
                crop=crop, source_index=index, n_inputs=len(shas) or 1, checkpoint=checkpoint
            )
            trajectory.save(update_fields=["checkpoints"])
            checkpoint_id = trajectory.checkpoints[-1]["id"]
        draft = DraftingDraft(
            session=session,
            query=query,
            expected_answer=answer,
            match_type=match_type,
            previous_query=item.query,
            previous_answer=item.expected_answer,
            checkpoint_id=checkpoint_id,
            created_by=user,
        )
        draft.full_clean()
        draft.save()
        item.query = query
        item.expected_answer = answer
        if match_type:
            item.match_type = match_type
        item.provenance = f"drafted by {user.get_username()} with {session.model}"[:200]
        item.save(
            update_fields=["query", "expected_answer", "match_type", "provenance", "updated_at"]
        )
        verification.verification_reopen_if_changed(
            item=item, user=user, where="by backward drafting"
        )
    return draft
