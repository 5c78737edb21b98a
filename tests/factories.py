"""factory-boy factories for every model of the benchmark, annotation and review apps."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from typing import Any

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone
from factory.django import DjangoModelFactory
from PIL import Image as PILImage

from benchmark.images import services
from benchmark.items.services import item_snapshot
from benchmark.judge_prompts import Template
from benchmark.models import (
    AudioFile,
    AuditAction,
    AuditEvent,
    Image,
    InputDraft,
    Invitation,
    Item,
    ItemStatus,
    ItemVersion,
    Job,
    JobStatus,
    Membership,
    Origin,
    Plan,
    PlanSyntax,
    Project,
    ProjectKind,
    Response,
    Role,
    TagSyntax,
    Taxonomy,
    TaxonomyTerm,
    TermKind,
    Tool,
    ToolEdge,
    Toolset,
    Trajectory,
)
from benchmark.plans.codegen import plan_to_code

PASSWORD = "pw-for-tests-1"


class UserFactory(DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    password = factory.django.Password(PASSWORD)


class ToolsetFactory(DjangoModelFactory):
    class Meta:
        model = Toolset

    name = factory.Sequence(lambda n: f"toolset-{n}")
    description = "Tools for tests."


class ToolFactory(DjangoModelFactory):
    class Meta:
        model = Tool

    toolset = factory.SubFactory(ToolsetFactory)
    name = factory.Sequence(lambda n: f"tool {n}")
    category = "vision"
    parameters = factory.LazyFunction(
        lambda: [{"name": "image", "type": "image", "required": True, "description": ""}]
    )
    input_types = factory.LazyFunction(lambda: ["image"])
    output_names = factory.LazyFunction(lambda: ["text"])
    output_types = factory.LazyFunction(lambda: ["text"])
    position = factory.Sequence(int)


class ToolEdgeFactory(DjangoModelFactory):
    class Meta:
        model = ToolEdge

    toolset = factory.SubFactory(ToolsetFactory)
    source = factory.SubFactory(ToolFactory, toolset=factory.SelfAttribute("..toolset"))
    target = factory.SubFactory(ToolFactory, toolset=factory.SelfAttribute("..toolset"))


class TaxonomyFactory(DjangoModelFactory):
    class Meta:
        model = Taxonomy

    name = factory.Sequence(lambda n: f"taxonomy-{n}")


class TaxonomyTermFactory(DjangoModelFactory):
    class Meta:
        model = TaxonomyTerm

    taxonomy = factory.SubFactory(TaxonomyFactory)
    kind = TermKind.CATEGORY
    name = factory.Sequence(lambda n: f"term {n}")
    position = factory.Sequence(int)


class ProjectFactory(DjangoModelFactory):
    """An ATP-style interleaved project by default; pass ``kind``/``data_format`` for others
    (``tag_syntax`` follows the kind, as the database requires)."""

    class Meta:
        model = Project

    name = factory.Sequence(lambda n: f"Project {n}")
    kind = ProjectKind.INTERLEAVED
    data_format = "atp"
    tag_syntax = factory.LazyAttribute(
        lambda p: (
            (TagSyntax.ATP if p.data_format == "atp" else TagSyntax.LLMI)
            if p.kind == ProjectKind.INTERLEAVED
            else TagSyntax.NONE
        )
    )
    toolset = factory.SubFactory(ToolsetFactory)
    description = "A project for tests."


class InputDraftFactory(DjangoModelFactory):
    """Unsaved input of ``user`` on the form ``key`` names (benchmark.input_drafts)."""

    class Meta:
        model = InputDraft

    user = factory.SubFactory(UserFactory)
    key = factory.Sequence(lambda n: f"item-new:project:{n}")
    version = "1"
    payload = factory.LazyFunction(lambda: [["query", "typed, not yet saved"]])


class MembershipFactory(DjangoModelFactory):
    class Meta:
        model = Membership

    project = factory.SubFactory(ProjectFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.ANNOTATOR


def png_bytes(seed: int, size: tuple[int, int] = (24, 16)) -> bytes:
    """A small PNG whose bytes differ for each seed."""
    img = PILImage.new("RGB", size, ((seed * 37) % 256, (seed * 91) % 256, (seed * 13) % 256))
    img.putpixel((0, 0), (seed % 256, (seed // 256) % 256, (seed // 65536) % 256))
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


class ImageFactory(DjangoModelFactory):
    """A real PNG stored through ``services.image_store`` (by hash, with a thumbnail).
    ``projects=[...]`` links it to projects."""

    class Meta:
        model = Image
        skip_postgeneration_save = True

    data = factory.Sequence(lambda n: png_bytes(n + 1))

    @classmethod
    def _create(cls, model_class: type[Image], *args: Any, **kwargs: Any) -> Image:
        return services.image_store(data=kwargs["data"], name="factory.png")

    @factory.post_generation
    def projects(obj: Image, create: bool, extracted: Any, **kwargs: Any) -> None:  # noqa: N805
        if create and extracted:
            obj.projects.add(*extracted)


def flac_bytes(seed: int = 0, *, rate: int = 16_000, samples: int = 32_000) -> bytes:
    """A FLAC file's header (``fLaC`` and its STREAMINFO block: ``samples / rate`` seconds)
    followed by bytes that differ for each seed: enough for Benchwright, which stores audio
    and never decodes it."""
    info = (rate << 44) | (0 << 41) | (15 << 36) | samples
    streaminfo = (4096).to_bytes(2, "big") * 2 + bytes(6) + info.to_bytes(8, "big") + bytes(16)
    return b"fLaC" + bytes([0x80, 0, 0, 34]) + streaminfo + seed.to_bytes(4, "big") * 8


def wav_bytes(seed: int = 0, *, seconds: float = 0.5, rate: int = 8000) -> bytes:
    """A real mono 16-bit WAV of silence (plus one sample that differs for each seed)."""
    import wave

    out = io.BytesIO()
    with wave.open(out, "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(rate)
        frames = bytearray(int(rate * seconds) * 2)
        frames[0:2] = (seed % 32768).to_bytes(2, "little")
        handle.writeframes(bytes(frames))
    return out.getvalue()


class AudioFileFactory(DjangoModelFactory):
    """An audio file stored through ``benchmark.audio.services.audio_store`` (by hash).
    ``projects=[...]`` links it to projects."""

    class Meta:
        model = AudioFile
        skip_postgeneration_save = True

    data = factory.Sequence(lambda n: flac_bytes(n + 1))

    @classmethod
    def _create(cls, model_class: type[AudioFile], *args: Any, **kwargs: Any) -> AudioFile:
        from benchmark.audio.services import audio_store

        return audio_store(data=kwargs["data"], name="factory.flac")

    @factory.post_generation
    def projects(obj: AudioFile, create: bool, extracted: Any, **kwargs: Any) -> None:  # noqa: N805
        if create and extracted:
            obj.projects.add(*extracted)


def image_ref(image: Image, *, position: int, role: str = "document") -> dict[str, Any]:
    return {
        "sha256": image.sha256,
        "role": role,
        "path": f"images/{image.sha256[:8]}.png",
        "position": position,
    }


class ItemFactory(DjangoModelFactory):
    class Meta:
        model = Item

    project = factory.SubFactory(ProjectFactory)
    external_id = factory.Sequence(lambda n: f"item_{n:04d}")
    position = factory.Sequence(int)
    source_file = "data.jsonl"
    query = factory.Sequence(lambda n: f"How does widget {n} work?")
    modality = "text"
    documents = factory.LazyFunction(lambda: [{"text": "Background text.", "images": []}])
    category = "Academic"
    intent = "Framework"
    status = ItemStatus.DRAFT
    raw = factory.LazyAttribute(lambda o: json.dumps({"trace_id": o.external_id, "query": o.query}))


class _AttachedFactory(DjangoModelFactory):
    item = factory.SubFactory(ItemFactory)
    key = factory.Sequence(lambda n: f"k{n}")
    origin = Origin.GROUND_TRUTH
    position = factory.Sequence(int)


class ResponseFactory(_AttachedFactory):
    class Meta:
        model = Response

    text = (
        "An answer.\n\n"
        '<tool>{"tool_name": "Reference", "description": "d", "params": {"img_index": 0}}</tool>'
    )


class PlanFactory(_AttachedFactory):
    class Meta:
        model = Plan

    form = PlanSyntax.JSON
    steps = factory.LazyFunction(
        lambda: [
            {"id": 0, "name": "image editing", "args": {"image": "17320.jpg", "prompt": "blue"}},
            {"id": 1, "name": "image captioning", "args": {"image": "<node-0>.image"}},
        ]
    )


class TrajectoryFactory(_AttachedFactory):
    class Meta:
        model = Trajectory

    checkpoints = factory.LazyFunction(
        lambda: [
            {
                "id": "C1",
                "axis": "V",
                "description": "Crop the sign.",
                "tools": ["crop"],
                "code_check": {"verifier": "verify_crop_ast", "bbox_2d": [769, 403, 850, 452]},
                "visual_check": {"question": "What street?", "expected_answer": "WILLOW ST"},
            }
        ]
    )
    efficiency = factory.LazyFunction(lambda: {"reference_tool_calls": 1})


class JobFactory(DjangoModelFactory):
    class Meta:
        model = Job

    kind = "import"
    status = JobStatus.QUEUED
    project = factory.SubFactory(ProjectFactory)
    created_by = factory.SubFactory(UserFactory)
    params = factory.LazyAttribute(
        lambda j: {"project_id": j.project.pk if j.project else None, "filename": "data.jsonl"}
    )


class ModelCallFactory(DjangoModelFactory):
    """A recorded model answer (no HTTP involved)."""

    class Meta:
        model = "benchmark.ModelCall"

    request_key = factory.Sequence(lambda n: f"{n:064x}")
    project = factory.SubFactory(ProjectFactory)
    item = None
    purpose = "ask"
    model = "fake-vl-7b"
    prompt = "Describe the image."
    answer = "A street with a lamp post."
    latency_ms = 120
    prompt_tokens = 17
    completion_tokens = 7


class DraftingSessionFactory(DjangoModelFactory):
    """A backward-drafting session on an item; pass ``item`` (of a trajectory project) and
    ``source_sha256`` (one of its images)."""

    class Meta:
        model = "annotation.DraftingSession"

    item = factory.SubFactory(
        ItemFactory,
        project=factory.SubFactory(
            ProjectFactory, kind=ProjectKind.TRAJECTORY, data_format="agentic-mme"
        ),
    )
    source_sha256 = "0" * 64
    model = "fake-vl-7b"
    endpoint = "http://127.0.0.1:9/v1"


class DraftingMarkFactory(DjangoModelFactory):
    class Meta:
        model = "annotation.DraftingMark"

    session = factory.SubFactory(DraftingSessionFactory)
    call = factory.SubFactory(
        ModelCallFactory,
        project=factory.SelfAttribute("..session.item.project"),
        item=factory.SelfAttribute("..session.item"),
        purpose=factory.LazyAttribute(lambda c: c.factory_parent.session.purpose("describe")),
    )
    perceives = False
    verdict = "hallucination"


class RunSetFactory(DjangoModelFactory):
    """An upload of agent runs in a trajectory project."""

    class Meta:
        model = "review.RunSet"

    project = factory.SubFactory(
        ProjectFactory, kind=ProjectKind.TRAJECTORY, data_format="agentic-mme"
    )
    name = factory.Sequence(lambda n: f"model {n}")


def _agent_run_score(run: Any) -> dict[str, Any]:
    from benchmark.metrics.agentic_mme import RunRecord as Run
    from review.runs.services import run_score, score_to_dict

    agent = Run(tuple(run.events), run.final_answer, None, None, run.folder)
    return score_to_dict(run_score(item=run.item, run=agent))


class AgentRunFactory(DjangoModelFactory):
    """A stored agent run of an item, scored against the item as it is."""

    class Meta:
        model = "review.AgentRun"

    run_set = factory.SubFactory(RunSetFactory)
    item = factory.SubFactory(ItemFactory, project=factory.SelfAttribute("..run_set.project"))
    folder = factory.Sequence(lambda n: f"runs/{n:04d}")
    events = factory.LazyFunction(list)
    final_answer = "I cannot tell."
    score = factory.LazyAttribute(_agent_run_score)
    acc = factory.LazyAttribute(lambda r: bool(r.score["acc"]))
    level = factory.LazyAttribute(lambda r: r.score["level"])
    position = factory.Sequence(int)


class PlanVersionFactory(DjangoModelFactory):
    """A saved version of an item's plan (m&m's): its steps as JSON text and the code form
    generated from them."""

    class Meta:
        model = "annotation.PlanVersion"
        exclude = ["step_values"]

    plan = factory.SubFactory(
        PlanFactory,
        key="gold",
        item=factory.SubFactory(
            ItemFactory,
            project=factory.SubFactory(
                ProjectFactory, kind=ProjectKind.PLAN, data_format="mms", tag_syntax=""
            ),
        ),
    )
    item = factory.SelfAttribute("plan.item")
    key = factory.SelfAttribute("plan.key")
    number = factory.Sequence(lambda n: n + 1)
    step_values = factory.SelfAttribute("plan.steps")
    steps = factory.LazyAttribute(lambda v: json.dumps(v.step_values))
    code = factory.LazyAttribute(lambda v: plan_to_code(v.step_values))
    author = factory.SubFactory(UserFactory)


class TrajectoryVersionFactory(DjangoModelFactory):
    """A saved version of an item's reference trajectory (``document``: the task document as a
    dict; stored as its JSON text with its fingerprint)."""

    class Meta:
        model = "annotation.TrajectoryVersion"
        exclude = ["data"]

    item = factory.SubFactory(
        ItemFactory,
        project=factory.SubFactory(
            ProjectFactory, kind=ProjectKind.TRAJECTORY, data_format="agentic-mme"
        ),
    )
    number = factory.Sequence(lambda n: n + 1)
    data = factory.LazyFunction(lambda: {"task_id": "t", "meta": {"level": 1}})
    document = factory.LazyAttribute(lambda v: json.dumps(v.data, indent=2) + "\n")
    fingerprint = factory.LazyAttribute(lambda v: _fingerprint(v.data))
    note = ""


def _fingerprint(document: dict[str, Any]) -> str:
    from annotation.trajectories.document import fingerprint

    return fingerprint(document)


# --------------------------------------------------------------------------- jobs of each kind


class ImportJobFactory(JobFactory):
    """An import job (what ``services.import_upload_start`` creates)."""

    kind = "import"


class AnswerScoringJobFactory(JobFactory):
    """A job scoring uploaded model answers of an interleaved project."""

    kind = "score_answers"
    params = factory.LazyAttribute(
        lambda j: {"project_id": j.project.pk, "name": "answers.jsonl", "only_verified": False}
    )


class RunScoringJobFactory(JobFactory):
    """A job scoring an upload of agent runs of a trajectory project."""

    kind = "score_runs"
    project = factory.SubFactory(
        ProjectFactory, kind=ProjectKind.TRAJECTORY, data_format="agentic-mme"
    )
    params = factory.LazyAttribute(
        lambda j: {"project_id": j.project.pk, "name": "runs.zip", "filename": "runs.zip"}
    )


class RescoringJobFactory(JobFactory):
    """A job scoring a stored upload of agent runs again (``run_set``: the upload)."""

    class Params:
        run_set = factory.SubFactory(RunSetFactory)

    kind = "rescore_runs"
    project = factory.SelfAttribute("run_set.project")
    params = factory.LazyAttribute(lambda j: {"run_set_id": j.run_set.pk, "name": j.run_set.name})


class ModelCallJobFactory(JobFactory):
    """A model-call job about an item (``item``; ``purpose`` "ask" or a drafting session's)."""

    class Params:
        item = factory.SubFactory(ItemFactory)
        purpose = "ask"
        prompt = "Describe the image."

    kind = "model_call"
    project = factory.SelfAttribute("item.project")
    total = 1
    params = factory.LazyAttribute(
        lambda j: {
            "project_id": j.project.pk,
            "item_id": j.item.pk,
            "purpose": j.purpose,
            "system": "",
            "prompt": j.prompt,
            "images": [],
            "params": {},
            "mode": None,
        }
    )


# --------------------------------------------------------------------------- judging


class JudgmentTaskFactory(DjangoModelFactory):
    """A judgment task (binary, three annotators, unanimous). ``solve=True``: the blind
    "Solve blind" task of a trajectory project (free answers compared with the author's)."""

    class Meta:
        model = "annotation.JudgmentTask"

    class Params:
        solve = factory.Trait(
            name="Solve blind",
            scheme="text",
            overlap=2,
            consensus="author_plus_two",
            author_may_judge=False,
        )

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"task {n}")
    question = "Keep this item?"
    scheme = "binary"
    overlap = 3
    consensus = "unanimous"


