"""The benchmark domain: projects, toolsets, taxonomies, items and what hangs off them.

Every imported record keeps its exact source JSON text in ``raw`` next to the parsed columns,
so export can be lossless and fields nobody has verified yet still round-trip.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import orjson
from django.conf import settings as django_settings
from django.db import models
from django.db.models import Q
from django.utils.functional import cached_property

from benchmark.fields import ImageRefsField, JSONField, NulJSONField, NulTextField
from benchmark.kinds import BenchmarkKind, kind_choices, kind_for
from benchmark.reads import GuardedColumns


class ProjectKind(models.TextChoices):
    INTERLEAVED = "interleaved", "Interleaved answers (tool tags)"
    PLAN = "plan", "Tool plans (m&m's)"
    TRAJECTORY = "trajectory", "Agent trajectories (Agentic-MME)"


class TagSyntax(models.TextChoices):
    NONE = "", "None"
    ATP = "atp", "ATP-Bench <tool>{json}</tool>"
    LLMI = "llmi", "LLM-I <imgen>{dict}</imgen>"


class DataFormat(models.TextChoices):
    ATP = "atp", "ATP-Bench"
    LLMI = "llmi", "LLM-I / LLMI-Bench"
    AGENTIC_MME = "agentic-mme", "Agentic-MME"
    MMS = "mms", "m&m's"


class Role(models.TextChoices):
    ADMIN = "admin", "Admin"
    REVIEWER = "reviewer", "Reviewer"
    ANNOTATOR = "annotator", "Annotator"


class ItemStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    IN_REVIEW = "in_review", "In review"
    VERIFIED = "verified", "Verified"
    DISCARDED = "discarded", "Discarded"


class Modality(models.TextChoices):
    TEXT = "text", "Text only"
    IMAGE = "image", "With input images"


class Origin(models.TextChoices):
    GROUND_TRUTH = "ground_truth", "Ground truth"
    MODEL = "model", "Model"


class Toolset(models.Model):
    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    builtin = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Tool(models.Model):
    """One tool. ``parameters`` is a list of ``{"name", "type", "required", "description"}``;
    ``input_types``/``output_types`` are modality names (m&m's graph edges follow from them, or
    are stored explicitly as ToolEdge rows)."""

    toolset = models.ForeignKey(Toolset, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=100)
    category = models.CharField(max_length=100, blank=True)
    description = models.TextField(blank=True, help_text="What the tool can and cannot do.")
    parameters = JSONField(default=list, blank=True)
    input_types = JSONField(default=list, blank=True)
    output_names = JSONField(default=list, blank=True)
    output_types = JSONField(default=list, blank=True)
    extra = JSONField(default=dict, blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["toolset", "position", "name"]
        constraints = [
            models.UniqueConstraint(fields=["toolset", "name"], name="tool_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name


class ToolEdge(models.Model):
    toolset = models.ForeignKey(Toolset, on_delete=models.CASCADE, related_name="edges")
    source = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="out_edges")
    target = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="in_edges")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "target"], name="tooledge_unique"),
        ]


class Taxonomy(models.Model):
    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    builtin = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "taxonomies"

    def __str__(self) -> str:
        return self.name


class TermKind(models.TextChoices):
    CATEGORY = "category", "Category"
    INTENT = "intent", "Intent"
    DOMAIN = "domain", "Domain"
    LEVEL = "level", "Level"


class TaxonomyTerm(models.Model):
    taxonomy = models.ForeignKey(Taxonomy, on_delete=models.CASCADE, related_name="terms")
    kind = models.CharField(max_length=20, choices=TermKind.choices)
    name = models.CharField(max_length=200)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    description = models.TextField(blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["taxonomy", "kind", "position", "name"]
        constraints = [
            # The same intent name may sit under two categories (ATP-Bench's "Component").
            models.UniqueConstraint(
                fields=["taxonomy", "kind", "parent", "name"], name="taxonomyterm_unique"
            ),
            models.UniqueConstraint(
                fields=["taxonomy", "kind", "name"],
                condition=Q(parent__isnull=True),
                name="taxonomyterm_unique_top_level",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Project(models.Model):
    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=20, choices=ProjectKind.choices)
    tag_syntax = models.CharField(max_length=10, choices=TagSyntax.choices, blank=True)
    #: The benchmark kind's name (``benchmark.kinds``): choices from the registry, through a
    #: callable so that a new kind needs no migration.
    data_format = models.CharField(max_length=20, choices=kind_choices)
    toolset = models.ForeignKey(Toolset, on_delete=models.PROTECT, related_name="projects")
    taxonomy = models.ForeignKey(
        Taxonomy, null=True, blank=True, on_delete=models.PROTECT, related_name="projects"
    )
    description = models.TextField(blank=True)
    guidelines = models.TextField(
        blank=True, help_text="Markdown, shown on every annotation screen of the project."
    )
    settings = JSONField(default=dict, blank=True)
    #: Whether any judgment task of the project has current gold items: kept by the gold
    #: services (``review.gold``) when items are marked and unmarked, so that ``benchmark``
    #: can hide item status from annotators (``benchmark.visibility.status_hidden``)
    #: without importing ``annotation``.
    has_gold = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    members = models.ManyToManyField(
        django_settings.AUTH_USER_MODEL, through="Membership", related_name="projects"
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(kind="interleaved") & ~Q(tag_syntax=""))
                | (~Q(kind="interleaved") & Q(tag_syntax="")),
                name="project_tag_syntax_fits_kind",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @cached_property
    def benchmark(self) -> BenchmarkKind:
        """The project's benchmark kind: what its pages, forms, formats and features are
        (``benchmark.kinds``); ask it instead of comparing ``kind`` or ``data_format``."""
        return kind_for(self)


class Membership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=20, choices=Role.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.project}"


class Image(models.Model):
    """An image stored once, by the sha256 of its bytes."""

    sha256 = models.CharField(max_length=64, unique=True)
    file = models.FileField(upload_to="images/", max_length=255)
    thumbnail = models.FileField(upload_to="thumbs/", max_length=255, blank=True)
    format = models.CharField(max_length=20, blank=True)
    width = models.PositiveIntegerField(default=0)
    height = models.PositiveIntegerField(default=0)
    size_bytes = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    # Which projects use the image: decides who may see it.
    projects = models.ManyToManyField(Project, related_name="images", blank=True)
    # A derived image (a crop, an enhanced copy...) keeps the image it was made from and its
    # recipe (benchmark.imaging.recipe JSON form, normalized), so it can be re-derived and
    # checked. Uploads and imported images have no source and an empty recipe.
    source = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="derived"
    )
    recipe = JSONField(default=dict, blank=True)

    def __str__(self) -> str:
        return self.sha256[:12]

    @property
    def is_derived(self) -> bool:
        return bool(self.recipe)


class AudioFile(models.Model):
    """An audio file stored once, by the sha256 of its bytes: an m&m's task's input (speech
    that a plan's automatic speech recognition step transcribes). FLAC, WAV or MP3, checked
    by their magic bytes (:mod:`benchmark.formats.audio`)."""

    sha256 = models.CharField(max_length=64, unique=True)
    file = models.FileField(upload_to="audio/", max_length=255)
    format = models.CharField(max_length=10)  # flac | wav | mp3
    size_bytes = models.PositiveBigIntegerField(default=0)
    # Read from the header where that is cheap (FLAC, WAV); None otherwise.
    duration_seconds = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Which projects use the file: decides who may hear it (as for images).
    projects = models.ManyToManyField(Project, related_name="audio_files", blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(format__in=["flac", "wav", "mp3"]), name="audiofile_format_known"
            ),
        ]

    def __str__(self) -> str:
        return self.sha256[:12]


_TEXT_SOURCES = frozenset({"query", "expected_answer"})


class Item(GuardedColumns, models.Model):
    """One benchmark record: a query with its documents, images, constraints and answer.

    Read for a user by the item selectors (:mod:`benchmark.visibility`), an item whose answer
    is hidden from that user (``answer_hidden``) reads its answer, variants and source record
    empty without loading them, and cannot be saved (:mod:`benchmark.reads`)."""

    hidden_flag = "answer_hidden"
    guarded_columns: ClassVar[dict[str, Callable[[], Any]]] = {
        "expected_answer": str,
        "accepted_variants": list,
        "raw": str,
    }
    """The columns that hold the answer, with the empty value a hidden item reads."""

    # No index of its own: the unique (project, external_id) index serves lookups by project.
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="items", db_index=False
    )
    external_id = models.CharField(max_length=255)
    position = models.PositiveIntegerField(default=0)
    source_file = models.CharField(max_length=255, blank=True)
    query = models.TextField(blank=True)
    modality = models.CharField(max_length=10, choices=Modality.choices, default=Modality.TEXT)
    documents = JSONField(default=list, blank=True)
    # [{"sha256", "role", "path", "position"}]: images by content hash, in source order
    # (stored as positional arrays, see ImageRefsField).
    image_refs = ImageRefsField(default=list, blank=True)
    # [{"sha256", "path"}]: the audio files the task names (m&m's), by the name its record
    # uses; "sha256" is "" for a file the import did not hold (counted as missing).
    audio_refs = JSONField(default=list, blank=True)
    constraints = JSONField(default=dict, blank=True)
    expected_answer = models.TextField(blank=True)
    accepted_variants = JSONField(default=list, blank=True)
    match_type = models.CharField(max_length=30, blank=True)
    rubric = JSONField(default=list, blank=True)
    category = models.CharField(max_length=200, blank=True)
    intent = models.CharField(max_length=200, blank=True)
    domain = models.CharField(max_length=200, blank=True)
    level = models.PositiveSmallIntegerField(null=True, blank=True)
    status = models.CharField(max_length=20, choices=ItemStatus.choices, default=ItemStatus.DRAFT)
    discard_reason = models.TextField(blank=True)
    provenance = models.CharField(max_length=200, blank=True)
    raw = models.TextField(blank=True, help_text="The exact source JSON of the record.")
    # Where long strings were cut out of ``raw`` because a column holds them (a document's
    # text, the ground-truth answer): [[offset, source, style]]; see ``raw_source``.
    raw_holes = JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["project", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "external_id"], name="item_unique_id"),
            models.CheckConstraint(
                condition=Q(level__isnull=True) | Q(level__gte=1, level__lte=3),
                name="item_level_1_to_3",
            ),
            models.CheckConstraint(
                condition=~Q(status="discarded") | ~Q(discard_reason=""),
                name="item_discard_needs_reason",
            ),
        ]
        indexes = [
            models.Index(fields=["project", "position", "id"]),
            models.Index(fields=["project", "status", "position", "id"]),
            models.Index(fields=["project", "category", "intent"]),
        ]

    def __str__(self) -> str:
        return self.external_id

    @property
    def raw_source(self) -> str:
        """The exact source JSON of the record: ``raw`` with the long strings that were stored
        once put back from their columns (current values, so edits show). Empty when ``raw``
        is (no source record, or one blanked in memory to keep it from a blind verifier)."""
        if not self.raw or not self.raw_holes:
            return self.raw
        from benchmark.formats._jsonio import fill_holes

        return fill_holes(self.raw, self.raw_holes, self.raw_hole_value)

    def raw_hole_value(self, source: list[Any]) -> Any:
        """The current value of a hole's source: ["documents", i, key], ["response", key] (the
        text of this item's response with that key) or [field name]."""
        if source[0] == "documents":
            try:
                return self.documents[source[1]][source[2]]
            except (IndexError, KeyError, TypeError):
                return None
        if source[0] == "response":
            for response in self.responses.all():  # type: ignore[attr-defined]
                if response.key == source[1]:
                    return response.text
            return None
        if source[0] in _TEXT_SOURCES:
            return getattr(self, source[0])
        return None

    @property
    def raw_record(self) -> Any:
        raw = self.raw_source
        return orjson.loads(raw) if raw else None


class ItemTally(models.Model):
    """How many items of a project have a status, category and intent: kept by database
    triggers on ``benchmark_item`` (migration ``item_tally_and_search``), so every writer
    (services, bulk imports, queryset updates, cascading deletes) keeps it exact and the
    project page reads its counts and facets without scanning the project's items."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tallies")
    status = models.CharField(max_length=20, choices=ItemStatus.choices)
    category = models.CharField(max_length=200, blank=True)
    intent = models.CharField(max_length=200, blank=True)
    n = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "status", "category", "intent"], name="itemtally_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id} {self.status} {self.category}/{self.intent}: {self.n}"


class ItemStatusChange(models.Model):
    """One change of an item's status: by a person (``changed_by``) or by a rule (``rule``,
    e.g. a judgment task's consensus), with the status before and after and why. Written only
    by ``benchmark.projects.services.item_status_set``; rows are never edited."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="status_changes")
    changed_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="item_status_changes",
    )
    rule = models.CharField(
        max_length=200,
        blank=True,
        help_text="The rule that changed the status, when no person did.",
    )
    from_status = models.CharField(max_length=20, choices=ItemStatus.choices)
    to_status = models.CharField(max_length=20, choices=ItemStatus.choices)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item", "created_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(changed_by__isnull=False) | ~Q(rule=""),
                name="itemstatuschange_by_someone",
            ),
            models.CheckConstraint(
                condition=~Q(from_status=models.F("to_status")),
                name="itemstatuschange_changes",
            ),
            models.CheckConstraint(
                condition=~Q(to_status="discarded") | ~Q(reason=""),
                name="itemstatuschange_discard_needs_reason",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.item_id}: {self.from_status} -> {self.to_status}"


