"""Reviewers settle items: the disagreement queue and adjudication, and for blind-solve tasks\nthe joint review of verifiers' answers."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from annotation.discarding import selectors as discard_selectors
from annotation.discarding.models import ProposalStatus
from annotation.judgment_tasks import selectors as judging_selectors
from annotation.judgment_tasks import solving
from annotation.judgment_tasks.models import JudgmentTask
from annotation.judgment_tasks.views import _judge_context
from annotation.verification import selectors as verification_selectors
from annotation.verification import services as verification
from annotation.verification.views import audited_item_context, reference_units
from benchmark.exceptions import DomainError
from benchmark.input_drafts.services import input_draft_delete
from benchmark.models import Item
from benchmark.typing import HtmxHttpRequest, request_user
from review.adjudication import input_drafts
from review.adjudication import selectors as adjudication_selectors
from review.adjudication import services as adjudication
from review.adjudication.forms import (
    DecisionForm,
    DiscardProposalDecisionForm,
    JointDecisionForm,
    ReviseAnswerForm,
)
from review.pages import project_for_review, task_for_review


@login_required
@require_GET
def dispute_list(request: HttpRequest, pk: int) -> HttpResponse:
    task = task_for_review(request, pk, action="adjudicate")
    if solving.is_solve_task(task):  # blind solving: the joint-review queue
        return joint_review_list(request, task)
    outcomes = judging_selectors.disputes(user=request.user, task=task)
    return render(
        request,
        "review/dispute_list.html",
        {"task": task, "project": task.project, "outcomes": outcomes},
    )


@login_required
@require_http_methods(["GET", "POST"])
def adjudicate(request: HttpRequest, pk: int, item_id: int) -> HttpResponse:
    task = task_for_review(request, pk, action="adjudicate")
    if solving.is_solve_task(task):  # blind solving: joint review of the answers
        return joint_review(request, task, item_id)
    item = judging_selectors.task_item_get(user=request.user, task=task, pk=item_id)
    form = DecisionForm(task=task)
    if request.method == "POST":
        form = DecisionForm(request.POST, task=task)
        if form.is_valid():
            try:
                adjudication.outcome_decide(
                    task=task, item=item, reviewer=request_user(request), **form.decision_kwargs()
                )
            except DomainError as exc:
                form.add_error(None, exc.message)
            else:
                input_draft_delete(
                    user=request.user, key=input_drafts.key(task_id=task.pk, item_id=item.pk)
                )
                return redirect("review:dispute_list", pk=task.pk)
    context = _judge_context(request, task, item)
    context["form"] = form
    context["input_draft_key"] = input_drafts.key(task_id=task.pk, item_id=item.pk)
    return render(request, "review/adjudicate.html", context)


def joint_review_list(request: HttpRequest, task: JudgmentTask) -> HttpResponse:
    """The disagreement list of a solve task (called from ``dispute_list``)."""
    rows = adjudication_selectors.joint_review_queue(user=request.user, task=task)
    return render(
        request,
        "annotation/verification_queue.html",
        {
            "task": task,
            "project": task.project,
            "rows": rows,
            "golden": {r.item.pk: solving.golden_answer(r.item) for r in rows},
        },
    )


def _revise_initial(item: Item) -> dict[str, Any]:
    golden = solving.golden_answer(item)
    return {
        "expected_answer": item.expected_answer,
        "accepted_variants": "\n".join(golden["accepted_answers"]),
        "match_type": golden["match_type"],
        "tolerance": golden["tolerance"] or None,
        "stamp": verification.stamp(item.updated_at),
    }


def joint_review(request: HttpRequest, task: JudgmentTask, item_id: int) -> HttpResponse:
    """One item in joint review (called from ``adjudicate``): every answer side by
    side with whether it matches, the expected answer and variants, the reference trajectory
    and the audits; accept, revise the answer, or discard with a reason."""
    item = judging_selectors.task_item_get(user=request.user, task=task, pk=item_id)
    decision = JointDecisionForm()
    revise = ReviseAnswerForm(initial=_revise_initial(item))
    status = 200
    if request.method == "POST":
        try:
            if request.POST.get("action") == "revise":
                revise = ReviseAnswerForm(request.POST)
                if revise.is_valid():
                    data = revise.cleaned_data
                    outcome = adjudication.answer_revise(
                        task=task,
                        item=item,
                        reviewer=request_user(request),
                        expected_answer=data["expected_answer"],
                        accepted_variants=data["accepted_variants"].splitlines(),
                        match_type=data["match_type"],
                        tolerance=data.get("tolerance"),
                        reason=data.get("reason") or "",
                        base_updated_at=verification.parse_stamp(data.get("stamp") or ""),
                    )
                    if outcome.verdict != "disputed":
                        return redirect("review:dispute_list", pk=task.pk)
                    return redirect("review:adjudicate", pk=task.pk, item_id=item.pk)
            else:
                decision = JointDecisionForm(request.POST)
                if decision.is_valid():
                    verdict = decision.cleaned_data["verdict"]
                    adjudication.outcome_decide(
                        task=task,
                        item=item,
                        reviewer=request_user(request),
                        verdict=verdict,
                        value=item.expected_answer if verdict == "accepted" else None,
                        reason=decision.cleaned_data.get("reason") or "",
                    )
                    return redirect("review:dispute_list", pk=task.pk)
        except DomainError as exc:
            target = revise if request.POST.get("action") == "revise" else decision
            target.add_error(None, exc.message)
            status = 409 if exc.status_code == 409 else 200
            if status == 409:
                item.refresh_from_db()
                revise = ReviseAnswerForm(request.POST, initial=_revise_initial(item))
                revise.is_valid()
                revise.add_error(None, exc.message)
    reference, units = reference_units(item)
    audits = verification_selectors.latest_audits(task=task, item=item)
    context = {
        **audited_item_context(request, task, item, reference, units),
        "outcome": judging_selectors.outcome_for(task=task, item=item),
        "table": verification_selectors.audit_table(units, audits),
        "audits": audits,
        "decision": decision,
        "revise": revise,
        "current_stamp": verification.stamp(item.updated_at),
    }
    return render(request, "annotation/verification_review.html", context, status=status)


# --------------------------------------------------------------------------- discard proposals

RECENT_DECISIONS = 50
_PROPOSALS_WHY = "Only reviewers and admins decide on proposals to discard an item."


def _proposals_context(request: HttpRequest, project: Any) -> dict[str, Any]:
    rows = discard_selectors.discard_proposal_list(user=request.user, project=project)
    decided = rows.exclude(status=ProposalStatus.OPEN).order_by("-decided_at", "-id")
    return {
        "project": project,
        "open": list(rows.filter(status=ProposalStatus.OPEN)),
        "decided": list(decided[:RECENT_DECISIONS]),
        "form": DiscardProposalDecisionForm(auto_id=False),
    }


def _render_proposals(
    request: HtmxHttpRequest, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    template = "review/discard_proposals.html"
    if request.htmx and not request.htmx.history_restore_request:
        # htmx swaps only 2xx: an error is shown in the list it replaces.
        return render(request, template + "#proposals", context)
    return render(request, template, context, status=status)


@login_required
@require_GET
@vary_on_headers("HX-Request")
def discard_proposals(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """Open proposals to discard an item of the project, oldest first, each with accept and
    reject; below them the latest decisions."""
    project = project_for_review(request, project_id, _PROPOSALS_WHY, action="adjudicate")
    return _render_proposals(request, _proposals_context(request, project))


@login_required
@require_POST
@vary_on_headers("HX-Request")
def discard_proposal_decide(request: HtmxHttpRequest, project_id: int, pk: int) -> HttpResponse:
    """Accept (the item is discarded, recorded) or reject (recorded) one proposal."""
    project = project_for_review(request, project_id, _PROPOSALS_WHY, action="adjudicate")
    proposal = discard_selectors.discard_proposal_get(user=request.user, project=project, pk=pk)
    form = DiscardProposalDecisionForm(request.POST)
    error, status = "", 400
    if form.is_valid():
        try:
            adjudication.discard_proposal_decide(
                proposal=proposal,
                reviewer=request_user(request),
                accept=form.cleaned_data["decision"] == "accept",
                note=form.cleaned_data["note"],
            )
        except DomainError as exc:
            error, status = exc.message, exc.status_code
        else:
            if not request.htmx:
                return redirect("review:discard_proposals", project_id=project.pk)
            status = 200
    else:
        error = " ".join(str(e) for errors in form.errors.values() for e in errors)
    context = _proposals_context(request, project)
    # The error goes on the proposal's row while it is open, else above the list.
    in_list = any(p.pk == proposal.pk for p in context["open"])
    context.update({"error": error, "error_for": proposal.pk if error and in_list else None})
    return _render_proposals(request, context, status)