class AssignmentFactory(DjangoModelFactory):
    """An item leased to a user for a task (active, expiring in 30 minutes)."""

    class Meta:
        model = "annotation.Assignment"

    task = factory.SubFactory(JudgmentTaskFactory)
    item = factory.SubFactory(ItemFactory, project=factory.SelfAttribute("..task.project"))
    user = factory.SubFactory(UserFactory)
    status = "active"
    leased_at = factory.LazyFunction(timezone.now)
    expires_at = factory.LazyAttribute(lambda a: a.leased_at + timedelta(minutes=30))


class TaskItemFactory(DjangoModelFactory):
    """An item in the item set of a task that takes only listed items."""

    class Meta:
        model = "annotation.TaskItem"

    task = factory.SubFactory(JudgmentTaskFactory, items_listed=True)
    item = factory.SubFactory(ItemFactory, project=factory.SelfAttribute("..task.project"))


class ItemPushFactory(DjangoModelFactory):
    """An item pushed to a user for a task, not yet taken."""

    class Meta:
        model = "annotation.ItemPush"

    task = factory.SubFactory(JudgmentTaskFactory)
    item = factory.SubFactory(ItemFactory, project=factory.SelfAttribute("..task.project"))
    user = factory.SubFactory(UserFactory)


def _agreement_sync(obj: Any) -> None:
    from annotation.judgment_tasks.services import judgment_agreement_sync

    judgment_agreement_sync(task=obj.task, item_ids=[obj.item_id], unit=obj.unit)