class AttachedRecord(models.Model):
    """Fields shared by what hangs off an item and may come from its own source file."""

    # No index of its own: each model's unique (item, key) index serves lookups by item.
    item = models.ForeignKey(
        Item, on_delete=models.CASCADE, related_name="%(class)ss", db_index=False
    )
    key = models.CharField(max_length=255, help_text="Unique per item, e.g. 'gt' or 'file#3'.")
    origin = models.CharField(max_length=20, choices=Origin.choices, default=Origin.GROUND_TRUTH)
    model_name = models.CharField(max_length=200, blank=True)
    source_file = models.CharField(max_length=255, blank=True)
    position = models.PositiveIntegerField(default=0)
    raw = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True
        ordering = ["item", "position", "id"]

    @property
    def raw_record(self) -> Any:
        return orjson.loads(self.raw) if self.raw else None


class Response(GuardedColumns, AttachedRecord):
    """An interleaved answer: text with tool tags.

    Read for a user by the response selectors (:mod:`benchmark.visibility`), a response whose
    model is hidden from that user (``identity_hidden``) reads its model masked and cannot be
    saved (:mod:`benchmark.reads`)."""

    hidden_flag = "identity_hidden"
    guarded_columns: ClassVar[dict[str, Callable[[], Any]]] = {
        "model_name": lambda: "hidden",
        "key": str,
        "source_file": str,
        "raw": str,
        "extra": dict,
    }
    """The columns that name (or give away) the model that wrote the answer, with what a
    response whose model is hidden reads when the selector did not mask the column itself."""

    #: The answer as the model (or file) gave it; a NUL character in it is kept too.
    text = NulTextField(blank=True)
    extra = JSONField(default=dict, blank=True)

    class Meta(AttachedRecord.Meta):
        constraints = [
            models.UniqueConstraint(fields=["item", "key"], name="response_unique_key"),
        ]


