"""The route × role matrix: every named route of the root URLconf (pages and API), tried by
every role, against one table keyed by the route's name.

Roles: ``admin``, ``reviewer`` and ``annotator`` of the world's projects; ``blind_verifier``,
an annotator of the same projects who is one of the verifiers of the trajectory item under an
active "Solve blind" task and has not answered yet; ``outsider``, an admin of another project
only; ``anonymous``. The annotator (and the blind verifier, another annotator) is also a rater
of an active human evaluation of the ATP project's model answer: no page or API route may show
them the model that wrote it (``SECRET_MODEL``, in its name, key and source file).

Each table entry (a :class:`Case`) says how to build the route's kwargs from the world, which
method to try with which (empty or minimal) body, and the lowest role it is meant for. What
each role should get follows from that: allowed roles are neither refused (401/403/404) nor
sent to the login page, lower roles get 403, the outsider 404 (another project's objects do
not exist for them), anonymous users the login page (or 401/403 from the API). No cell may
answer 5xx, and no body may contain a secret its role may not read (:data:`SECRETS`: the blind
item's answer, variants, reference trajectory, the author's drafting conversation and the
other verifier's answer; the model under human evaluation; reviewer-only and admin-only job
results).

Adding a route: add an entry ``"namespace:name": (Case(...), ...)`` to :data:`ROUTES` (a GET
for a page, a POST with an empty or minimal body for a write; the lowest role; ``blind=`` when
it shows or changes what a blind verifier may not see). ``test_every_route_is_in_the_table``
names the routes that have no entry, and the entries whose route is gone. A kwarg renamed in
a URL pattern is renamed in its entries here, and nowhere else.

The admin site is not walked: Django's admin is staff-only and protected by Django itself;
``test_admin_sends_anonymous_to_its_login`` checks only that it stays closed.

Cells that fail today because of known defects are strict xfails naming the defect (issue 9):
they turn into failures once the defect is fixed, and the fixer removes the mark.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.tokens import default_token_generator
from django.db import transaction
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from annotation.backward_drafting.services import item_draft_token
from annotation.judgment_tasks.models import GoldItem, TaskUnit
from annotation.judgment_tasks.units import RATING_LABELS
from annotation.trajectories.document import ITEM_FIELDS, STEP_FIELDS, draft_from_document
from annotation.trajectories.selectors import reference_of, version_state
from annotation.trajectories.services import task_document
from benchmark.api_tokens.services import api_token_create
from benchmark.builtin import taxonomies_ensure, toolsets_ensure
from benchmark.models import Membership, Origin, Role
from benchmark.permissions import ACTIONS
from review.evaluation.records import file_store
from review.human_eval.scales import ATP_SCALE
from review.releases.services import release_create
from tests.factories import (
    AgentRunFactory,
    AgreementJobFactory,
    AnswerScoringJobFactory,
    AssignmentFactory,
    AudioFileFactory,
    DecisionFactory,
    DiscardProposalFactory,
    DraftCandidateFactory,
    DraftingCallFactory,
    DraftingCropFactory,
    DraftingDraftFactory,
    DraftingMarkFactory,
    DraftingSessionFactory,
    EvaluationResultFactory,
    EvaluationRunFactory,
    ExampleSetFactory,
    FailureLabelFactory,
    ImageFactory,
    ImportJobFactory,
    InputDraftFactory,
    InvitationFactory,
    ItemFactory,
    JudgeCallFactory,
    JudgeRunFactory,
    JudgingJobFactory,
    JudgmentFactory,
    JudgmentTaskFactory,
    MembershipFactory,
    ModelCallFactory,
    ModelCallJobFactory,
    ModelDraftFactory,
    OracleResultFactory,
    OracleRunFactory,
    OutcomeFactory,
    PlanFactory,
    PlanJudgeCallFactory,
    PlanJudgeRunFactory,
    ProjectFactory,
    RenderedAnswerFactory,
    RescoringJobFactory,
    ResponseFactory,
    ResponseVersionFactory,
    RunScoringJobFactory,
    RunSetFactory,
    SavedFilterFactory,
    TagDecisionFactory,
    ToolFactory,
    TrajectoryAuditFactory,
    TrajectoryFactory,
    TrajectoryVersionFactory,
    UserFactory,
    VisualVerdictFactory,
    WorkedExampleCaseFactory,
    image_ref,
)

ROLES = ("admin", "reviewer", "annotator", "blind_verifier", "outsider", "anonymous")
# Each member role of the matrix and its role in the project (the blind verifier is an annotator
# who verifies blind).
MEMBER_ROLE = {"admin": "admin", "reviewer": "reviewer", "annotator": "annotator"}
MEMBER_ROLE["blind_verifier"] = "annotator"
LOGIN_URL = "/accounts/login/"

# --------------------------------------------------------------------------- secrets

SECRET_ANSWER = "Quillfeather Lane 1729"
SECRET_VARIANT = "Quillfeather Ln No 1729"
SECRET_REFERENCE = "Zoom into the brass plaque beside door 1729"
SECRET_DRAFTING = "The model said: marmalade lighthouse on the plaque"
SECRET_CROP_TRUTH = "The plaque reads cobalt heron"
SECRET_OTHER_RATER = "another verifier answered Saffron Row"
SECRET_MODEL = "orrery-lumen-13b"
REVIEWERS_ONLY = "result-for-reviewers-only: 41 of 57 answers scored"
ADMINS_ONLY = "result-for-admins-only: data.jsonl line 12 has no trace_id"

MEMBERS = frozenset({"admin", "reviewer", "annotator"})
#: Each secret with the roles that may read it; for every other role no body may contain it.
SECRETS: dict[str, frozenset[str]] = {
    # The blind item's answer, variants and reference, the author's drafting conversation and
    # the other verifier's answer: hidden from its blind verifier until they have answered.
    SECRET_ANSWER: MEMBERS,
    SECRET_VARIANT: MEMBERS,
    SECRET_REFERENCE: MEMBERS,
    SECRET_DRAFTING: MEMBERS,
    SECRET_CROP_TRUTH: MEMBERS,
    SECRET_OTHER_RATER: MEMBERS,
    # The model that wrote the answer under human evaluation (its name, key and source file):
    # hidden from the evaluation's raters (annotators of its project), shown to reviewers.
    SECRET_MODEL: frozenset({"admin", "reviewer"}),
    # Results of scoring, rescoring and agreement jobs: reviewers and admins.
    REVIEWERS_ONLY: frozenset({"admin", "reviewer"}),
    # Results of an import job started by an admin: admins (and who started it).
    ADMINS_ONLY: frozenset({"admin"}),
}

# --------------------------------------------------------------------------- expectations


class Access(Enum):
    """Who a case is meant for, when it is not a project action: a case that is names the
    action (a key of ``benchmark.permissions.ACTIONS``) and its expected answers follow from
    that table."""

    PUBLIC = "public"  # everyone, anonymous too
    LOGGED_IN = "logged in"  # any logged-in user (lists scoped to what they may see)
    OTHER = "other project"  # an object of other_project: only the outsider is a member


class Expect(Enum):
    PUBLIC = "any answer below 400"
    OK = "allowed: not 401/403/404, no redirect to the login page"
    FORBIDDEN = "403"
    HIDDEN = "404"
    REFUSED = "403 or 404"
    SAFE = "allowed or refused (403/404); either way without the secrets"
    LOGIN = "302 to the login page"
    API_ANONYMOUS = "401 or 403"


@dataclass(frozen=True)
class Case:
    """One way to call a route. ``kwargs`` builds the URL kwargs from the world; ``data`` the
    POST body (a dict or a function of the world); ``refusal`` what lower member roles get;
    ``blind``/``expect`` override the blind verifier's or any role's expectation; ``xfail``
    names, per role, the known defect that makes the cell fail today; ``shows`` lists, per
    role, secrets its body must contain (so that their absence elsewhere means something)."""

    label: str
    kwargs: Callable[[Any], dict[str, Any]]
    access: Access | str  # or the project action the route needs (a key of ACTIONS)
    method: str = "get"
    data: Any = None
    json: bool = False
    query: Callable[[Any], str] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    refusal: Expect = Expect.FORBIDDEN
    blind: Expect | None = None
    expect: dict[str, Expect | int] = field(default_factory=dict)
    xfail: dict[str, str] = field(default_factory=dict)
    shows: dict[str, tuple[str, ...]] = field(default_factory=dict)


def expectation(case: Case, role: str, api: bool) -> Expect | int:
    if role in case.expect:
        return case.expect[role]
    if role == "blind_verifier" and case.blind is not None:
        return case.blind
    access = case.access
    if access is Access.PUBLIC:
        return Expect.PUBLIC
    if role == "anonymous":
        return Expect.API_ANONYMOUS if api else Expect.LOGIN
    if access is Access.LOGGED_IN:
        return Expect.OK
    if access is Access.OTHER:
        return Expect.OK if role == "outsider" else Expect.HIDDEN
    if role == "outsider":
        return Expect.HIDDEN
    assert isinstance(access, str), access
    return Expect.OK if MEMBER_ROLE[role] in ACTIONS[access] else case.refusal


# --------------------------------------------------------------------------- defects


def _below_review(reason: str) -> dict[str, str]:
    return {"annotator": reason, "blind_verifier": reason}


def _below_admin(reason: str) -> dict[str, str]:
    return {"reviewer": reason, "annotator": reason, "blind_verifier": reason}


_VERIFIERS_MAY_NOT_EDIT: dict[str, Expect | int] = {
    "annotator": Expect.FORBIDDEN,
    "blind_verifier": Expect.FORBIDDEN,
}

HX_MAIN = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "main"}
#: The staff's pages: no role of the world is staff, so every logged-in one is refused.
STAFF_ONLY: dict[str, Expect | int] = {
    role: Expect.FORBIDDEN for role in ROLES if role != "anonymous"
}
#: Creating a project: staff and admins of some project, not reviewers or annotators.
NOT_PROJECT_ADMINS: dict[str, Expect | int] = {
    role: Expect.FORBIDDEN for role in ("reviewer", "annotator", "blind_verifier")
}

# --------------------------------------------------------------------------- the table
#
# Keyed by the route's name ("namespace:name"). The kwargs are the route's own names: when a
# URL kwarg is renamed, edit it here (and only here).


def _job_cases(kwargs: Callable[[Any, Any], dict[str, Any]], *, page: str) -> tuple[Case, ...]:
    """A job page tried with a job of every kind: who may see a job follows from its kind."""
    return (
        Case(
            f"{page}: import job (started by an admin)",
            lambda w: kwargs(w, w.jobs.imported),
            "import",
            refusal=Expect.REFUSED,
            shows={"admin": (ADMINS_ONLY,)},
        ),
        Case(
            f"{page}: answer scoring job",
            lambda w: kwargs(w, w.jobs.answer_scoring),
            "score",
            refusal=Expect.REFUSED,
            shows={"reviewer": (REVIEWERS_ONLY,)},
        ),
        Case(
            f"{page}: run scoring job",
            lambda w: kwargs(w, w.jobs.run_scoring),
            "score",
            refusal=Expect.REFUSED,
        ),
        Case(
            f"{page}: rescoring job",
            lambda w: kwargs(w, w.jobs.rescoring),
            "score",
            refusal=Expect.REFUSED,
        ),
        Case(
            f"{page}: agreement job",
            lambda w: kwargs(w, w.jobs.agreement),
            "manage_studies",
            refusal=Expect.REFUSED,
        ),
        Case(
            f"{page}: judge run job",
            lambda w: kwargs(w, w.jobs.judging),
            "run_judges",
            refusal=Expect.REFUSED,
            shows={"reviewer": (REVIEWERS_ONLY,)},
        ),
        Case(f"{page}: model call about an item", lambda w: kwargs(w, w.jobs.ask), "view"),
        Case(
            f"{page}: the author's drafting call on the blind item",
            lambda w: kwargs(w, w.jobs.drafting),
            "view",
            blind=Expect.REFUSED,
            shows={"annotator": (SECRET_DRAFTING,)},
        ),
        Case(f"{page}: another project's job", lambda w: kwargs(w, w.jobs.other), Access.OTHER),
    )


PLAN_EDITED = [
    {"id": 0, "name": "image editing", "args": {"image": "17320.jpg", "prompt": "red"}},
    {"id": 1, "name": "image captioning", "args": {"image": "<node-0>.image"}},
]


def _item_draft_key(w: Any) -> str:
    return f"item-edit:project:{w.project.pk}:item:{w.item.pk}"


def _tag_draft_key(w: Any) -> str:
    return f"tag-review:project:{w.project.pk}:item:{w.item.pk}:response:{w.response.pk}"


def _plan_kwargs(w: Any) -> dict[str, Any]:
    return {"project_id": w.pproject.pk, "item_id": w.pitem.pk}


ROUTES: dict[str, tuple[Case, ...]] = {
    # ------------------------------------------------------------------ accounts
    "login": (Case("login page", lambda w: {}, Access.PUBLIC),),
    "logout": (Case("log out", lambda w: {}, Access.PUBLIC, method="post"),),
    # ------------------------------------------------------------------ benchmark pages
    "benchmark:project_list": (
        Case("project list", lambda w: {}, Access.LOGGED_IN),
        Case("project list fragment", lambda w: {}, Access.LOGGED_IN, headers=HX_MAIN),
    ),
    "benchmark:project_detail": (
        Case("ATP project", lambda w: {"project_id": w.project.pk}, "view"),
        Case("trajectory project", lambda w: {"project_id": w.tproject.pk}, "view"),
        Case("plan project", lambda w: {"project_id": w.pproject.pk}, "view"),
        Case("other project", lambda w: {"project_id": w.other_project.pk}, Access.OTHER),
    ),
    "benchmark:item_detail": (
        # Lists the answer under human evaluation: its model for reviewers, not its raters.
        Case(
            "ATP item",
            lambda w: {"project_id": w.project.pk, "item_id": w.item.pk},
            "view",
            shows={"reviewer": (SECRET_MODEL,), "admin": (SECRET_MODEL,)},
        ),
        Case(
            "blind item",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk},
            "view",
            shows={"annotator": (SECRET_ANSWER, SECRET_VARIANT, SECRET_REFERENCE)},
        ),
        Case(
            "blind item fragment",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk},
            "view",
            headers=HX_MAIN,
        ),
        Case(
            "other project's item",
            lambda w: {"project_id": w.other_project.pk, "item_id": w.other_item.pk},
            Access.OTHER,
        ),
    ),
    "benchmark:item_restore": (
        Case(
            "restore a discarded item (this one is not: 409)",
            lambda w: {"project_id": w.project.pk, "item_id": w.item.pk},
            "set_status",
            method="post",
            data={"reason": "route matrix"},
        ),
    ),
    "benchmark:saved_filters": (
        Case("saved filters", lambda w: {"project_id": w.project.pk}, "view"),
        Case(
            "save a filter, empty form (re-rendered)",
            lambda w: {"project_id": w.project.pk},
            "view",
            method="post",
        ),
        Case(
            "save a filter",
            lambda w: {"project_id": w.project.pk},
            "view",
            method="post",
            data={"name": "mine", "query": "status=verified"},
        ),
        Case("other project", lambda w: {"project_id": w.other_project.pk}, Access.OTHER),
    ),
    "benchmark:saved_filter_delete": (
        Case(
            "delete a saved filter someone else saved",
            lambda w: {"project_id": w.project.pk, "pk": w.saved_filter.pk},
            "manage",
            method="post",
        ),
    ),
    "benchmark:item_new": (
        Case("new ATP item form", lambda w: {"project_id": w.project.pk}, "view"),
        Case("new trajectory item form", lambda w: {"project_id": w.tproject.pk}, "view"),
        Case(
            "create an item, empty form (re-rendered)",
            lambda w: {"project_id": w.project.pk},
            "view",
            method="post",
        ),
        Case("other project", lambda w: {"project_id": w.other_project.pk}, Access.OTHER),
    ),
    "benchmark:item_edit": (
        Case(
            "edit ATP item",
            lambda w: {"project_id": w.project.pk, "item_id": w.item.pk},
            "view",
        ),
        Case(
            "edit the blind item",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk},
            "view",
            # Both annotators verify it: a verifier may not change what they verify.
            expect=_VERIFIERS_MAY_NOT_EDIT,
        ),
        Case(
            "save ATP item, empty form (re-rendered)",
            lambda w: {"project_id": w.project.pk, "item_id": w.item.pk},
            "view",
            method="post",
        ),
        Case(
            "save the blind item, empty form",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk},
            "view",
            method="post",
            expect=_VERIFIERS_MAY_NOT_EDIT,
        ),
        Case(
            "other project's item",
            lambda w: {"project_id": w.other_project.pk, "item_id": w.other_item.pk},
            Access.OTHER,
        ),
    ),
    "benchmark:item_history": (
        Case(
            "ATP item history (with the model answer's versions)",
            lambda w: {"project_id": w.project.pk, "item_id": w.item.pk},
            "view",
            shows={"reviewer": (SECRET_MODEL,)},
        ),
        Case(
            "blind item history",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk},
            "view",
            blind=Expect.FORBIDDEN,
        ),
        Case(
            "other project's item",
            lambda w: {"project_id": w.other_project.pk, "item_id": w.other_item.pk},
            Access.OTHER,
        ),
    ),
    "benchmark:item_revert": (
        Case(
            "revert ATP item to version 1 (it is version 1: 400)",
            lambda w: {"project_id": w.project.pk, "item_id": w.item.pk, "number": 1},
            "view",
            method="post",
        ),
        Case(
            "revert the blind item",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk, "number": 1},
            "view",
            method="post",
            expect=_VERIFIERS_MAY_NOT_EDIT,
        ),
    ),
    "benchmark:project_import": (
        Case("import page", lambda w: {"project_id": w.project.pk}, "import"),
        Case("import, no file", lambda w: {"project_id": w.project.pk}, "import", method="post"),
    ),
    "benchmark:project_export": (
        Case("export ATP", lambda w: {"project_id": w.project.pk}, "export"),
        Case("export trajectories", lambda w: {"project_id": w.tproject.pk}, "export"),
    ),
    "benchmark:job_detail": (
        *_job_cases(lambda w, job: {"pk": job.pk}, page="job page"),
        Case(
            "job page: polled fragment",
            lambda w: {"pk": w.jobs.ask.pk},
            "view",
            headers={"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "job-1"},
        ),
    ),
    "benchmark:job_cancel": (
        # Every job of the world has ended (409) except the other project's queued import.
        Case(
            "cancel a finished model call (started by the annotator)",
            lambda w: {"pk": w.jobs.ask.pk},
            "view",
            method="post",
            blind=Expect.FORBIDDEN,  # sees the job, did not start it, does not review
        ),
        Case(
            "cancel an import job",
            lambda w: {"pk": w.jobs.imported.pk},
            "import",
            method="post",
            refusal=Expect.REFUSED,
        ),
        Case(
            "cancel an answer scoring job",
            lambda w: {"pk": w.jobs.answer_scoring.pk},
            "watch_jobs",
            method="post",
            refusal=Expect.REFUSED,
        ),
        Case(
            "cancel the author's drafting call",
            lambda w: {"pk": w.jobs.drafting.pk},
            "watch_jobs",
            method="post",
            refusal=Expect.REFUSED,
        ),
        Case(
            "cancel another project's queued job",
            lambda w: {"pk": w.jobs.other.pk},
            Access.OTHER,
            method="post",
        ),
    ),
    "benchmark:job_retry": (
        Case(
            "retry a failed model call",
            lambda w: {"pk": w.jobs.failed_ask.pk},
            "view",
            method="post",
        ),
        Case(
            "retry an import job",
            lambda w: {"pk": w.jobs.imported.pk},
            "import",
            method="post",
            refusal=Expect.REFUSED,
        ),
        Case(
            "retry the author's drafting call",
            lambda w: {"pk": w.jobs.drafting.pk},
            "view",
            method="post",
            blind=Expect.REFUSED,
        ),
    ),
    "benchmark:item_model": (
        Case(
            "ask the model, ATP item",
            lambda w: {"project_id": w.project.pk, "item_id": w.item.pk},
            "view",
        ),
        Case(
            "ask the model, no prompt",
            lambda w: {"project_id": w.project.pk, "item_id": w.item.pk},
            "view",
            method="post",
        ),
        Case(
            "ask the model, blind item (lists the item's model calls)",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk},
            "view",
            blind=Expect.SAFE,
            shows={"annotator": (SECRET_DRAFTING,)},
        ),
        Case(
            "ask the model, blind item, no prompt",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk},
            "view",
            method="post",
            blind=Expect.SAFE,
        ),
    ),
    # ------------------------------------------------------------------ projects and people
    "benchmark:project_create": (
        # Staff and admins of some project (the outsider is admin of another project).
        Case("new project page", lambda w: {}, Access.LOGGED_IN, expect=NOT_PROJECT_ADMINS),
        Case(
            "new project, invalid",
            lambda w: {},
            Access.LOGGED_IN,
            method="post",
            data={"name": "", "data_format": "atp"},
            expect=NOT_PROJECT_ADMINS,
        ),
    ),
    "benchmark:project_edit": (
        Case("edit page", lambda w: {"project_id": w.project.pk}, "manage"),
        Case(
            "edit guidelines",
            lambda w: {"project_id": w.project.pk},
            "manage",
            method="post",
            data={"description": "", "guidelines": "Read the *whole* document."},
        ),
        Case(
            "edit model settings",
            lambda w: {"project_id": w.project.pk},
            "manage",
            method="post",
            data={"section": "model", "model-model": "local-model", "model-cache": "use"},
        ),
        Case(
            "other project's edit page", lambda w: {"project_id": w.other_project.pk}, Access.OTHER
        ),
    ),
    "benchmark:project_first_run_dismiss": (
        Case(
            "dismiss the first-run checklist",
            lambda w: {"project_id": w.project.pk},
            "manage",
            method="post",
        ),
        Case(
            "other project's first-run checklist",
            lambda w: {"project_id": w.other_project.pk},
            Access.OTHER,
            method="post",
        ),
    ),
    "benchmark:members": (
        Case("members page", lambda w: {"project_id": w.project.pk}, "manage"),
        Case(
            "members page fragment",
            lambda w: {"project_id": w.project.pk},
            "manage",
            headers=HX_MAIN,
        ),
        Case(
            "add a member, unknown user",
            lambda w: {"project_id": w.project.pk},
            "manage",
            method="post",
            data={"username": "nobody-at-all", "role": "annotator"},
        ),
        Case("other project's members", lambda w: {"project_id": w.other_project.pk}, Access.OTHER),
    ),
    "benchmark:member_role": (
        Case(
            "change a role (to the same)",
            lambda w: {"project_id": w.project.pk, "membership_id": w.annotator_membership.pk},
            "manage",
            method="post",
            data={"role": "annotator"},
        ),
    ),
    "benchmark:member_remove": (
        Case(
            "remove a member",
            lambda w: {"project_id": w.project.pk, "membership_id": w.annotator_membership.pk},
            "manage",
            method="post",
        ),
    ),
    "benchmark:invitation_create": (
        Case(
            "make an invitation link",
            lambda w: {"project_id": w.project.pk},
            "manage",
            method="post",
            data={"role": "annotator", "days": "7"},
        ),
    ),
    "benchmark:invitation_revoke": (
        Case(
            "revoke an invitation link",
            lambda w: {"project_id": w.project.pk, "invitation_id": w.invitation.pk},
            "manage",
            method="post",
        ),
    ),
    "benchmark:invitation_open": (
        Case("an open invitation link", lambda w: {"token": w.invitation_token}, Access.PUBLIC),
    ),
    "benchmark:people": (
        Case("people page (staff only)", lambda w: {}, Access.LOGGED_IN, expect=STAFF_ONLY),
        Case(
            "create an account (staff only)",
            lambda w: {},
            Access.LOGGED_IN,
            method="post",
            data={"username": "matrix-new"},
            expect=STAFF_ONLY,
        ),
    ),
    "benchmark:user_password_link": (
        Case(
            "password link (staff only)",
            lambda w: {"user_id": w.users["annotator"].pk},
            Access.LOGGED_IN,
            method="post",
            expect=STAFF_ONLY,
        ),
    ),
    "benchmark:user_active": (
        Case(
            "deactivate (staff only)",
            lambda w: {"user_id": w.users["annotator"].pk},
            Access.LOGGED_IN,
            method="post",
            data={"active": "0"},
            expect=STAFF_ONLY,
        ),
    ),
    "benchmark:password_link_open": (
        Case("a valid password link", lambda w: w.password_link, Access.PUBLIC),
        # Not valid (here: a made-up token for the annotator): one page for every such link,
        # whatever account it names (issue 22, item 2).
        Case(
            "a password link that is not valid",
            lambda w: {**w.password_link, "token": "aaaa-bbbbbbbb"},
            Access.PUBLIC,
            expect={role: 410 for role in ROLES},
        ),
    ),
    # API tokens: each user's own (issue 22, item 13); another user's token is a 404.
    "benchmark:api_tokens": (
        Case("your API tokens", lambda w: {}, Access.LOGGED_IN),
        Case(
            "make an API token",
            lambda w: {},
            Access.LOGGED_IN,
            method="post",
            data={"name": "matrix token"},
        ),
    ),
    "benchmark:api_token_revoke": (
        Case(
            "revoke the admin's API token",
            lambda w: {"token_id": w.api_token.pk},
            Access.LOGGED_IN,
            method="post",
            expect={role: Expect.HIDDEN for role in ROLES if role not in ("admin", "anonymous")},
        ),
    ),
    # ------------------------------------------------------------------ unsaved input
    # Each member keeps a draft of the ATP item's edit form (the world's); reading it needs
    # the item form, keeping one the form's object: a user reads and writes only their own.
    "benchmark:input_draft": (
        Case("read my draft of the item form", lambda w: {"key": _item_draft_key(w)}, "edit"),
        Case(
            "keep a draft of the tag editor",
            lambda w: {"key": _tag_draft_key(w)},
            "edit",
            method="post",
            data={"version": "2", "payload": [["text", "typed"], ["note", "why"]]},
            json=True,
        ),
        Case(
            "keep a draft of the blind item's trajectory",
            lambda w: {
                "key": f"trajectory:project:{w.tproject.pk}:item:{w.titem.pk}",
            },
            "edit",
            method="post",
            data={"version": "1", "payload": [["task-question", "typed"]]},
            json=True,
            # Both annotators verify it: a verifier may not change what they verify.
            expect=_VERIFIERS_MAY_NOT_EDIT,
            blind=Expect.REFUSED,
        ),
        Case(
            "keep a draft of a rating (human evaluation)",
            lambda w: {"key": f"human-eval:task:{w.htask.pk}:unit:{w.hunit}"},
            "view",
            method="post",
            data={"version": "", "payload": [["comment", "typed"]]},
            json=True,
            # Only the leaseholder (the annotator) rates it.
            expect={
                "admin": Expect.FORBIDDEN,
                "reviewer": Expect.FORBIDDEN,
                "blind_verifier": Expect.FORBIDDEN,
            },
        ),
        Case(
            "discard a draft of an adjudication",
            lambda w: {"key": f"adjudication:task:{w.task.pk}:item:{w.item.pk}"},
            "adjudicate",
            method="delete",
        ),
    ),
    "benchmark:toolset": (
        Case("toolset page", lambda w: {"project_id": w.project.pk}, "view"),
        Case(
            "toolset edit, invalid",
            lambda w: {"project_id": w.project.pk},
            "manage",
            method="post",
        ),
    ),
    "benchmark:images": (
        Case("images page", lambda w: {"project_id": w.project.pk}, "view"),
        Case(
            "image upload, no file",
            lambda w: {"project_id": w.project.pk},
            "view",
            method="post",
        ),
    ),
    "benchmark:image_preview": (
        Case("preview, no recipe", lambda w: {"project_id": w.project.pk}, "view", method="post"),
    ),
    "benchmark:image_derive": (
        Case("derive, no recipe", lambda w: {"project_id": w.project.pk}, "view", method="post"),
    ),
    "benchmark:image_edit": (
        Case(
            "image editor",
            lambda w: {"project_id": w.project.pk, "sha256": w.image.sha256},
            "view",
        ),
        Case(
            "image editor save, no recipe",
            lambda w: {"project_id": w.project.pk, "sha256": w.image.sha256},
            "view",
            method="post",
        ),
    ),
    "benchmark:image": (
        Case("image file", lambda w: {"sha256": w.image.sha256}, "view"),
        Case("other project's image", lambda w: {"sha256": w.other_image.sha256}, Access.OTHER),
    ),
    "benchmark:image_thumb": (Case("thumbnail", lambda w: {"sha256": w.image.sha256}, "view"),),
    "benchmark:audio": (
        Case("audio file", lambda w: {"sha256": w.audio.sha256}, "view"),
        Case("other project's audio", lambda w: {"sha256": w.other_audio.sha256}, Access.OTHER),
    ),
    "benchmark:audio_attach": (
        Case(
            "attach audio, no file",
            lambda w: {"project_id": w.project.pk, "item_id": w.item.pk},
            "edit",
            method="post",
        ),
    ),
    # ------------------------------------------------------------------ judging
    "annotation:task_list": (
        Case("judging, ATP project", lambda w: {"project_id": w.project.pk}, "view"),
        Case("judging, trajectory project", lambda w: {"project_id": w.tproject.pk}, "view"),
    ),
    "annotation:task_new": (
        Case("new task form", lambda w: {"project_id": w.project.pk}, "manage"),
        Case("new task, empty", lambda w: {"project_id": w.project.pk}, "manage", method="post"),
    ),
    "annotation:bulk_action": (
        # An empty bar re-renders the item list with its message, for every member.
        Case(
            "bulk bar, nothing chosen",
            lambda w: {"project_id": w.project.pk},
            "view",
            method="post",
        ),
        Case(
            "set status of the selection",
            lambda w: {"project_id": w.project.pk},
            "set_status",
            method="post",
            data=lambda w: {"action": "status", "status": "in_review", "ids": [w.item.pk]},
        ),
        Case(
            "export the selection",
            lambda w: {"project_id": w.project.pk},
            "set_status",
            method="post",
            data=lambda w: {"action": "export", "ids": [w.item.pk]},
        ),
    ),  # fmt: skip
    "annotation:task_defaults": (
        Case("default tasks", lambda w: {"project_id": w.project.pk}, "manage", method="post"),
    ),
    "annotation:task_edit": (
        Case("edit task form", lambda w: {"project_id": w.project.pk, "pk": w.task.pk}, "manage"),
        Case(
            "edit task, empty",
            lambda w: {"project_id": w.project.pk, "pk": w.task.pk},
            "manage",
            method="post",
        ),
    ),
    "annotation:task_next": (
        Case("next item", lambda w: {"pk": w.task.pk}, "view", method="post"),
        Case("next item to solve blind", lambda w: {"pk": w.vtask.pk}, "view", method="post"),
    ),
    "annotation:task_next_ahead": (
        # Lease the item after the one judged now (held hidden by the judge page): without a
        # live lease of ``after`` nothing is leased (400); a blind task answers nothing.
        Case(
            "lease ahead",
            lambda w: {"pk": w.task.pk},
            "view",
            method="post",
            query=lambda w: f"?after={w.item.pk}",
        ),
        Case(
            "lease ahead, blind task (none)",
            lambda w: {"pk": w.vtask.pk},
            "view",
            method="post",
            query=lambda w: f"?after={w.titem.pk}",
        ),
    ),
    "annotation:task_next_ahead_release": (
        # The judge page left: the leases of the items it held ahead end (only the user's own).
        Case(
            "give back the items held ahead",
            lambda w: {"pk": w.task.pk},
            "view",
            method="post",
            data=lambda w: {"held": [str(w.item.pk)]},
        ),
    ),
    "annotation:task_next_images": (
        # The likely next item's thumbnails to prefetch: read-only, nothing leased.
        Case(
            "next item's images",
            lambda w: {"pk": w.task.pk},
            "view",
            query=lambda w: f"?after={w.item.pk}",
        ),
        Case(
            "next blind item's images (none)",
            lambda w: {"pk": w.vtask.pk},
            "view",
            query=lambda w: f"?after={w.titem.pk}",
        ),
    ),
    "annotation:judge": (
        # Annotators reach the judge page through a lease; reviewers may look at any item.
        Case(
            "judge page, not leased",
            lambda w: {"pk": w.task.pk, "item_id": w.item.pk},
            "adjudicate",
        ),
        Case(
            "judge, not leased, empty",
            lambda w: {"pk": w.task.pk, "item_id": w.item.pk},
            "adjudicate",
            method="post",
        ),
        Case(
            "solve screen",
            lambda w: {"pk": w.vtask.pk, "item_id": w.titem.pk},
            "view",
            shows={"annotator": (SECRET_OTHER_RATER,)},  # their own answer
        ),
        Case(
            "solve, empty answer",
            lambda w: {"pk": w.vtask.pk, "item_id": w.titem.pk},
            "view",
            method="post",
        ),
    ),
    "annotation:judge_unit": (
        # One unit of a "rate the judge" task: the annotator holds its lease; reviewers may
        # look at any unit; other annotators (here the blind verifier) hold no lease.
        Case(
            "rate a judge report, leased",
            lambda w: {"pk": w.utask.pk, "unit": w.unit},
            "view",
            expect={"blind_verifier": Expect.FORBIDDEN},
        ),
        Case(
            "rate a judge report, no rating",
            lambda w: {"pk": w.utask.pk, "unit": w.unit},
            "view",
            method="post",
            expect={"blind_verifier": Expect.FORBIDDEN},
        ),
        # One answer of a human evaluation, on its own page (review.human_eval).
        Case(
            "rate an answer (human evaluation), leased",
            lambda w: {"pk": w.htask.pk, "unit": w.hunit},
            "view",
            expect={"blind_verifier": Expect.FORBIDDEN},
        ),
        Case(
            # Only the leaseholder rates (400: no scores); reviewers may look, not rate.
            "rate an answer (human evaluation), no rating",
            lambda w: {"pk": w.htask.pk, "unit": w.hunit},
            "view",
            method="post",
            expect={
                "annotator": 400,
                "blind_verifier": Expect.FORBIDDEN,
                "reviewer": Expect.FORBIDDEN,
                "admin": Expect.FORBIDDEN,
            },
        ),
    ),
    "annotation:verification_audit": (
        # The audit opens once you have answered (reviewers see everyone's).
        Case(
            "audit checklist",
            lambda w: {"pk": w.vtask.pk, "item_id": w.titem.pk},
            "view",
            blind=Expect.REFUSED,
            shows={"annotator": (SECRET_ANSWER, SECRET_REFERENCE)},
        ),
        Case(
            "audit save, stale",
            lambda w: {"pk": w.vtask.pk, "item_id": w.titem.pk},
            "view",
            method="post",
            # Only the item's verifiers audit it; the annotator's audit is at version 1.
            expect={"admin": Expect.FORBIDDEN, "reviewer": Expect.FORBIDDEN, "annotator": 409},
            blind=Expect.REFUSED,
        ),
    ),
    "annotation:verification_audits": (
        Case("audits overview", lambda w: {"pk": w.vtask.pk}, "adjudicate"),
    ),
    # ------------------------------------------------------------------ tag review
    "annotation:tag_review": (
        Case(
            "tag review",
            lambda w: {
                "project_id": w.project.pk,
                "item_id": w.item.pk,
                "response_id": w.response.pk,
            },
            "view",
        ),
        Case(
            "tag review, keep a call",
            lambda w: {
                "project_id": w.project.pk,
                "item_id": w.item.pk,
                "response_id": w.response.pk,
            },
            "view",
            method="post",
            data={"base": "2", "op": "keep:0"},
        ),
        Case(
            "tag review of the answer under human evaluation",
            lambda w: {
                "project_id": w.project.pk,
                "item_id": w.item.pk,
                "response_id": w.model_answer.pk,
            },
            "view",
            shows={"reviewer": (SECRET_MODEL,)},
        ),
    ),
    "annotation:tag_discard": (
        Case(
            "discard the sample",
            lambda w: {
                "project_id": w.project.pk,
                "item_id": w.item.pk,
                "response_id": w.response.pk,
            },
            # Reviewers discard; an annotator's post becomes a proposal a reviewer decides
            # (tests/annotation/test_discarding.py checks that it discards nothing).
            "view",
            method="post",
            data={"reason": "other", "detail": "route matrix"},
        ),
    ),
    "annotation:tag_versions": (
        Case(
            "tag versions",
            lambda w: {
                "project_id": w.project.pk,
                "item_id": w.item.pk,
                "response_id": w.response.pk,
            },
            "view",
        ),
    ),
    "annotation:tag_version": (
        Case(
            "tag version 1",
            lambda w: {
                "project_id": w.project.pk,
                "item_id": w.item.pk,
                "response_id": w.response.pk,
                "number": 1,
            },
            "view",
        ),
    ),
    "annotation:tag_version_revert": (
        Case(
            "revert to version 1",
            lambda w: {
                "project_id": w.project.pk,
                "item_id": w.item.pk,
                "response_id": w.response.pk,
                "number": 1,
            },
            "view",
            method="post",
            data={"base": "2"},
        ),
    ),
    "annotation:tag_stats": (
        Case("tag decisions per tool", lambda w: {"project_id": w.project.pk}, "view"),
    ),
    # ------------------------------------------------------------------ backward drafting
    # It shows the item's reference: refused to a blind verifier who has not answered yet.
    "annotation:drafting_list": (
        Case(
            "drafting sessions",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk},
            "view",
            blind=Expect.REFUSED,
        ),
        Case(
            "drafting start, no model",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk},
            "view",
            method="post",
            blind=Expect.REFUSED,
        ),
    ),
    "annotation:drafting_session": (
        Case(
            "drafting session",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk, "pk": w.session.pk},
            "view",
            blind=Expect.REFUSED,
            shows={"annotator": (SECRET_DRAFTING, SECRET_CROP_TRUTH)},
        ),
    ),
    "annotation:drafting_describe": (
        Case(
            "describe, empty",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk, "pk": w.session.pk},
            "view",
            method="post",
            blind=Expect.REFUSED,
        ),
    ),
    "annotation:drafting_crop": (
        Case(
            "crop, empty",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk, "pk": w.session.pk},
            "view",
            method="post",
            blind=Expect.REFUSED,
        ),
    ),
    "annotation:drafting_mark": (
        Case(
            "mark, empty",
            lambda w: {
                "project_id": w.tproject.pk,
                "item_id": w.titem.pk,
                "pk": w.session.pk,
                "call": w.drafting_call.pk,
            },
            "view",
            method="post",
            blind=Expect.REFUSED,
        ),
    ),
    "annotation:drafting_draft": (
        Case(
            "draft, empty",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk, "pk": w.session.pk},
            "view",
            method="post",
            blind=Expect.REFUSED,
        ),
        Case(
            "draft a new question and answer",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk, "pk": w.session.pk},
            "view",
            method="post",
            data=lambda w: w.drafting_draft,
            # The same rule as the trajectory editor's: a verifier may not rewrite the answer
            # of the item they verify (here they would even become its author).
            expect={"annotator": Expect.REFUSED},
            blind=Expect.REFUSED,
        ),
    ),
    # ------------------------------------------------------------------ model drafting
    "annotation:model_drafts": (
        Case("model drafts and figures", lambda w: {"project_id": w.project.pk}, "view"),
        Case(
            "model drafts of the trajectory project",
            lambda w: {"project_id": w.tproject.pk},
            "view",
        ),
    ),
    "annotation:model_draft_queries": (
        Case("draft queries form", lambda w: {"project_id": w.project.pk}, "view"),
        Case(
            "draft queries, empty",
            lambda w: {"project_id": w.project.pk},
            "view",
            method="post",
        ),
    ),
    "annotation:model_draft_detail": (
        Case(
            "drafted queries",
            lambda w: {"project_id": w.project.pk, "pk": w.model_draft.pk},
            "view",
        ),
        # A drafted answer of the blind item gives its answer away.
        Case(
            "drafted answer of the blind item",
            lambda w: {"project_id": w.tproject.pk, "pk": w.blind_draft.pk},
            "view",
            blind=Expect.HIDDEN,
            shows={"annotator": (SECRET_ANSWER,)},
        ),
    ),
    "annotation:model_draft_decide": (
        Case(
            "decide, empty",
            lambda w: {
                "project_id": w.project.pk,
                "pk": w.model_draft.pk,
                "candidate": w.model_candidate.pk,
            },
            "view",
            method="post",
        ),
        Case(
            "decide on the blind item's drafted answer, empty",
            lambda w: {
                "project_id": w.tproject.pk,
                "pk": w.blind_draft.pk,
                "candidate": w.blind_candidate.pk,
            },
            "view",
            method="post",
            blind=Expect.HIDDEN,
        ),
    ),
    "annotation:model_draft_item": (
        Case(
            "draft an answer",
            lambda w: {"project_id": w.project.pk, "item_id": w.item.pk, "kind": "answer"},
            "view",
        ),
        Case(
            "draft an answer, no model",
            lambda w: {"project_id": w.project.pk, "item_id": w.item.pk, "kind": "answer"},
            "view",
            method="post",
        ),
    ),
    # ------------------------------------------------------------------ reference trajectory
    "annotation:trajectory_edit": (
        Case(
            "trajectory editor",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk},
            "view",
            blind=Expect.REFUSED,
            shows={"annotator": (SECRET_ANSWER, SECRET_VARIANT, SECRET_REFERENCE)},
        ),
        Case(
            "trajectory editor, re-check",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk},
            "view",
            method="post",
            data={"op": "refresh"},
            blind=Expect.REFUSED,
        ),
        Case(
            "trajectory editor, save a new expected answer",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk},
            "view",
            method="post",
            data=lambda w: w.trajectory_save,
            # A verifier of an item under verification may not edit what they verify: the
            # annotator has answered (and may see the reference) but is still a verifier.
            expect={"annotator": Expect.REFUSED},
            blind=Expect.REFUSED,
        ),
    ),
    "annotation:trajectory_versions": (
        Case(
            "trajectory history",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk},
            "view",
            blind=Expect.REFUSED,
        ),
    ),
    "annotation:trajectory_version": (
        Case(
            "trajectory version 1",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk, "number": 1},
            "view",
            blind=Expect.REFUSED,
        ),
    ),
    "annotation:trajectory_version_revert": (
        Case(
            "revert to version 1 (changes the reference)",
            lambda w: {"project_id": w.tproject.pk, "item_id": w.titem.pk, "number": 1},
            "view",
            method="post",
            data={"base": "2"},
            expect={"annotator": Expect.REFUSED},
            blind=Expect.REFUSED,
        ),
    ),
    # ------------------------------------------------------------------ plan editor (m&m's)
    "annotation:plan_edit": (
        Case("plan editor", lambda w: _plan_kwargs(w), "view"),
        Case(
            "plan editor, an alternative",
            lambda w: _plan_kwargs(w),
            "view",
            query=lambda w: "?key=alt:0",
        ),
        Case(
            "plan editor, save a changed plan",
            lambda w: _plan_kwargs(w),
            "view",
            method="post",
            data={"steps": json.dumps(PLAN_EDITED), "base_number": "1", "key": "gold"},
        ),
        Case(
            "plan editor, save bad JSON",
            lambda w: _plan_kwargs(w),
            "view",
            method="post",
            data={"steps": "[{", "base_number": "1"},
        ),
    ),
    "annotation:plan_findings": (
        Case(
            "plan editor's live findings",
            lambda w: _plan_kwargs(w),
            "view",
            method="post",
            data={"steps": json.dumps(PLAN_EDITED)},
        ),
    ),
    "annotation:plan_alternative_add": (
        Case("add an alternative plan", lambda w: _plan_kwargs(w), "view", method="post"),
    ),
    "annotation:plan_alternative_remove": (
        Case(
            "remove an alternative plan",
            lambda w: _plan_kwargs(w),
            "view",
            method="post",
            data={"key": "alt:0"},
        ),
    ),
    "annotation:plan_versions": (Case("plan history", lambda w: _plan_kwargs(w), "view"),),
    "annotation:plan_version": (
        Case("plan version 1", lambda w: {**_plan_kwargs(w), "number": 1}, "view"),
    ),
    "annotation:plan_version_revert": (
        Case(
            "revert the plan to version 1 (nothing to revert yet: 400)",
            lambda w: {**_plan_kwargs(w), "number": 1},
            "view",
            method="post",
            data={"base": "1"},
        ),
    ),
    # ------------------------------------------------------------------ review
    "review:discard_proposals": (
        Case("discard proposals", lambda w: {"project_id": w.project.pk}, "adjudicate"),
    ),
    "review:discard_proposal_decide": (
        Case(
            "decide a discard proposal, no decision",
            lambda w: {"project_id": w.project.pk, "pk": w.proposal.pk},
            "adjudicate",
            method="post",
        ),
    ),
    "review:dispute_list": (
        Case("disputes", lambda w: {"pk": w.task.pk}, "adjudicate"),
        Case("joint review queue", lambda w: {"pk": w.vtask.pk}, "adjudicate"),
    ),
    "review:adjudicate": (
        Case("adjudicate", lambda w: {"pk": w.task.pk, "item_id": w.item.pk}, "adjudicate"),
        Case(
            "adjudicate: discard",
            lambda w: {"pk": w.task.pk, "item_id": w.item.pk},
            "adjudicate",
            method="post",
            data={"verdict": "discarded", "reason": "route matrix"},
        ),
        Case(
            "joint review",
            lambda w: {"pk": w.vtask.pk, "item_id": w.titem.pk},
            "adjudicate",
            shows={"reviewer": (SECRET_ANSWER, SECRET_OTHER_RATER)},
        ),
        Case(
            "joint review: discard",
            lambda w: {"pk": w.vtask.pk, "item_id": w.titem.pk},
            "adjudicate",
            method="post",
            data={"verdict": "discarded", "reason": "route matrix"},
        ),
    ),
    "review:agreement": (
        Case("agreement", lambda w: {"pk": w.task.pk}, "manage_studies"),
        Case("agreement, recompute", lambda w: {"pk": w.task.pk}, "manage_studies", method="post"),
    ),
    "annotation:doubt_recompute": (
        Case("recompute doubt", lambda w: {"pk": w.task.pk}, "manage_studies", method="post"),
    ),
    "review:agreement_pair": (
        Case(
            "agreement: one pair's confusion",
            lambda w: {"pk": w.pair_task.pk},
            "manage_studies",
            query=lambda w: (
                f"?a={w.users['author'].username}&b={w.users['blind_verifier'].username}"
            ),
            headers={"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "pair-confusion"},
        ),
    ),
    "review:judge_examples_add": (
        Case(
            "add correction cases as worked examples",
            lambda w: {"pk": w.task.pk},
            "run_judges",
            method="post",
            data={"key": "judge-run:0", "units": ["1"]},
        ),
    ),
    "review:example_set": (
        Case("worked examples: one set", lambda w: {"pk": w.example_set.pk}, "manage_studies"),
    ),
    "review:held_back_start": (
        Case(
            "worked examples: start the held-back comparison",
            lambda w: {"pk": w.example_set.pk},
            "run_judges",
            method="post",
        ),
    ),
    "review:report_cases": (
        Case("correct the judge's reports", lambda w: {"pk": w.utask.pk}, "run_judges"),
    ),
    "review:report_correct": (
        Case(
            "correct one report of the judge",
            lambda w: {"pk": w.utask.pk},
            "run_judges",
            method="post",
            data=lambda w: {"unit": w.unit, "text": '{"score": 30, "tier": "Poor", "why": ""}'},
        ),
    ),
    "review:report_examples_add": (
        Case(
            "add corrected reports as worked examples",
            lambda w: {"pk": w.utask.pk},
            "run_judges",
            method="post",
            data=lambda w: {"units": [w.unit]},
        ),
    ),
    "review:judgments_export": (
        Case("judgments csv", lambda w: {"pk": w.task.pk, "fmt": "csv"}, "manage_studies"),
        Case("blind answers jsonl", lambda w: {"pk": w.vtask.pk, "fmt": "jsonl"}, "manage_studies"),
    ),
    "review:rate_judge_new": (
        Case(
            "rate the judge: choose a run", lambda w: {"project_id": w.project.pk}, "manage_studies"
        ),
        Case(
            "rate the judge: a run's agents",
            lambda w: {"project_id": w.project.pk},
            "manage_studies",
            query=lambda w: f"?run={w.judge_run.pk}",
        ),
        Case(
            "rate the judge, no agents",
            lambda w: {"project_id": w.project.pk},
            "manage_studies",
            method="post",
            data=lambda w: {"run": w.judge_run.pk},
        ),
    ),
    "review:criterion_task_new": (
        Case("score criteria form", lambda w: {"project_id": w.project.pk}, "manage_studies"),
        Case(
            "score criteria, no answers",
            lambda w: {"project_id": w.project.pk},
            "manage_studies",
            method="post",
        ),
    ),
    "review:human_eval_new": (
        Case("human evaluation form", lambda w: {"project_id": w.project.pk}, "manage_studies"),
        Case(
            "human evaluation, no models",
            lambda w: {"project_id": w.project.pk},
            "manage_studies",
            method="post",
        ),
    ),
    "review:human_eval_results": (
        Case("human evaluation results", lambda w: {"pk": w.htask.pk}, "manage_studies"),
        Case(
            "human evaluation results against a judge run",
            lambda w: {"pk": w.htask.pk},
            "manage_studies",
            query=lambda w: f"?run={w.judge_run.pk}",
        ),
    ),
    "review:human_eval_export": (
        Case("human ratings csv", lambda w: {"pk": w.htask.pk, "fmt": "csv"}, "manage_studies"),
        Case("human ratings jsonl", lambda w: {"pk": w.htask.pk, "fmt": "jsonl"}, "manage_studies"),
    ),
    # Gold items of a task (issue 26): reviewers only; an annotator may not even learn which
    # items are gold.
    "review:gold": (
        Case("gold items page", lambda w: {"pk": w.task.pk}, "adjudicate"),
        Case("gold units page", lambda w: {"pk": w.utask.pk}, "adjudicate"),
    ),
    "review:gold_mark": (
        Case(
            "mark an item gold",
            lambda w: {"pk": w.task.pk},
            "adjudicate",
            method="post",
            data=lambda w: {"item": w.item.external_id, "value": "1"},
        ),
        Case(
            "mark a unit gold",
            lambda w: {"pk": w.utask.pk},
            "adjudicate",
            method="post",
            data=lambda w: {"item": w.item.external_id, "unit": w.unit, "value": "1"},
        ),
    ),
    "review:gold_unmark": (
        Case(
            "unmark a gold item",
            lambda w: {"pk": w.task.pk, "item_id": w.item.pk},
            "adjudicate",
            method="post",
        ),
        Case(
            "unmark a gold unit",
            lambda w: {"pk": w.utask.pk, "item_id": w.item.pk},
            "adjudicate",
            method="post",
            data=lambda w: {"unit": w.unit},
        ),
    ),
    "review:gold_pause": (
        Case(
            "pause an annotator's queue",
            lambda w: {"pk": w.task.pk, "user_id": w.users["annotator"].pk},
            "adjudicate",
            method="post",
        ),
    ),
    "review:gold_resume": (
        Case(
            "resume an annotator's queue",
            lambda w: {"pk": w.task.pk, "user_id": w.users["annotator"].pk},
            "adjudicate",
            method="post",
        ),
    ),
    "review:gold_send_back": (
        Case(
            "send an annotator's judgments back",
            lambda w: {"pk": w.task.pk, "user_id": w.users["author"].pk},
            "adjudicate",
            method="post",
            data={"last": "5"},
        ),
    ),
    "review:team": (
        Case("team page", lambda w: {"project_id": w.project.pk}, "manage_studies"),
        Case(
            "team page, filtered (a bad task named)",
            lambda w: {"project_id": w.project.pk},
            "manage_studies",
            query=lambda w: "?days=7&task=nope",
        ),
    ),
    "review:release_list": (
        Case("releases", lambda w: {"project_id": w.project.pk}, "release"),
        Case(
            "new release (empty form)",
            lambda w: {"project_id": w.project.pk},
            "release",
            method="post",
        ),
    ),
    "review:release_detail": (
        Case("release", lambda w: {"project_id": w.project.pk, "pk": w.release.pk}, "release"),
    ),
    "review:release_verify": (
        Case(
            "verify release",
            lambda w: {"project_id": w.project.pk, "pk": w.release.pk},
            "release",
            method="post",
        ),
    ),
    "review:release_compare": (
        Case("compare releases (form)", lambda w: {"project_id": w.project.pk}, "release"),
        Case(
            "compare a release with itself",
            lambda w: {"project_id": w.project.pk},
            "release",
            query=lambda w: f"?old={w.release.pk}&new={w.release.pk}",
        ),
    ),
    "review:item_release_state": (
        Case(
            "item changed since release",
            lambda w: {"project_id": w.project.pk, "item_id": w.item.pk},
            "release",
        ),
    ),
    "review:release_download": (
        Case(
            "release zip",
            lambda w: {"project_id": w.project.pk, "pk": w.release.pk},
            "release",
        ),
    ),
    "review:balance": (
        Case("balanced subset", lambda w: {"project_id": w.pproject.pk}, "release"),
    ),
    "review:score_plans": (
        Case("score plans", lambda w: {"project_id": w.pproject.pk}, "score"),
        Case(
            "score plans, no file",
            lambda w: {"project_id": w.pproject.pk},
            "score",
            method="post",
        ),
    ),
    "review:score_answers": (
        Case("score answers", lambda w: {"project_id": w.project.pk}, "score"),
        Case(
            "score answers, no file",
            lambda w: {"project_id": w.project.pk},
            "score",
            method="post",
        ),
    ),
    "review:runs": (
        Case("agent runs", lambda w: {"project_id": w.tproject.pk}, "score"),
        Case(
            "agent runs, no file",
            lambda w: {"project_id": w.tproject.pk},
            "score",
            method="post",
        ),
    ),
    "review:run_set": (Case("run set results", lambda w: {"pk": w.run_set.pk}, "score"),),
    "review:run_set_rescore": (
        Case("rescore", lambda w: {"pk": w.run_set.pk}, "score", method="post"),
    ),
    "review:check_examples_add": (
        Case(
            "add an upload's correction cases as worked examples",
            lambda w: {"pk": w.run_set.pk},
            "run_judges",
            method="post",
            data={"key": "s-judge", "units": ["run:0:S1"]},
        ),
    ),
    "review:check_example_set": (
        Case(
            "worked examples of a check judge: one set",
            lambda w: {"pk": w.check_example_set.pk},
            "manage_studies",
        ),
    ),
    "review:check_held_back_start": (
        Case(
            "worked examples of a check judge: start the held-back comparison",
            lambda w: {"pk": w.check_example_set.pk},
            "run_judges",
            method="post",
        ),
    ),
    "review:run_detail": (Case("agent run", lambda w: {"pk": w.run.pk}, "score"),),
    "review:run_visual": (
        Case("visual check, empty", lambda w: {"pk": w.run.pk}, "score", method="post"),
    ),
    "review:run_search": (
        Case("search check, empty", lambda w: {"pk": w.run.pk}, "score", method="post"),
    ),
    "review:run_label": (
        Case("failure label, empty", lambda w: {"pk": w.run.pk}, "score", method="post"),
    ),
    "review:oracle": (
        Case("oracle testing", lambda w: {"project_id": w.tproject.pk}, "run_judges"),
        Case(
            "oracle testing fragment",
            lambda w: {"project_id": w.tproject.pk},
            "run_judges",
            headers=HX_MAIN,
        ),
        Case("oracle testing, ATP project", lambda w: {"project_id": w.project.pk}, "run_judges"),
        Case(
            "start an oracle test, no model configured",
            lambda w: {"project_id": w.tproject.pk},
            "run_judges",
            method="post",
        ),
    ),
    "review:oracle_run": (
        Case(
            "oracle run (the blind item failed)",
            lambda w: {"pk": w.oracle_run.pk},
            "run_judges",
            shows={"reviewer": (SECRET_VARIANT,)},
        ),
    ),
    "review:oracle_run_resume": (
        Case(
            "resume an oracle run", lambda w: {"pk": w.oracle_run.pk}, "run_judges", method="post"
        ),
    ),
    "review:oracle_result": (
        Case(
            "oracle test of the blind item",
            lambda w: {"pk": w.oracle_result.pk},
            "run_judges",
            shows={"reviewer": (SECRET_REFERENCE, SECRET_VARIANT)},
        ),
    ),
    "review:evaluation": (
        Case("evaluate a model", lambda w: {"project_id": w.project.pk}, "evaluate"),
        Case(
            "evaluate a model, empty form (400)",
            lambda w: {"project_id": w.project.pk},
            "evaluate",
            method="post",
        ),
    ),
    "review:leaderboard": (
        Case("leaderboard", lambda w: {"project_id": w.project.pk}, "evaluate"),
    ),
    "review:evaluation_pilot": (
        Case("pilot review lists", lambda w: {"project_id": w.project.pk}, "evaluate"),
        Case(
            "pilot review lists, propose discarding without a reason (the form again)",
            lambda w: {"project_id": w.project.pk},
            "evaluate",
            method="post",
            data=lambda w: {"action": "discard", "ids": [w.item.pk]},
        ),
    ),
    "review:evaluation_run": (Case("evaluation run", lambda w: {"pk": w.eval_run.pk}, "evaluate"),),
    "review:evaluation_run_resume": (
        Case(
            "resume an evaluation (nothing left: 409)",
            lambda w: {"pk": w.eval_run.pk},
            "evaluate",
            method="post",
        ),
    ),
    "review:evaluation_run_cancel": (
        Case("cancel an evaluation", lambda w: {"pk": w.eval_run.pk}, "evaluate", method="post"),
    ),
    "review:evaluation_run_judge": (
        Case(
            "judge an evaluation's outputs, empty form (400)",
            lambda w: {"pk": w.eval_run.pk},
            "evaluate",
            method="post",
        ),
    ),
    "review:evaluation_result": (
        Case(
            "an evaluated item's result",
            lambda w: {"pk": w.eval_run.pk, "item_id": w.item.pk},
            "evaluate",
        ),
    ),
    "review:evaluation_file": (
        Case(
            "a file an evaluation stored",
            lambda w: {"pk": w.eval_run.pk, "sha256": w.eval_file},
            "evaluate",
        ),
    ),
    "review:model_compare": (
        Case("compare two models", lambda w: {"project_id": w.project.pk}, "run_judges"),
        Case(
            "compare two models, nothing chosen (400)",
            lambda w: {"project_id": w.project.pk},
            "run_judges",
            method="post",
        ),
    ),
    "review:judge_runs": (
        Case("judge answers", lambda w: {"project_id": w.project.pk}, "run_judges"),
        Case("judge plans (m&m's)", lambda w: {"project_id": w.pproject.pk}, "run_judges"),
        Case(
            "judge plans, a judge for answers (400)",
            lambda w: {"project_id": w.pproject.pk},
            "run_judges",
            method="post",
            data={"judge": "llmi-rubric", "workers": "1"},
        ),
        Case(
            "judge answers, no judge",
            lambda w: {"project_id": w.project.pk},
            "run_judges",
            method="post",
        ),
    ),
    "review:judge_run": (
        Case(
            "judge run results",
            lambda w: {"pk": w.rubric_run.pk},
            "run_judges",
            shows={"reviewer": (REVIEWERS_ONLY,)},
        ),
        Case("plan judge run results", lambda w: {"pk": w.plan_run.pk}, "run_judges"),
        Case(
            "judge run answers fragment",
            lambda w: {"pk": w.rubric_run.pk},
            "run_judges",
            headers={"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "judge-answers"},
        ),
    ),
    "review:judge_run_resume": (
        Case(
            "resume a failed judge run",
            lambda w: {"pk": w.rubric_run.pk},
            "run_judges",
            method="post",
        ),
    ),
    "review:judge_compare": (
        Case("compare judge runs", lambda w: {"project_id": w.project.pk}, "run_judges"),
        Case(
            "compare a judge run with itself",
            lambda w: {"project_id": w.project.pk},
            "run_judges",
            query=lambda w: f"?a=run:{w.rubric_run.pk}&b=run:{w.rubric_run.pk}",
        ),
        Case(
            "compare a rubric run with people's scores of the criteria",
            lambda w: {"project_id": w.project.pk},
            "run_judges",
            query=lambda w: f"?a=run:{w.rubric_run.pk}&b=people:{w.ctask.pk}",
        ),
        Case(
            "compare two plan judge runs",
            lambda w: {"project_id": w.pproject.pk},
            "run_judges",
            query=lambda w: f"?a=run:{w.plan_run.pk}&b=run:{w.plan_run.pk}",
        ),
    ),
    "review:judge_settings": (
        Case("judge settings", lambda w: {"project_id": w.project.pk}, "run_judges"),
        Case(
            "judge settings fragment",
            lambda w: {"project_id": w.project.pk},
            "run_judges",
            headers=HX_MAIN,
        ),
    ),
    "review:judge_template_save": (
        Case(
            "judge template save, empty",
            lambda w: {"project_id": w.project.pk},
            "manage",
            method="post",
        ),
        Case(
            "judge template reset, already the built-in (400)",
            lambda w: {"project_id": w.project.pk},
            "manage",
            method="post",
            data={"template": "llmi.llm_judge", "base": "0", "op": "reset"},
        ),
    ),
    "review:judge_weights_save": (
        Case(
            "LLM-I weights, the paper's preset",
            lambda w: {"project_id": w.project.pk},
            "manage",
            method="post",
            data={"base": "0", "preset": "paper"},
        ),
    ),
    "review:render_answers": (
        Case("render answers", lambda w: {"project_id": w.project.pk}, "score"),
        Case(
            "render answers, unknown model (400)",
            lambda w: {"project_id": w.project.pk},
            "score",
            method="post",
            data={"models": ["nobody"]},
        ),
    ),
    "review:rendered_answer": (
        Case(
            "a rendered model answer",
            lambda w: {"pk": w.model_answer.pk},
            "score",
            shows={"reviewer": (SECRET_MODEL,)},
        ),
        Case(
            "render a model answer again",
            lambda w: {"pk": w.model_answer.pk},
            "score",
            method="post",
        ),
        Case("another project's answer", lambda w: {"pk": w.other_answer.pk}, Access.OTHER),
    ),
    "review:rendered_answer_download": (
        Case("a rendered answer as a file", lambda w: {"pk": w.model_answer.pk}, "score"),
    ),
    # ------------------------------------------------------------------ API
    "api-root": (Case("API root", lambda w: {}, Access.LOGGED_IN),),
    "schema": (Case("OpenAPI schema", lambda w: {}, Access.LOGGED_IN),),
    "api-docs": (Case("API docs", lambda w: {}, Access.LOGGED_IN),),
    "project-list": (Case("projects", lambda w: {}, Access.LOGGED_IN),),
    "project-detail": (
        Case("project", lambda w: {"pk": w.project.pk}, "view"),
        Case("other project", lambda w: {"pk": w.other_project.pk}, Access.OTHER),
    ),
    "project-import-data": (
        Case("import, no file", lambda w: {"pk": w.project.pk}, "import", method="post"),
    ),
    "project-items": (
        Case("new item, no query", lambda w: {"pk": w.project.pk}, "view", method="post"),
        Case(
            "new item in another project",
            lambda w: {"pk": w.other_project.pk},
            Access.OTHER,
            method="post",
        ),
    ),
    "project-images": (
        Case("store an image, no file", lambda w: {"pk": w.project.pk}, "view", "post"),
        Case(
            "store an image in another project",
            lambda w: {"pk": w.other_project.pk},
            Access.OTHER,
            method="post",
        ),
    ),
    "item-audio": (
        Case("attach audio to an item, no file", lambda w: {"pk": w.item.pk}, "edit", "post"),
        Case(
            "attach audio to another project's item",
            lambda w: {"pk": w.other_item.pk},
            Access.OTHER,
            method="post",
        ),
    ),
    "item-list": (
        Case("items", lambda w: {}, Access.LOGGED_IN),
        Case(
            "blind project's items",
            lambda w: {},
            Access.LOGGED_IN,
            query=lambda w: f"?project={w.tproject.pk}",
        ),
    ),
    "item-detail": (
        Case("ATP item", lambda w: {"pk": w.item.pk}, "view"),
        Case(
            "blind item",
            lambda w: {"pk": w.titem.pk},
            "view",
            shows={"annotator": (SECRET_ANSWER, SECRET_VARIANT)},
        ),
        Case("other project's item", lambda w: {"pk": w.other_item.pk}, Access.OTHER),
    ),
    "response-list": (
        Case("responses", lambda w: {}, Access.LOGGED_IN, shows={"reviewer": (SECRET_MODEL,)}),
        Case(
            "the item's responses",
            lambda w: {},
            Access.LOGGED_IN,
            query=lambda w: f"?item={w.item.pk}",
            shows={"reviewer": (SECRET_MODEL,)},
        ),
    ),
    "response-detail": (
        Case("response", lambda w: {"pk": w.response.pk}, "view"),
        Case(
            "the answer under human evaluation",
            lambda w: {"pk": w.model_answer.pk},
            "view",
            shows={"reviewer": (SECRET_MODEL,)},
        ),
    ),
    "plan-list": (Case("plans", lambda w: {}, Access.LOGGED_IN),),
    "plan-detail": (Case("plan", lambda w: {"pk": w.plan.pk}, "view"),),
    "trajectory-list": (
        Case("trajectories", lambda w: {}, Access.LOGGED_IN),
        Case(
            "blind item's trajectories",
            lambda w: {},
            Access.LOGGED_IN,
            query=lambda w: f"?item={w.titem.pk}",
            shows={"annotator": (SECRET_REFERENCE,)},
        ),
    ),
    "trajectory-detail": (
        Case("ATP item's trajectory", lambda w: {"pk": w.trajectory.pk}, "view"),
        Case(
            "blind item's reference",
            lambda w: {"pk": w.reference.pk},
            "view",
            blind=Expect.REFUSED,
            shows={"annotator": (SECRET_REFERENCE,)},
        ),
    ),
    "image-list": (Case("images", lambda w: {}, Access.LOGGED_IN),),
    "image-detail": (Case("image", lambda w: {"sha256": w.image.sha256}, "view"),),
    "job-list": (
        Case(
            "jobs",
            lambda w: {},
            Access.LOGGED_IN,
            # Lists the jobs each user may see (the kind's role; blind verifiers not the
            # author's drafting calls), with their results and errors.
            shows={"admin": (SECRET_DRAFTING, REVIEWERS_ONLY, ADMINS_ONLY)},
        ),
    ),
    "job-detail": _job_cases(lambda w, job: {"pk": job.pk}, page="API job"),
    "judgment-task-list": (Case("judgment tasks", lambda w: {}, Access.LOGGED_IN),),
    "judgment-task-detail": (Case("judgment task", lambda w: {"pk": w.task.pk}, "view"),),
    "judgment-task-next": (Case("next item", lambda w: {"pk": w.task.pk}, "view", method="post"),),
    "judgment-task-judgments": (
        Case("judgments", lambda w: {"pk": w.task.pk}, "view"),
        Case(
            "blind answers",
            lambda w: {"pk": w.vtask.pk},
            "view",
            shows={"reviewer": (SECRET_OTHER_RATER,), "annotator": (SECRET_OTHER_RATER,)},
        ),
        Case("judge, empty", lambda w: {"pk": w.task.pk}, "view", method="post"),
    ),
    "judgment-task-agreement": (
        Case("agreement figures", lambda w: {"pk": w.task.pk}, "manage_studies"),
    ),
    "verification-blind-item": (
        Case(
            "blind view",
            lambda w: {"pk": w.vtask.pk, "item_id": w.titem.pk},
            "view",
            shows={"annotator": (SECRET_OTHER_RATER,)},  # their own answer
        ),
    ),
    "verification-audit": (
        Case(
            "audit",
            lambda w: {"pk": w.vtask.pk, "item_id": w.titem.pk},
            "view",
            blind=Expect.REFUSED,
        ),
        Case(
            "audit save, stale",
            lambda w: {"pk": w.vtask.pk, "item_id": w.titem.pk},
            "view",
            method="post",
            data={"base": 0, "steps": {}},
            json=True,
            expect={"admin": Expect.FORBIDDEN, "reviewer": Expect.FORBIDDEN, "annotator": 409},
            blind=Expect.REFUSED,
        ),
    ),
}


# --------------------------------------------------------------------------- the routes


def _walk(patterns: list[Any], namespace: str = "") -> Iterator[str]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            if pattern.app_name == "admin":
                # Django's admin site: staff only, guarded by Django itself (its own login);
                # test_admin_sends_anonymous_to_its_login checks it stays closed.
                continue
            if pattern.app_name == "moved":
                # Old paths (benchmark/old_urls.py): each only redirects to a route of this
                # table; tests/test_moved_urls.py checks every one.
                continue
            inner = namespace
            if pattern.namespace:
                inner = f"{namespace}:{pattern.namespace}" if namespace else pattern.namespace
            yield from _walk(pattern.url_patterns, inner)
        elif isinstance(pattern, URLPattern):
            if "format" in pattern.pattern.regex.groupindex:
                continue  # DRF's format-suffix twin (".json") of a route listed without it
            assert pattern.name, f"an unnamed route cannot be listed: {pattern.pattern}"
            yield f"{namespace}:{pattern.name}" if namespace else pattern.name


def routes() -> set[str]:
    """Every named route of the root URLconf, as ``namespace:name``."""
    return set(_walk(get_resolver().url_patterns))


def test_every_route_is_in_the_table() -> None:
    found = routes()
    missing = sorted(found - set(ROUTES))
    gone = sorted(set(ROUTES) - found)
    assert not missing, f"routes without an entry in ROUTES (tests/test_route_matrix.py): {missing}"
    assert not gone, f"entries of ROUTES whose route no longer exists: {gone}"


def test_every_case_names_a_known_action_and_every_action_guards_a_route() -> None:
    """The table's expected answers come from ACTIONS: a case names an action that exists, and
    no action is left that no route exercises (a finer action nobody checks is a typo)."""
    named = {c.access for cases in ROUTES.values() for c in cases if isinstance(c.access, str)}
    assert named - set(ACTIONS) == set()
    assert set(ACTIONS) - named - {"ask_model", "judge", "edit"} == set()


def test_every_route_has_a_case() -> None:
    assert all(ROUTES.values()), [name for name, cases in ROUTES.items() if not cases]


@pytest.mark.django_db
def test_admin_sends_anonymous_to_its_login() -> None:
    response = Client().get("/admin/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


# --------------------------------------------------------------------------- the world


def _members(project: Any, users: dict[str, Any]) -> None:
    for role, user in users.items():
        if role in ("admin", "reviewer", "annotator"):
            MembershipFactory(project=project, user=user, role=role)
        elif role in ("blind_verifier", "author"):
            MembershipFactory(project=project, user=user, role=Role.ANNOTATOR)


def _trajectory_save(item: Any) -> dict[str, str]:
    """The trajectory editor's form as it opens on ``item``, with a new expected answer."""
    document = task_document(item=item, reference=reference_of(item))
    state = version_state(item=item, document=document)
    draft = draft_from_document(document)
    data = {f"task-{name}": str(getattr(draft, name)) for name in ITEM_FIELDS}
    for i, step in enumerate(draft.steps):
        for name in STEP_FIELDS:
            value = getattr(step, name)
            if isinstance(value, bool):
                if value:
                    data[f"steps-{i}-{name}"] = "on"
            else:
                data[f"steps-{i}-{name}"] = value
    data.update(
        {
            "task-expected": "Changed by the route matrix",
            "step-count": str(len(draft.steps)),
            "ord-count": "0",
            "version": str(state.number),
            "fingerprint": state.fingerprint,
            "op": "save",
        }
    )
    return data