class JudgmentFactory(DjangoModelFactory):
    """A submitted judgment with its (submitted) assignment; pass ``task``, ``item``, ``user``."""

    class Meta:
        model = "annotation.Judgment"
        skip_postgeneration_save = True

    task = factory.SubFactory(JudgmentTaskFactory)
    item = factory.SubFactory(ItemFactory, project=factory.SelfAttribute("..task.project"))
    user = factory.SubFactory(UserFactory)
    assignment = factory.SubFactory(
        AssignmentFactory,
        task=factory.SelfAttribute("..task"),
        item=factory.SelfAttribute("..item"),
        user=factory.SelfAttribute("..user"),
        status="submitted",
        submitted_at=factory.LazyFunction(timezone.now),
    )
    value = 1

    @factory.post_generation
    def agreement(obj, create: bool, extracted: Any, **kwargs: Any) -> None:  # noqa: N805
        """Its credit for agreeing with a settled outcome, as judgment_submit stores it."""
        if create:
            _agreement_sync(obj)


class DatedJudgmentFactory(JudgmentFactory):
    """A submitted judgment made at ``at`` (default now; ``created_at`` is auto_now_add, so the
    time is set after the row is created)."""

    class Meta:
        skip_postgeneration_save = True

    @factory.post_generation
    def at(obj, create: bool, extracted: Any, **kwargs: Any) -> None:  # noqa: N805
        if create and extracted is not None:
            type(obj).objects.filter(pk=obj.pk).update(created_at=extracted)
            obj.created_at = extracted


