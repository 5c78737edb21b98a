"""Judgment tasks, assignments with leases, and blind judgments."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.judgment_tasks.consensus import Rule, Verdict
from benchmark.fields import JSONField, UTCDay
from benchmark.models import Item, Project
from benchmark.versions import VersionRow, version_constraints


class Scheme(models.TextChoices):
    BINARY = "binary", "Binary (1 / 0)"
    NOMINAL = "nominal", "Nominal labels with reason codes"
    ORDINAL = "ordinal", "Ordinal scale"
    NUMBER = "number", "Number"
    TEXT = "text", "Free answer (compared by normalized match)"
    #: Several scores in one judgment, a JSON object ``{field: integer}``; ``labels`` lists
    #: the fields as ``[{"value": field, "label": ..., "min": 0, "max": 5}]`` (``max`` may be
    #: left out). Used by response-level evaluation (ATP-Bench B.2: # Inappr., MI, FS).
    SCORES = "scores", "Several scores (one integer per field)"


class UnitKind(models.TextChoices):
    """What one judgment is about. ``item``: a whole item (the unit key is ""). The other kinds
    judge a part of an item, named by a unit key ``response:<response id>:<label>``:

    * ``judge-report`` (rate the judge, ATP-Bench §6): one agent's report on one model answer,
      ``label`` being the judge call's label ("precision", "recall", "chief", "r3", "llm"...);
      the rating is the annotator's agreement with the report, 0 disagree, 1 partly, 2 agree.
    * ``answer-criterion``: one rubric criterion of one model answer, ``label`` "r<k>"; the
      rating is the annotator's own score on the LLMI rubric scale, 0 not met, 1 partially,
      2 fully met, so it compares with the rubric judge's JudgeCall of the same key.

    * ``answer-eval`` (human evaluation of answers, ATP-Bench App. B.2, LLM-I App. C): one
      whole model answer, ``label`` the scale ("atp": # Inappr., MI and FS as one object;
      "likert": 1-5).
    * ``answer-pair`` (pairwise preference): two answers to the same item from two models,
      unit key ``pair:<response id shown as A>:<response id shown as B>``; the rating is
      "a", "b" or "tie". The key's order is the side each answer is shown on.

    Which units a task has is listed once, when the task is created, by the unit source
    registered for its kind (:mod:`annotation.judgment_tasks.units`), and kept as ``TaskUnit`` rows.
    """

    ITEM = "item", "Items"
    JUDGE_REPORT = "judge-report", "A judge agent's report on an answer (rate the judge)"
    ANSWER_CRITERION = "answer-criterion", "One rubric criterion of one answer"
    ANSWER_EVAL = "answer-eval", "Human evaluation of one answer"
    ANSWER_PAIR = "answer-pair", "Preference between two answers"


class JudgmentTask(models.Model):
    """What is asked about each item (or each unit, see :class:`UnitKind`) of a project, and how
    k answers become an outcome."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="judgment_tasks")
    name = models.CharField(max_length=200)
    question = models.TextField()
    scheme = models.CharField(max_length=20, choices=Scheme.choices)
    # Nominal: [{"value", "label", "accept": bool}]; ordinal: [{"value": 0, "label": ...}, ...]
    labels = JSONField(default=list, blank=True)
    # Fields an annotator may relabel while judging, e.g. ["category", "intent"].
    relabel_fields = JSONField(default=list, blank=True)
    overlap = models.PositiveSmallIntegerField(default=3)
    author_may_judge = models.BooleanField(default=False)
    consensus = models.CharField(
        max_length=20, choices=[(r.value, r.value.replace("_", " ")) for r in Rule]
    )
    required_value = JSONField(null=True, blank=True)
    lease_minutes = models.PositiveIntegerField(default=30)
    updates_item_status = models.BooleanField(
        default=True,
        help_text="Outcomes set the item's status (verified / in review / discarded); the queue "
        "then offers draft items only.",
    )
    active = models.BooleanField(default=True)
    #: What one judgment is about: a whole item, or a unit of one (see :class:`UnitKind`).
    unit_kind = models.CharField(max_length=20, choices=UnitKind.choices, default=UnitKind.ITEM)
    #: Where the units were listed from, as the unit source of ``unit_kind`` reads it, e.g.
    #: ``{"judge_run": 7, "labels": ["precision", "recall", "chief"], "responses": [...]}``.
    unit_params = JSONField(default=dict, blank=True)
    #: The task takes only the items listed for it (:class:`TaskItem`, added with the item
    #: list's bulk action "Assign to task"); otherwise every item of the project.
    items_listed = models.BooleanField(
        default=False,
        help_text="Only the items added to it from the project's item list (bulk action "
        "'Assign to task'); otherwise every item of the project.",
    )
    #: Routing by doubt (issue 26): the queue serves the items most in doubt first
    #: (``annotation.judgment_tasks.doubt``) instead of in position order.
    serve_by_doubt = models.BooleanField(
        "Serve items by doubt",
        default=False,
        help_text="The queue serves the items whose label is most in doubt first (judgments "
        "that disagree, a model judge or the models under test disagreeing) instead of in "
        "position order. Annotators below the reliability threshold get the least doubtful "
        "items first.",
    )
    #: The reliability gate: an annotator whose reliability on the task is below this is
    #: served the least doubtful items first; 0 turns the gate off.
    reliability_threshold = models.FloatField(
        "Reliability threshold",
        default=0.7,
        help_text="With routing by doubt: annotators whose reliability (gold accuracy, else "
        "the Dawid–Skene estimate) is below this (0 to 1) get the least doubtful items "
        "first; 0 turns the gate off.",
    )
    #: Gold items (:class:`GoldItem`) mixed into each annotator's queue: about this percent of
    #: the items served are gold (0: none). See ``annotation.judgment_tasks.gold``.
    gold_rate = models.PositiveSmallIntegerField(
        default=0,
        help_text="Percent of the items served that are gold items (0 = none; at most 50).",
    )
    #: Below this gold accuracy (0..1), once an annotator has ``gold_min_judgments`` gold
    #: judgments, the reviewers are told (Team page, agreement dashboard, project page).
    gold_threshold = models.FloatField(
        default=0.7, help_text="Flag annotators whose gold accuracy is below this (0 to 1)."
    )
    gold_min_judgments = models.PositiveSmallIntegerField(
        default=5, help_text="Flag only once an annotator has this many gold judgments."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="judgmenttask_unique_name"),
            models.CheckConstraint(condition=Q(overlap__gte=1), name="judgmenttask_overlap_ge_1"),
            models.CheckConstraint(
                condition=Q(reliability_threshold__gte=0) & Q(reliability_threshold__lte=1),
                name="judgmenttask_reliability_threshold_0_1",
            ),
            models.CheckConstraint(
                condition=Q(gold_rate__lte=50), name="judgmenttask_gold_rate_le_50"
            ),
            models.CheckConstraint(
                condition=Q(gold_threshold__gte=0, gold_threshold__lte=1),
                name="judgmenttask_gold_threshold_0_1",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def has_units(self) -> bool:
        """Judgments are about units of items (``Judgment.unit`` set), not whole items."""
        return self.unit_kind != UnitKind.ITEM

    @property
    def label_values(self) -> list:
        if self.scheme == Scheme.BINARY:
            return [1, 0]
        return [entry["value"] for entry in self.labels]

    def accepts(self, value: object) -> bool:
        if self.scheme == Scheme.BINARY:
            return value == 1
        for entry in self.labels:
            if entry["value"] == value:
                return bool(entry.get("accept", False))
        return False


class TaskUnit(models.Model):
    """One unit of a task whose judgments are about parts of items (``task.has_units``): the
    key ``response:<response id>:<label>`` (or ``pair:<id>:<id>``) and the item it belongs
    to, in queue order. Listed
    once when the task is created; the queue hands these out as it hands out items."""

    task = models.ForeignKey(JudgmentTask, on_delete=models.CASCADE, related_name="units")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="task_units")
    key = models.CharField(max_length=100)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["task", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["task", "key"], name="taskunit_unique_key"),
        ]
        indexes = [models.Index(fields=["task", "position"])]

    def __str__(self) -> str:
        return self.key


