"""factory-boy factories for every benchmark model."""

from __future__ import annotations

import io
import json
from typing import Any

import factory
from django.contrib.auth import get_user_model
from factory.django import DjangoModelFactory
from PIL import Image as PILImage

from benchmark.images import services
from benchmark.models import (
    Image,
    Item,
    ItemStatus,
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