class JudgmentVersionFactory(DjangoModelFactory):
    """An earlier version of a judgment (what an undo and change kept); pass ``judgment``."""

    class Meta:
        model = "annotation.JudgmentVersion"

    judgment = factory.SubFactory(JudgmentFactory)
    number = 1
    author = factory.SelfAttribute("judgment.user")
    value = 0
    created_at = factory.LazyFunction(timezone.now)
    replaced_at = factory.LazyFunction(timezone.now)


class AgreementJobFactory(JobFactory):
    """A job computing a judgment task's agreement figures (``task``: the task)."""

    class Params:
        task = factory.SubFactory(JudgmentTaskFactory)

    kind = "agreement"
    project = factory.SelfAttribute("task.project")
    params = factory.LazyAttribute(lambda j: {"task_id": j.task.pk})


class OutcomeFactory(DjangoModelFactory):
    class Meta:
        model = "annotation.Outcome"
        skip_postgeneration_save = True

    task = factory.SubFactory(JudgmentTaskFactory)
    item = factory.SubFactory(ItemFactory, project=factory.SelfAttribute("..task.project"))
    verdict = "pending"

    @factory.post_generation
    def agreement(obj, create: bool, extracted: Any, **kwargs: Any) -> None:  # noqa: N805
        """The item's judgments follow with their agreement credit, as the services do."""
        if create:
            _agreement_sync(obj)