class TaskItem(models.Model):
    """An item in the item set of a task that takes only listed items
    (``JudgmentTask.items_listed``); added by the item list's bulk action."""

    task = models.ForeignKey(JudgmentTask, on_delete=models.CASCADE, related_name="listed_items")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="task_listings")
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "item"], name="taskitem_unique"),
        ]


class ItemPush(models.Model):
    """An item pushed to one annotator for one (item-level) task: their "next item" serves it
    before the pull queue, and until they take it it holds one of the item's ``overlap``
    places, so the pull queue does not give the item to more people than the overlap allows.
    ``taken_at`` is set when they lease it; an untaken push shows on the task list."""

    task = models.ForeignKey(JudgmentTask, on_delete=models.CASCADE, related_name="pushes")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="pushes")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="pushed_items"
    )
    pushed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    taken_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["task", "item", "user"],
                condition=Q(taken_at__isnull=True),
                name="itempush_one_open",
            ),
        ]
        indexes = [
            models.Index(fields=["task", "user", "taken_at"]),
            models.Index(fields=["task", "item", "taken_at"]),
        ]


class AssignmentStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    SUBMITTED = "submitted", "Submitted"


class Assignment(models.Model):
    """An item (or a unit of it) leased to one annotator for one task. A lease that expires
    unsubmitted returns it to the pool (it stops counting towards the overlap)."""

    task = models.ForeignKey(JudgmentTask, on_delete=models.CASCADE, related_name="assignments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    #: The unit key (``TaskUnit.key``) for tasks with units; "" for item-level tasks.
    unit = models.CharField(max_length=100, default="", blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments"
    )
    status = models.CharField(
        max_length=20, choices=AssignmentStatus.choices, default=AssignmentStatus.ACTIVE
    )
    leased_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    #: Served as a gold item (:class:`GoldItem`): its judgment is a gold judgment. Never shown
    #: to the annotator (no serializer or template of theirs names it).
    gold = models.BooleanField(default=False, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["task", "item", "unit", "user"], name="assignment_unique_per_user"
            ),
        ]
        indexes = [
            models.Index(fields=["task", "item", "status", "expires_at"]),
            models.Index(fields=["task", "user", "status", "expires_at"]),
            # Leases open now (the team page's "in progress"): a small index of active ones.
            models.Index(
                fields=["task", "expires_at"],
                condition=Q(status="active"),
                name="assignment_open_idx",
            ),
        ]