class PlanSyntax(models.TextChoices):
    JSON = "json", "JSON"
    CODE = "code", "Python code"
    RAW = "raw", "Unparsed text"


class Plan(AttachedRecord):
    """An ordered list of tool calls (m&m's), in JSON form, code form, or both."""

    form = models.CharField(max_length=10, choices=PlanSyntax.choices, default=PlanSyntax.JSON)
    steps = JSONField(default=list, blank=True)
    code = models.TextField(blank=True)
    is_alternative = models.BooleanField(default=False)

    class Meta(AttachedRecord.Meta):
        constraints = [
            models.UniqueConstraint(fields=["item", "key"], name="plan_unique_key"),
        ]


class Trajectory(AttachedRecord):
    """Ordered steps and checkpoints (Agentic-MME): the reference path or an agent's run."""

    steps = JSONField(default=list, blank=True)
    checkpoints = JSONField(default=list, blank=True)
    ordering_constraints = JSONField(default=list, blank=True)
    efficiency = JSONField(default=dict, blank=True)
    final_answer = models.TextField(blank=True)
    image_refs = ImageRefsField(default=list, blank=True)
    item = models.ForeignKey(
        Item, on_delete=models.CASCADE, related_name="trajectories", db_index=False
    )

    class Meta(AttachedRecord.Meta):
        verbose_name_plural = "trajectories"
        constraints = [
            models.UniqueConstraint(fields=["item", "key"], name="trajectory_unique_key"),
        ]


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class Job(models.Model):
    kind = models.CharField(max_length=50)
    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED)
    progress = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    message = models.CharField(max_length=500, blank=True)
    error = models.TextField(blank=True)
    params = JSONField(default=dict, blank=True)
    result = NulJSONField(default=dict, blank=True)
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="jobs"
    )
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the task last reported (start or progress); a running job silent for "
        "longer than its task's time limit lost its worker.",
    )
    finished_at = models.DateTimeField(null=True, blank=True)
    #: Someone asked to cancel the job (``benchmark.jobs.services.job_cancel``): a queued job
    #: is failed at once and never runs; a running one stops at its next progress report.
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(total=0) | Q(progress__lte=models.F("total")),
                name="job_progress_le_total",
            ),
        ]
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="job_status_heartbeat")]

    @property
    def done(self) -> bool:
        return self.status in (JobStatus.SUCCEEDED, JobStatus.FAILED)

    @property
    def cancelled(self) -> bool:
        """Stopped on request: a cancelled job is a failed job whose result says so (so every
        place that shows a failed job's message shows "Cancelled by ...")."""
        return self.status == JobStatus.FAILED and bool((self.result or {}).get("cancelled"))

    @property
    def cancelling(self) -> bool:
        """Asked to stop, not stopped yet (it stops at its next progress report)."""
        return self.cancel_requested_at is not None and not self.done

    @property
    def with_warnings(self) -> bool:
        """Succeeded, but its runner reported something the user must see (its result's
        ``outcome`` is "warnings": an import that left images out, say)."""
        return (
            self.status == JobStatus.SUCCEEDED and (self.result or {}).get("outcome") == "warnings"
        )

    @property
    def worker_lost(self) -> bool:
        """Failed because its worker stopped without reporting (see ``jobs_sweep``)."""
        return self.status == JobStatus.FAILED and bool((self.result or {}).get("worker_lost"))

    @property
    def percent(self) -> int:
        if self.status == JobStatus.SUCCEEDED:
            return 100
        return int(100 * self.progress / self.total) if self.total else 0


class ModelCall(models.Model):
    """One call to a model (or one answer given from the cache), recorded as asked: the
    request key (sha256 of model, messages with image hashes, parameters) makes repeats and
    replays findable."""

    request_key = models.CharField(max_length=64, db_index=True)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="model_calls")
    item = models.ForeignKey(
        Item, null=True, blank=True, on_delete=models.SET_NULL, related_name="model_calls"
    )
    job = models.OneToOneField(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="model_call"
    )
    purpose = models.CharField(max_length=50)
    endpoint = models.CharField(max_length=500, blank=True)
    model = models.CharField(max_length=200)
    system = NulTextField(blank=True)
    prompt = NulTextField(blank=True)
    image_sha256s = JSONField(default=list, blank=True)
    params = JSONField(default=dict, blank=True)
    answer = NulTextField(blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = NulTextField(blank=True)
    cached = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["item", "-created_at"])]
        constraints = [
            models.CheckConstraint(
                condition=Q(error="") | Q(answer=""), name="model_call_answer_or_error"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model} call {self.request_key[:12]}"