class DecisionFactory(DjangoModelFactory):
    """A reviewer's adjudication of an item for a task."""

    class Meta:
        model = "review.Decision"

    task = factory.SubFactory(JudgmentTaskFactory)
    item = factory.SubFactory(ItemFactory, project=factory.SelfAttribute("..task.project"))
    reviewer = factory.SubFactory(UserFactory)
    verdict = "accepted"
    value = 1


class TrajectoryAuditFactory(DjangoModelFactory):
    """A verifier's step audit of an item's reference trajectory (version ``number``)."""

    class Meta:
        model = "annotation.TrajectoryAudit"

    task = factory.SubFactory(JudgmentTaskFactory, solve=True)
    item = factory.SubFactory(ItemFactory, project=factory.SelfAttribute("..task.project"))
    user = factory.SubFactory(UserFactory)
    number = 1
    steps = factory.LazyFunction(
        lambda: [
            {
                "step": "C1",
                "axis": "V",
                "description": "Crop the sign.",
                "checks": {"intent": True, "tool": True, "checkpoint": False},
                "comment": "",
            }
        ]
    )


# --------------------------------------------------------------------------- tag review


class ResponseVersionFactory(DjangoModelFactory):
    """A saved version of an interleaved answer (version 1: the imported text, no author)."""

    class Meta:
        model = "annotation.ResponseVersion"

    response = factory.SubFactory(ResponseFactory)
    number = 1
    text = factory.LazyAttribute(lambda v: v.response.text)
    note = ""


class TagDecisionFactory(DjangoModelFactory):
    """What the author of a version decided about one tool call."""

    class Meta:
        model = "annotation.TagDecision"

    version = factory.SubFactory(ResponseVersionFactory, number=2, base_number=1)
    tag = 0
    tool = "Reference"
    decision = "kept"
    position = factory.Sequence(int)


# --------------------------------------------------------------------------- drafting


class DraftingCallFactory(ModelCallFactory):
    """A model call of a drafting session (``step``: describe or crop), on the session's item."""

    class Params:
        session = factory.SubFactory(DraftingSessionFactory)
        step = "describe"

    project = factory.SelfAttribute("session.item.project")
    item = factory.SelfAttribute("session.item")
    purpose = factory.LazyAttribute(lambda c: c.session.purpose(c.step))


class DraftingCropFactory(DjangoModelFactory):
    class Meta:
        model = "annotation.DraftingCrop"

    session = factory.SubFactory(DraftingSessionFactory)
    number = factory.Sequence(lambda n: n + 1)
    image_sha256 = "1" * 64
    recipe = factory.LazyFunction(lambda: {"ops": [{"op": "crop", "bbox_2d": [0, 0, 500, 500]}]})
    ground_truth = "The sign reads WILLOW ST."


class DraftingDraftFactory(DjangoModelFactory):
    """A drafted question and answer saved from a session."""

    class Meta:
        model = "annotation.DraftingDraft"

    session = factory.SubFactory(DraftingSessionFactory)
    query = "What street is the lamp post on?"
    expected_answer = "Willow St"


# --------------------------------------------------------------------------- agent runs


class VisualVerdictFactory(DjangoModelFactory):
    class Meta:
        model = "review.VisualVerdict"

    run = factory.SubFactory(AgentRunFactory)
    checkpoint_id = "C1"
    passed = True
    reviewer = factory.SubFactory(UserFactory)


class FailureLabelFactory(DjangoModelFactory):
    class Meta:
        model = "review.FailureLabel"

    run = factory.SubFactory(AgentRunFactory)
    reviewer = factory.SubFactory(UserFactory)
    mode = "missing_visual_tool_use"


class ItemStatusChangeFactory(DjangoModelFactory):
    class Meta:
        model = "benchmark.ItemStatusChange"

    item = factory.SubFactory(ItemFactory, status=ItemStatus.DISCARDED, discard_reason="dup")
    changed_by = factory.SubFactory(UserFactory)
    from_status = ItemStatus.VERIFIED
    to_status = ItemStatus.DISCARDED
    reason = "dup"