def build_world() -> SimpleNamespace:
    """Projects of each kind with every kind of object, users in every role, and an item under
    blind verification. Built once per module (see ``world``)."""
    toolsets, taxonomies = toolsets_ensure(), taxonomies_ensure()
    users = {
        role: UserFactory(username=f"matrix-{role}")
        for role in ("admin", "reviewer", "annotator", "blind_verifier", "outsider", "author")
    }
    w = SimpleNamespace(users=users, jobs=SimpleNamespace())

    # An interleaved (ATP) project: an item with an image, an answer with versions, a plan and
    # a trajectory; a judgment task with a judgment, an outcome and a decision.
    w.project = ProjectFactory(name="Matrix ATP")
    ToolFactory(toolset=w.project.toolset, name="Reference")
    w.image = ImageFactory(projects=[w.project])
    w.audio = AudioFileFactory(projects=[w.project])
    w.item = ItemFactory(project=w.project, image_refs=[image_ref(w.image, position=0)])
    w.response = ResponseFactory(item=w.item)
    ResponseVersionFactory(response=w.response, number=1, note="imported")
    TagDecisionFactory(
        version=ResponseVersionFactory(
            response=w.response, number=2, base_number=1, author=users["annotator"]
        )
    )
    w.proposal = DiscardProposalFactory(item=w.item, proposed_by=users["annotator"])
    w.plan = PlanFactory(item=w.item)
    w.trajectory = TrajectoryFactory(item=w.item)
    w.task = JudgmentTaskFactory(project=w.project, overlap=5)
    # A gold item of the task (so that unmarking has something to unmark).
    GoldItem.objects.create(task=w.task, item=w.item, value=1, created_by=users["reviewer"])
    JudgmentFactory(task=w.task, item=w.item, user=users["author"], value=1)
    OutcomeFactory(task=w.task, item=w.item)
    DecisionFactory(task=w.task, item=w.item, reviewer=users["reviewer"])
    # A task two annotators judged (the agreement page's pair of them).
    w.pair_task = JudgmentTaskFactory(project=w.project, name="Pairs", overlap=2)
    for role, value in (("author", 1), ("blind_verifier", 0)):
        JudgmentFactory(task=w.pair_task, item=w.item, user=users[role], value=value)
    # Rate the judge: a judge run's Chief Judge report on a model answer, one unit of a
    # "judge-report" task, leased to the annotator.
    w.judge_run = JudgeRunFactory(project=w.project)
    # Worked examples added to the judge from the task's correction cases.
    w.example_set = ExampleSetFactory(project=w.project, task=w.task, source_run=w.judge_run)
    WorkedExampleCaseFactory(example_set=w.example_set, unit=str(w.item.pk))
    # An evaluation run of a model under test with one result and one stored file.
    w.eval_run = EvaluationRunFactory(project=w.project)
    # A saved filter of the item list that none of the roles saved (only an admin deletes it).
    w.saved_filter = SavedFilterFactory(project=w.project, name="world filter", created_by=None)
    w.eval_file = file_store(b"an evaluated answer")
    EvaluationResultFactory(run=w.eval_run, item=w.item, files={"answer.txt": w.eval_file})
    w.model_answer = ResponseFactory(
        item=w.item,
        origin=Origin.MODEL,
        model_name=SECRET_MODEL,
        key=f"model:{SECRET_MODEL}",
        source_file=f"answers/{SECRET_MODEL}.jsonl",
    )
    # Versions of the model answer: the item's history lists them (its model masked for raters).
    ResponseVersionFactory(response=w.model_answer, number=1, note="imported")
    ResponseVersionFactory(
        response=w.model_answer, number=2, base_number=1, author=users["reviewer"]
    )
    JudgeCallFactory(run=w.judge_run, response=w.model_answer, label="chief")
    RenderedAnswerFactory(response=w.model_answer, image=w.image)
    w.utask = JudgmentTaskFactory(
        project=w.project,
        name="Rate the judge",
        scheme="ordinal",
        labels=RATING_LABELS["judge-report"],
        consensus="majority",
        overlap=5,
        updates_item_status=False,
        unit_kind="judge-report",
        unit_params={"judge_run": w.judge_run.pk, "labels": ["chief"], "responses": None},
    )
    w.unit = f"response:{w.model_answer.pk}:chief"
    TaskUnit.objects.create(task=w.utask, item=w.item, key=w.unit)
    AssignmentFactory(task=w.utask, item=w.item, unit=w.unit, user=users["annotator"])
    # The unit is a gold unit of the task too (so that unmarking one has something to unmark).
    GoldItem.objects.create(
        task=w.utask, item=w.item, unit=w.unit, value=2, created_by=users["reviewer"]
    )
    # Human evaluation: the model answer as one unit on the ATP-Bench B.2 scale, leased to
    # the annotator.
    w.htask = JudgmentTaskFactory(
        project=w.project,
        name="Human evaluation",
        question="Rate the answer.",
        scheme="scores",
        labels=ATP_SCALE.labels,
        consensus="median",
        overlap=5,
        updates_item_status=False,
        unit_kind="answer-eval",
        unit_params={
            "scale": "atp",
            "models": [SECRET_MODEL],
            "seed": 0,
            "rater_order_seed": 0,
            "responses": [w.model_answer.pk],
        },  # fmt: skip
    )
    w.hunit = f"response:{w.model_answer.pk}:atp"
    TaskUnit.objects.create(task=w.htask, item=w.item, key=w.hunit)
    AssignmentFactory(task=w.htask, item=w.item, unit=w.hunit, user=users["annotator"])

    # A trajectory (Agentic-MME) project: an item drafted by "author" under blind verification
    # by a "Solve blind" task; the blind verifier holds a lease and has not answered, the
    # annotator has answered and audited.
    w.tproject = ProjectFactory(
        name="Matrix MME",
        kind="trajectory",
        data_format="agentic-mme",
        toolset=toolsets["agentic-mme"],
        taxonomy=taxonomies["agentic-mme"],
    )
    timage = ImageFactory(projects=[w.tproject])
    w.titem = ItemFactory(
        project=w.tproject,
        query="What does the brass plaque say? Answer with the street name.",
        expected_answer=SECRET_ANSWER,
        accepted_variants=[SECRET_VARIANT],
        match_type="contains",
        level=1,
        provenance="drafted by matrix-author with fake-vl-7b",
        image_refs=[image_ref(timage, position=0, role="input")],
        raw="",
        documents=[],
        category="",
        intent="",
    )
    w.reference = TrajectoryFactory(
        item=w.titem,
        key="reference",
        checkpoints=[
            {
                "id": "C1",
                "axis": "V",
                "description": SECRET_REFERENCE,
                "tools": ["crop"],
                "code_check": {"verifier": "verify_crop_ast", "bbox_2d": [100, 100, 600, 600]},
                "visual_check": {"question": "What does it say?", "expected_answer": "plaque"},
            }
        ],
    )
    # Version 1 holds the author's first answer; the item changed since (version 2 is current).
    first = task_document(item=w.titem, reference=w.reference)
    first["golden_answer"]["value"] = "Willow Street"
    TrajectoryVersionFactory(item=w.titem, number=1, data=first)
    w.vtask = JudgmentTaskFactory(project=w.tproject, solve=True)
    AssignmentFactory(task=w.vtask, item=w.titem, user=users["blind_verifier"])
    JudgmentFactory(task=w.vtask, item=w.titem, user=users["annotator"], value=SECRET_OTHER_RATER)
    OutcomeFactory(task=w.vtask, item=w.titem)
    TrajectoryAuditFactory(task=w.vtask, item=w.titem, user=users["annotator"])

    # The author's backward-drafting session on that item: a model call (with its job), a
    # mark, a crop and the saved draft.
    w.session = DraftingSessionFactory(
        item=w.titem, source_sha256=timage.sha256, created_by=users["author"]
    )
    w.jobs.drafting = ModelCallJobFactory(
        item=w.titem,
        purpose=w.session.purpose("describe"),
        created_by=users["author"],
        status="succeeded",
        progress=1,
        result={"answer": SECRET_DRAFTING, "model": "fake-vl-7b", "latency_ms": 80},
    )
    w.drafting_call = DraftingCallFactory(
        session=w.session,
        job=w.jobs.drafting,
        answer=SECRET_DRAFTING,
        image_sha256s=[timage.sha256],
        created_by=users["author"],
    )
    DraftingMarkFactory(session=w.session, call=w.drafting_call, marked_by=users["author"])
    DraftingCropFactory(
        session=w.session, image_sha256=timage.sha256, ground_truth=SECRET_CROP_TRUTH
    )
    DraftingDraftFactory(
        session=w.session, query=w.titem.query, expected_answer=SECRET_ANSWER, checkpoint_id="C1"
    )

    # Agent runs of that item, with a person's visual verdict and failure label.
    w.run_set = RunSetFactory(project=w.tproject, name="model A", created_by=users["reviewer"])
    w.run = AgentRunFactory(run_set=w.run_set, item=w.titem)
    VisualVerdictFactory(run=w.run, reviewer=users["reviewer"])
    FailureLabelFactory(run=w.run, reviewer=users["reviewer"])
    # Worked examples of the S judge made from the upload's correction cases.
    w.check_example_set = ExampleSetFactory(
        project=w.tproject, judge="agentic-mme-s", task=None, source_run=None, run_set=w.run_set
    )
    WorkedExampleCaseFactory(example_set=w.check_example_set, unit=f"run:{w.run.pk}:S1")

    # An oracle test the blind item failed: the conversation walks its reference, and the
    # item's page carries a notice with the model's answer (not for its blind verifier).
    w.oracle_run = OracleRunFactory(project=w.tproject, created_by=users["reviewer"])
    w.oracle_result = OracleResultFactory(
        run=w.oracle_run,
        item=w.titem,
        answer=SECRET_VARIANT + " (model)",
        output=f"<answer>{SECRET_VARIANT} (model)</answer>",
        messages=[
            {"role": "system", "content": "Answer."},
            {"role": "user", "content": [{"type": "text", "text": f"Step 1: {SECRET_REFERENCE}"}]},
        ],
    )

    # A plan (m&m's) project with a verified item and its plan.
    w.pproject = ProjectFactory(
        name="Matrix m&m's", kind="plan", data_format="mms", toolset=toolsets["mms"]
    )
    pplan = PlanFactory(item=ItemFactory(project=w.pproject, status="verified"), key="gold")
    # Its plan in the plan editor: the ground truth and one alternative.
    w.pitem = pplan.item
    PlanFactory(item=w.pitem, key="alt:0", is_alternative=True)
    # A plan validity judge run over it, started by the reviewer.
    w.plan_run = PlanJudgeRunFactory(project=w.pproject, created_by=users["reviewer"])
    PlanJudgeCallFactory(run=w.plan_run, plan=pplan)

    # Jobs of every kind.
    failed = {"status": "failed"}
    w.jobs.imported = ImportJobFactory(
        project=w.project, created_by=users["admin"], error=ADMINS_ONLY, **failed
    )
    w.jobs.answer_scoring = AnswerScoringJobFactory(
        project=w.project, created_by=users["reviewer"], error=REVIEWERS_ONLY, **failed
    )
    w.jobs.run_scoring = RunScoringJobFactory(
        project=w.tproject, created_by=users["reviewer"], error=REVIEWERS_ONLY, **failed
    )
    w.jobs.rescoring = RescoringJobFactory(
        run_set=w.run_set, created_by=users["reviewer"], error=REVIEWERS_ONLY, **failed
    )
    w.jobs.agreement = AgreementJobFactory(
        task=w.task,
        created_by=users["reviewer"],
        status="succeeded",
        result={"n_judgments": 1, "note": REVIEWERS_ONLY},
    )
    w.rubric_run = JudgeRunFactory(
        project=w.project, judge="llmi-rubric", created_by=users["reviewer"]
    )
    rubric_call = JudgeCallFactory(
        run=w.rubric_run,
        response__item=w.item,
        response__key="model:alpha",
        response__model_name="alpha",
        label="r1",
        template_id="llmi.rubric",
        parsed={"score": 2, "justification": "fine"},
    )
    # People scoring that answer's criterion r1 themselves ("score the criteria"), rated once.
    w.ctask = JudgmentTaskFactory(
        project=w.project,
        name="Score the criteria",
        scheme="ordinal",
        labels=RATING_LABELS["answer-criterion"],
        consensus="majority",
        overlap=3,
        updates_item_status=False,
        unit_kind="answer-criterion",
        unit_params={"judge_run": w.rubric_run.pk, "criteria": [], "responses": None},
    )
    cunit = f"response:{rubric_call.response_id}:r1"
    TaskUnit.objects.create(task=w.ctask, item=w.item, key=cunit)
    JudgmentFactory(
        task=w.ctask, item=w.item, unit=cunit, assignment__unit=cunit, user=users["author"], value=1
    )
    w.jobs.judging = JudgingJobFactory(
        run=w.rubric_run, created_by=users["reviewer"], error=REVIEWERS_ONLY, **failed
    )
    w.rubric_run.job = w.jobs.judging
    w.rubric_run.save(update_fields=["job"])
    w.jobs.ask = ModelCallJobFactory(
        item=w.item,
        created_by=users["annotator"],
        status="succeeded",
        progress=1,
        result={"answer": "A page with a chart.", "model": "fake-vl-7b"},
    )
    ModelCallFactory(project=w.project, item=w.item, job=w.jobs.ask, answer="A page with a chart.")
    w.jobs.failed_ask = ModelCallJobFactory(
        item=w.item, created_by=users["annotator"], error="the model did not answer", **failed
    )

    # Model drafts: a batch of drafted queries on the ATP project, and a drafted answer of
    # the blind item (it would give the answer away).
    w.model_draft = ModelDraftFactory(project=w.project, created_by=users["annotator"])
    w.model_candidate = DraftCandidateFactory(draft=w.model_draft)
    w.blind_draft = ModelDraftFactory(item=w.titem, kind="answer", created_by=users["author"])
    w.blind_candidate = DraftCandidateFactory(draft=w.blind_draft, content=SECRET_ANSWER)

    # Members: the same users in the same roles in every project of the world.
    for project in (w.project, w.tproject, w.pproject):
        _members(project, users)

    # Another project, whose admin is the outsider.
    w.other_project = ProjectFactory(name="Matrix elsewhere")
    MembershipFactory(project=w.other_project, user=users["outsider"], role=Role.ADMIN)
    w.other_image = ImageFactory(projects=[w.other_project])
    w.other_audio = AudioFileFactory(projects=[w.other_project])
    w.other_item = ItemFactory(
        project=w.other_project, image_refs=[image_ref(w.other_image, position=0)]
    )
    w.jobs.other = ImportJobFactory(project=w.other_project, created_by=users["outsider"])
    w.other_answer = ResponseFactory(
        item=w.other_item, origin=Origin.MODEL, model_name="m", key="model:m"
    )
    RenderedAnswerFactory(response=w.other_answer)

    # Unsaved input: every member's draft of the ATP item's edit form.
    for role in ("admin", "reviewer", "annotator", "blind_verifier"):
        InputDraftFactory(user=users[role], key=_item_draft_key(w))

    w.sessions = {}
    for role in ROLES:
        if role != "anonymous":
            client = Client()
            client.force_login(users[role])
            w.sessions[role] = client.cookies[django_settings.SESSION_COOKIE_NAME].value

    # People: an open invitation link to the ATP project, a password link for the annotator
    # (made after the logins above, which its token depends on).
    w.annotator_membership = Membership.objects.get(project=w.project, user=users["annotator"])
    w.invitation_token = "matrix-invitation-token"
    w.invitation = InvitationFactory(project=w.project, token=w.invitation_token)
    # A release of the ATP project's items (all statuses), written under the module's media.
    w.release = release_create(project=w.project, user=None, name="Matrix release", status=None)

    w.api_token, _ = api_token_create(user=users["admin"], actor=users["admin"], name="matrix")
    w.password_link = {
        "uidb64": urlsafe_base64_encode(force_bytes(users["annotator"].pk)),
        "token": default_token_generator.make_token(users["annotator"]),
    }

    w.trajectory_save = _trajectory_save(w.titem)
    w.drafting_draft = {
        "query": w.titem.query,
        "expected_answer": "Changed by the route matrix",
        "match_type": "contains",
        "base": item_draft_token(w.titem),
    }
    return w