class OutcomeJudgments(models.Manager["Judgment"]):
    """``Judgment.objects``: the judgments that count towards outcomes, that is every
    judgment but gold judgments (``gold``, an annotator's judgment of a gold item served to
    them). Consensus, agreement credits and figures, adjudication, exports and aggregation read
    judgments through it, so a gold judgment never enters them. What an annotator sees of
    their own judgments (the judge page, undo, the API) reads ``Judgment.with_gold``, so a
    gold judgment looks like any other to them."""

    def get_queryset(self) -> models.QuerySet[Judgment]:
        return super().get_queryset().filter(gold=False)


class Judgment(models.Model):
    """One annotator's blind judgment of an item, or of one unit of it: ``unit`` is the unit
    key ``response:<response id>:<label>`` for tasks with units (``task.unit_kind``
    ``judge-report`` or ``answer-criterion``: the key names the same answer and label as the
    judge's ``JudgeCall``; ``answer-eval``: the label is the scale), ``pair:<id>:<id>`` for
    ``answer-pair``, "" for item-level tasks. ``value`` is a JSON value: a number or label,
    or an object of integers for the ``scores`` scheme."""

    task = models.ForeignKey(JudgmentTask, on_delete=models.CASCADE, related_name="judgments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="judgments")
    unit = models.CharField(max_length=100, default="", blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="judgments"
    )
    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="judgment")
    value = JSONField()
    reason = models.CharField(max_length=100, blank=True)
    comment = models.TextField(blank=True)
    relabel = JSONField(default=dict, blank=True)
    seconds = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    #: The UTC day of ``created_at`` (the team page's throughput per day), kept by the database.
    day = models.GeneratedField(
        expression=UTCDay("created_at"), output_field=models.DateField(), db_persist=True
    )
    #: The judgment's credit for agreeing with its item's (or unit's) settled outcome (1 or 0,
    #: or the share of fields for ``scores``; see ``consensus.value_credit``), None while the
    #: outcome is not settled. Written with the outcome (``judgment_agreement_sync``).
    agrees = models.FloatField(null=True, blank=True, editable=False)
    #: Counts the judgment's changes: 1 as first submitted; an undo and change (allowed while
    #: the outcome is pending, for ``JUDGMENT_UNDO_MINUTES`` after ``created_at``) keeps the
    #: values it replaces as a :class:`JudgmentVersion` and adds 1. Compared on save, so a
    #: change made in another window meanwhile is answered with a conflict.
    version = models.PositiveIntegerField(default=1)
    edited_at = models.DateTimeField(null=True, blank=True)
    #: A gold judgment: of a gold item served as such (``Assignment.gold``). It measures the
    #: annotator's gold accuracy and never enters the task's outcomes (see
    #: :class:`OutcomeJudgments`).
    gold = models.BooleanField(default=False, editable=False)

    #: Every judgment, gold judgments included (the default manager: related lookups,
    #: admin, backups).
    with_gold = models.Manager()
    #: The judgments that count towards outcomes (gold judgments left out).
    objects = OutcomeJudgments()

    class Meta:
        default_manager_name = "with_gold"
        ordering = ["task", "item", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "item", "unit", "user"], name="judgment_unique"
            ),
        ]
        indexes = [
            # The team page (review.team), read from the indexes alone: per task and
            # annotator the judgments by day with their agreement; the medians of the times
            # by annotator and by task, read at their rank (no sort).
            models.Index(
                fields=["task", "user", "day", "created_at", "seconds", "agrees"],
                name="judgment_team_day_idx",
            ),
            models.Index(
                fields=["user", "seconds", "task", "created_at"], name="judgment_user_secs_idx"
            ),
            models.Index(fields=["task", "seconds", "created_at"], name="judgment_task_secs_idx"),
        ]