class DiscardProposalFactory(DjangoModelFactory):
    class Meta:
        model = "annotation.DiscardProposal"

    item = factory.SubFactory(ItemFactory)
    proposed_by = factory.SubFactory(UserFactory)
    reason = "broken_markdown"


# --------------------------------------------------------------------------- plan judge


class PlanJudgeRunFactory(DjangoModelFactory):
    """A finished m&m's plan validity judge run (its "judge" job succeeded); its calls are
    PlanJudgeCallFactory rows."""

    class Meta:
        model = "review.JudgeRun"

    project = factory.SubFactory(ProjectFactory, kind="plan", data_format="mms")
    judge = "mms-plan"
    base_url = "http://127.0.0.1:9/v1"
    model = "fake-vl-7b"
    templates = factory.LazyFunction(lambda: {"mms.plan_validity": "test"})
    selection = factory.LazyFunction(lambda: {"models": []})
    job = factory.SubFactory(
        JobFactory,
        kind="judge",
        status=JobStatus.SUCCEEDED,
        project=factory.SelfAttribute("..project"),
        params={},
    )


class PlanJudgeCallFactory(DjangoModelFactory):
    """The judge's verdict on a plan: ``outputs`` holds its raw answer (VALID by default)."""

    class Meta:
        model = "review.PlanJudgeCall"

    run = factory.SubFactory(PlanJudgeRunFactory)
    plan = factory.SubFactory(PlanFactory, item__project=factory.SelfAttribute("...run.project"))
    label = "plan"
    key = factory.Sequence(lambda n: f"{n:064x}")
    template_id = "mms.plan_validity"
    template_version = "test"
    outputs = factory.LazyFunction(lambda: ["VALID\nThe steps answer the request."])
    ok = True


# --------------------------------------------------------------------------- oracle tests


class OracleRunFactory(DjangoModelFactory):
    class Meta:
        model = "review.OracleRun"

    project = factory.SubFactory(
        ProjectFactory, kind=ProjectKind.TRAJECTORY, data_format="agentic-mme"
    )
    base_url = "http://127.0.0.1:9/v1"
    model = "fake-vl-7b"
    prompt_version = "oracle-1"
    created_by = factory.SubFactory(UserFactory)


class OracleResultFactory(DjangoModelFactory):
    """A failed oracle test: the model's wrong answer, flagged for review."""

    class Meta:
        model = "review.OracleResult"

    run = factory.SubFactory(OracleRunFactory)
    item = factory.SubFactory(ItemFactory)
    outcome = "failed"
    answer = "Elm Street"
    output = "<answer>Elm Street</answer>"
    messages = factory.LazyFunction(
        lambda: [
            {"role": "system", "content": "Answer."},
            {"role": "user", "content": [{"type": "text", "text": "Step 1: Crop the sign."}]},
        ]
    )


# --------------------------------------------------------------------------- judge runs


class JudgeRunFactory(DjangoModelFactory):
    """A judge run of a project (ATP-Bench MAM unless ``judge`` says otherwise)."""

    class Meta:
        model = "review.JudgeRun"

    project = factory.SubFactory(ProjectFactory)
    judge = "atp-mam"
    base_url = "http://127.0.0.1:9/v1"
    model = "judge-model"
    templates = factory.LazyFunction(lambda: {"atp-mam": "1"})


class ExampleSetFactory(DjangoModelFactory):
    """A set of worked examples added to a judge's templates from a task's correction cases
    (pass ``project``, ``task`` and ``source_run`` of that project)."""

    class Meta:
        model = "review.ExampleSet"

    project = factory.SubFactory(ProjectFactory)
    judge = "atp-mam"
    task = factory.SubFactory(JudgmentTaskFactory, project=factory.SelfAttribute("..project"))
    source_run = factory.SubFactory(JudgeRunFactory, project=factory.SelfAttribute("..project"))


class WorkedExampleCaseFactory(DjangoModelFactory):
    """One correction case written into a judge's prompt as a worked example."""

    class Meta:
        model = "review.WorkedExampleCase"

    example_set = factory.SubFactory(ExampleSetFactory)
    unit = factory.Sequence(lambda n: str(n + 1))
    people = 0
    judge_value = 1
    summary = "User request: ..."
    answer = "INVALID"
    reason = "2 of 3 annotators gave 0"
    source = "majority"


class JudgeCallFactory(DjangoModelFactory):
    """One successful call of a judge run about one model answer; pass ``run``, ``response``,
    ``label`` and ``parsed`` (the report)."""

    class Meta:
        model = "review.JudgeCall"

    run = factory.SubFactory(JudgeRunFactory)
    response = factory.SubFactory(
        ResponseFactory,
        item__project=factory.SelfAttribute("...run.project"),
        origin=Origin.MODEL,
        model_name="model-a",
    )
    label = "chief"
    key = factory.Sequence(lambda n: f"{n:064x}")
    template_id = factory.LazyAttribute(lambda c: f"atp-mam-{c.label}")
    template_version = "1"
    parsed = factory.LazyFunction(lambda: {"score": 80, "tier": "good", "why": "Fine."})
    outputs = factory.LazyAttribute(lambda c: [json.dumps(c.parsed)])
    ok = True