@pytest.fixture(scope="module")
def world_media(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("route-matrix-media")


@pytest.fixture(scope="module")
def world(
    django_db_setup: None, django_db_blocker: Any, world_media: Path
) -> Iterator[SimpleNamespace]:
    """The world, built once for the module inside a transaction that is rolled back at the
    end; each test runs in a savepoint of its own, so what a POST writes is undone."""
    overrides = {
        "MEDIA_ROOT": world_media,
        "PASSWORD_HASHERS": ["django.contrib.auth.hashers.MD5PasswordHasher"],
    }
    with django_db_blocker.unblock(), override_settings(**overrides), transaction.atomic():
        yield build_world()
        transaction.set_rollback(True)


@pytest.fixture(autouse=True)
def _isolated_media(settings: Any, world_media: Path) -> None:
    """The world's images live in the module's media folder (overrides the conftest's)."""
    settings.MEDIA_ROOT = world_media


def _client(world: SimpleNamespace, role: str) -> Client:
    """A new client per cell, on its role's session (a cell that logs out deletes the session
    row only inside its own savepoint)."""
    client = Client()
    if role != "anonymous":
        client.cookies[django_settings.SESSION_COOKIE_NAME] = world.sessions[role]
    return client


# --------------------------------------------------------------------------- the matrix


def _cells() -> Iterator[Any]:
    for name, cases in ROUTES.items():
        for case in cases:
            for role in ROLES:
                reason = case.xfail.get(role)
                marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
                yield pytest.param(name, case, role, marks=marks, id=f"{name}|{case.label}|{role}")


def _body(response: Any) -> str:
    if getattr(response, "streaming", False):
        # Reading to the end closes the response through the test client's wrapper, with
        # close_old_connections held off; closing it again here would fire request_finished
        # and close the connection that holds the world's transaction (on PostgreSQL).
        content = b"".join(response.streaming_content)
    else:
        content = response.content
    return content.decode("utf-8", "replace")


def _meets(response: Any, expected: Expect | int) -> bool:
    status = response.status_code
    to_login = status in (301, 302, 303) and response["Location"].startswith(LOGIN_URL)
    if isinstance(expected, int):
        return status == expected
    return {
        Expect.PUBLIC: status < 400,
        Expect.OK: status not in (401, 403, 404) and not to_login,
        Expect.SAFE: status != 401 and not to_login,
        Expect.FORBIDDEN: status == 403,
        Expect.HIDDEN: status == 404,
        Expect.REFUSED: status in (403, 404),
        Expect.LOGIN: to_login,
        Expect.API_ANONYMOUS: status in (401, 403),
    }[expected]


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "case", "role"), list(_cells()))
def test_route_matrix(name: str, case: Case, role: str, world: SimpleNamespace) -> None:
    path = reverse(name, kwargs=case.kwargs(world))
    assert resolve(path).view_name == name, path
    expected = expectation(case, role, api=path.startswith("/api/"))
    data = case.data(world) if callable(case.data) else case.data
    extra: dict[str, Any] = dict(case.headers)
    if case.json:
        extra["content_type"] = "application/json"
        data = json.dumps(data)
    url = path + (case.query(world) if case.query else "")
    response = getattr(_client(world, role), case.method)(url, data, **extra)
    body = _body(response)
    problems = []
    if response.status_code >= 500:
        problems.append("a server error")
    elif not _meets(response, expected):
        problems.append(f"expected {expected.value if isinstance(expected, Expect) else expected}")
    leaked = [s for s, readers in SECRETS.items() if role not in readers and s in body]
    if leaked:
        problems.append(f"the body shows what {role} may not read: {leaked}")
    missing = [s for s in case.shows.get(role, ()) if s not in body]
    if missing:
        problems.append(f"the body lacks what {role} should see: {missing}")
    where = f"{case.method.upper()} {url} as {role} answered {response.status_code}"
    assert not problems, f"{where}: " + "; ".join(problems) + f"\n{body[:1500]}"