class JudgmentVersion(VersionRow):
    """The values a judgment had before its author changed it (undo on the judge page):
    version ``number`` as it was submitted at ``created_at`` (by ``author``, the judgment's
    annotator) and replaced at ``replaced_at``. Nothing is overwritten: the judgment's history is
    these rows and the judgment itself. One of the versions' rows (``benchmark.versions``)."""

    judgment = models.ForeignKey(Judgment, on_delete=models.CASCADE, related_name="versions")
    value = JSONField()
    reason = models.CharField(max_length=100, blank=True)
    comment = models.TextField(blank=True)
    relabel = JSONField(default=dict, blank=True)
    seconds = models.FloatField(default=0)
    replaced_at = models.DateTimeField()

    class Meta:
        ordering = ["judgment", "number"]
        constraints = version_constraints("judgmentversion", "judgment")


class Outcome(models.Model):
    """Where an item (or a unit of it) stands for a task: pending, accepted, rejected,
    disputed, or decided by a reviewer (``decided_by`` set), or discarded with a reason."""

    VERDICTS = [(v.value, v.value) for v in Verdict] + [("discarded", "discarded")]

    task = models.ForeignKey(JudgmentTask, on_delete=models.CASCADE, related_name="outcomes")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="outcomes")
    #: The unit the outcome is for (tasks with units); "" for item-level tasks.
    unit = models.CharField(max_length=100, default="", blank=True)
    verdict = models.CharField(max_length=20, choices=VERDICTS, default=Verdict.PENDING)
    value = JSONField(null=True, blank=True)
    # Fields changed by the annotators' relabels: {"category": {"from": ..., "to": ...}}
    relabel = JSONField(default=dict, blank=True)
    reason = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    # Blind verification (solve tasks): the item's answer as it stood when verification began,
    # in the scorer's golden_answer shape ({"value", "match_type", "tolerance",
    # "accepted_answers"}); the verifiers' answers are compared with it, not with the item.
    answer_snapshot = JSONField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "item", "unit"], name="outcome_unique"),
        ]
        indexes = [
            models.Index(fields=["task", "verdict"]),
            # The team page's cache stamp: the newest change of a task's outcomes.
            models.Index(fields=["task", "updated_at"], name="outcome_task_updated_idx"),
        ]


# --------------------------------------------------------------------------- gold items


class GoldItem(models.Model):
    """An item (or a unit of one) a reviewer marked as gold for a task, with the answer that
    counts (``value``): a value of the task's scheme, on the unit's scale for a task with
    units (``unit``, the ``TaskUnit`` key; "" for a whole item), and for blind solving the
    reference answer in the scorer's ``golden_answer`` shape (``annotation.judgment_tasks
    .solving.golden_answer``). Served to annotators at the task's ``gold_rate``,
    indistinguishable from other items (units); their judgments of it are gold judgments
    (``Judgment.gold``), compared with ``value`` for their gold accuracy. Unmarking keeps the
    row (``removed_at``): its judgments stay gold and stay out of outcomes."""

    task = models.ForeignKey(JudgmentTask, on_delete=models.CASCADE, related_name="gold_items")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="gold_marks")
    #: The unit key (``TaskUnit.key``) for a task with units; "" for a whole item.
    unit = models.CharField(max_length=100, default="", blank=True)
    value = JSONField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    removed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    removed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["task", "item", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "item", "unit"],
                condition=Q(removed_at__isnull=True),
                name="golditem_one_current",
            ),
        ]


class QueuePause(models.Model):
    """A reviewer paused one annotator's queue in one task (``resumed_at`` unset while it
    lasts): their "next item" answers that a reviewer paused it. Kept when lifted."""

    task = models.ForeignKey(JudgmentTask, on_delete=models.CASCADE, related_name="pauses")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="queue_pauses"
    )
    reason = models.CharField(max_length=200, blank=True)
    paused_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    paused_at = models.DateTimeField(auto_now_add=True)
    resumed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resumed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["task", "user"],
                condition=Q(resumed_at__isnull=True),
                name="queuepause_one_open",
            ),
        ]


class SendBack(models.Model):
    """A reviewer sent an annotator's recent judgments in a task back for review: the
    outcomes of those items (``item_ids``) were set to disputed, so they wait in the task's
    dispute queue for a reviewer's decision. Nothing is deleted; the judgments stand."""

    task = models.ForeignKey(JudgmentTask, on_delete=models.CASCADE, related_name="send_backs")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    at = models.DateTimeField(auto_now_add=True)
    judgment_ids = JSONField(default=list)
    item_ids = JSONField(default=list)


# --------------------------------------------------------------------------- tag review


# --------------------------------------------------------------------------- verification audit