class JudgingJobFactory(JobFactory):
    """The "judge" job of a judge run (``run``: the run)."""

    class Params:
        run = factory.SubFactory(JudgeRunFactory)

    kind = "judge"
    project = factory.SelfAttribute("run.project")
    params = factory.LazyAttribute(
        lambda j: {"project_id": j.run.project_id, "run_id": j.run.pk, "workers": 4}
    )


class JudgeTemplateVersionFactory(DjangoModelFactory):
    """A project's own text of a judge template (``number`` must follow the project's last)."""

    class Meta:
        model = "review.JudgeTemplateVersion"

    project = factory.SubFactory(ProjectFactory)
    template_id = "llmi.llm_judge"
    number = 1
    system = "You are a strict judge. Reply with exactly two lines:\nText: n\nImage: n"
    user = "Task:\n{prompt}\n\nAnswer:\n{answer}"
    version = factory.LazyAttribute(
        lambda v: Template(id=v.template_id, system=v.system, user=v.user).version
    )
    author = factory.SubFactory(UserFactory)


class JudgeWeightsFactory(DjangoModelFactory):
    class Meta:
        model = "review.JudgeWeights"

    project = factory.SubFactory(ProjectFactory)
    number = 1
    rule = 0.2
    llm = 0.5
    mllm = 0.3
    created_by = factory.SubFactory(UserFactory)


def mam_judgment(run: Any, response: Response, *, score: int, missed: int = 0) -> None:
    """An ATP-Bench MAM run's valid judgment of one answer, as JudgeCallFactory rows: the
    Chief Judge's ``score`` (in its tier), the Recall Inspector's ``missed`` images, and for
    an answer with tool calls a Precision Inspector report scoring each call 2 everywhere."""
    from benchmark.judge_prompts import mam

    tier = next(name for name, (low, high) in mam.TIERS.items() if low <= score <= high)
    reports: dict[str, Any] = {
        "chief": {"score": score, "tier": tier, "why": "Judged for a test."},
        "recall": {
            "missed": [{"after": f"paragraph {n}", "tool": "Diffusion", "why": "needed"}
                       for n in range(missed)]
        },
    }  # fmt: skip
    calls = mam.tool_calls_of(response.text)
    if calls:
        checks = dict.fromkeys(mam.SUB_CHECKS, 2)
        reports["precision"] = {
            "calls": [{"index": n, **checks, "comment": "ok"} for n in range(1, len(calls) + 1)]
        }
    for label, parsed in reports.items():
        JudgeCallFactory(run=run, response=response, label=label, parsed=parsed)


class RenderedAnswerFactory(DjangoModelFactory):
    """A rendering of a model answer whose one call (a Reference) showed ``image``."""

    class Meta:
        model = "review.RenderedAnswer"

    response = factory.SubFactory(
        ResponseFactory, origin=Origin.MODEL, model_name="alpha", key="model:alpha"
    )
    text = factory.LazyAttribute(lambda r: r.response.text)
    syntax = "atp"
    signature = "0" * 64
    calls = factory.LazyAttribute(
        lambda r: [
            {
                "status": "rendered" if r.image else "failed",
                "reason": "" if r.image else "out_of_range",
                "message": "" if r.image else "img_index 0 is out of range",
                "tool": "reference",
                "image": r.image.sha256 if r.image else None,
                "shown": None,
                "provider": "document" if r.image else "",
                "cached": False,
                "retry": False,
                "detail": {},
            }
        ]
    )
    n_rendered = factory.LazyAttribute(lambda r: 1 if r.image else 0)
    n_failed = factory.LazyAttribute(lambda r: 0 if r.image else 1)

    class Params:
        image = None


class ToolCallCacheFactory(DjangoModelFactory):
    class Meta:
        model = "review.ToolCallCache"

    key = factory.Sequence(lambda n: f"{n:064x}")
    tool = "code"
    provider = "sandbox"
    status = "failed"
    reason = "error"
    message = "ValueError: boom"


class ItemVersionFactory(DjangoModelFactory):
    """A saved version of an item's editable fields (the item's current ones by default)."""

    class Meta:
        model = ItemVersion

    item = factory.SubFactory(ItemFactory)
    number = 1
    fields = factory.LazyAttribute(lambda o: item_snapshot(o.item))
    author = factory.SubFactory(UserFactory)


# --------------------------------------------------------------------------- people


class InvitationFactory(DjangoModelFactory):
    """An open invitation; its token is ``invitation-token-<n>`` (``token`` on the instance is
    not stored: only its hash is)."""

    class Meta:
        model = Invitation
        exclude = ("token",)

    token = factory.Sequence(lambda n: f"invitation-token-{n}")
    project = factory.SubFactory(ProjectFactory)
    role = Role.ANNOTATOR
    token_hash = factory.LazyAttribute(lambda o: Invitation.hash_token(o.token))
    created_by = factory.SubFactory(UserFactory)
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=7))


class AuditEventFactory(DjangoModelFactory):
    class Meta:
        model = AuditEvent

    actor = factory.SubFactory(UserFactory)
    action = AuditAction.MEMBER_ADDED
    project = factory.SubFactory(ProjectFactory)
    target = "someone"
    details = factory.LazyFunction(lambda: {"role": "annotator"})


# --------------------------------------------------------------------------- model drafting


class ModelDraftFactory(DjangoModelFactory):
    """A batch of drafted queries (``kind`` "queries") or an item's drafted answer, rubric or
    plan (pass ``item`` and ``kind``), already drafted by the fake model."""

    class Meta:
        model = "annotation.ModelDraft"

    project = factory.LazyAttribute(lambda d: d.item.project if d.item else ProjectFactory())
    item = None
    kind = "queries"
    params = factory.LazyAttribute(
        lambda d: (
            {"category": "Recipe", "intent": "Ingredient", "n": 3} if d.kind == "queries" else {}
        )
    )
    status = "ready"
    model = "fake-vl-7b"
    created_by = factory.SubFactory(UserFactory)


class DraftCandidateFactory(DjangoModelFactory):
    class Meta:
        model = "annotation.DraftCandidate"

    draft = factory.SubFactory(ModelDraftFactory)
    position = factory.Sequence(int)
    content = "How do I tell ripe avocados from unripe ones at the shop?"
    status = "pending"
    item = factory.LazyAttribute(lambda c: c.draft.item)


# --------------------------------------------------------------------------- evaluation


class EvaluationRunFactory(DjangoModelFactory):
    class Meta:
        model = "review.EvaluationRun"

    project = factory.SubFactory(ProjectFactory)
    model = factory.Sequence(lambda n: f"model-{n}")
    base_url = "http://127.0.0.1:9/v1"
    settings = factory.LazyFunction(lambda: {"workers": 1})
    items = "verified"


class EvaluationResultFactory(DjangoModelFactory):
    class Meta:
        model = "review.EvaluationResult"

    run = factory.SubFactory(EvaluationRunFactory)
    item = factory.LazyAttribute(lambda o: ItemFactory(project=o.run.project))
    status = "ok"
    output = "an answer"
    scores = factory.LazyFunction(dict)


class EvaluationCallFactory(DjangoModelFactory):
    class Meta:
        model = "review.EvaluationCall"

    project = factory.SelfAttribute("item.project")
    item = factory.SubFactory(ItemFactory)
    request_key = factory.Sequence(lambda n: f"{n:064x}")
    endpoint = "http://127.0.0.1:9/v1"
    model = "model-0"
    answer = "an answer"


class ToolCallRecordFactory(DjangoModelFactory):
    class Meta:
        model = "review.ToolCallRecord"

    project = factory.SelfAttribute("item.project")
    item = factory.SubFactory(ItemFactory)
    key = factory.Sequence(lambda n: f"{n:064x}")
    name = "lookup"
    request = factory.LazyFunction(lambda: {"name": "lookup", "arguments": {"q": "apple"}})
    response = factory.LazyFunction(lambda: {"meaning": "a fruit"})


class SavedFilterFactory(DjangoModelFactory):
    class Meta:
        model = "benchmark.SavedFilter"

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"filter {n}")
    query = "status=verified"


class ItemDoubtFactory(DjangoModelFactory):
    """An item's doubt for a task (routing by doubt); pass ``task`` and ``score``. A task that
    serves items by doubt already has a row (the prior) for each of its items: that row is
    given the score."""

    class Meta:
        model = "annotation.ItemDoubt"

    task = factory.SubFactory(JudgmentTaskFactory, serve_by_doubt=True)
    item = factory.SubFactory(ItemFactory, project=factory.SelfAttribute("..task.project"))
    unit = ""
    score = 0.5
    position = factory.LazyAttribute(lambda o: o.item.position)

    @classmethod
    def _create(cls, model_class: Any, *args: Any, **kwargs: Any) -> Any:
        keys = {k: kwargs.pop(k) for k in ("task", "item", "unit")}
        position = kwargs.pop("position")
        row, _ = model_class.objects.update_or_create(
            **keys, defaults=kwargs, create_defaults={**kwargs, "position": position}
        )
        return row


class AnnotatorReliabilityFactory(DjangoModelFactory):
    """An annotator's cached reliability on a task (routing by doubt's gate)."""

    class Meta:
        model = "annotation.AnnotatorReliability"

    task = factory.SubFactory(JudgmentTaskFactory, serve_by_doubt=True)
    user = factory.SubFactory(UserFactory)
    score = 0.9
    source = "dawid-skene"
    judgments = 20


class GoldItemFactory(DjangoModelFactory):
    """A gold item of a task (pass ``task`` and a verified ``item``), the answer 1."""

    class Meta:
        model = "annotation.GoldItem"

    task = factory.SubFactory(JudgmentTaskFactory)
    item = factory.SubFactory(
        ItemFactory, project=factory.SelfAttribute("..task.project"), status=ItemStatus.VERIFIED
    )
    value = 1
