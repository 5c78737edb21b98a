"""Review over the API: a judgment task's agreement figures (reviewers and admins)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.judgment_tasks import selectors as judging_selectors
from benchmark.exceptions import Forbidden
from benchmark.permissions import can
from review.agreement.judge_sources import judge_rater_report, judge_sources_for
from review.agreement.selectors import agreement_report
from review.rate_judge.selectors import rate_figures


@extend_schema(
    parameters=[
        OpenApiParameter(
            "judge",
            str,
            description="A judge source (one of judge_sources[].key) to add as one more rater: "
            "the answer then holds judge_rater, its figures against the task's annotators.",
        )
    ],
    responses={200: OpenApiTypes.OBJECT},
)
@api_view(["GET"])
def task_agreement(request: Request, pk: int) -> Response:
    """Agreement figures of a judgment task (reviewers and admins), the judge sources that can
    join as a rater, and with ``?judge=<key>`` that judge's figures (400 for a key that does
    not fit the task). A "rate the judge" task adds ``judge_rates``: the agreement rate per
    agent (mean rating / 2, in percent) with its bootstrap interval, and per annotator."""
    task = judging_selectors.task_get(user=request.user, pk=pk)
    if not can(user=request.user, project=task.project, action="manage_studies"):
        raise Forbidden("only reviewers and admins see agreement figures")
    report = agreement_report(user=request.user, task=task)  # a copy: safe to add to
    report["judge_sources"] = [
        {"key": s.key, "label": s.label, "kind": s.kind}
        for s in judge_sources_for(user=request.user, task=task)
    ]
    key = request.query_params.get("judge", "").strip()
    if key:
        report["judge_rater"] = judge_rater_report(user=request.user, task=task, key=key)
    rates = rate_figures(task=task)
    if rates is not None:
        report["judge_rates"] = rates
    return Response(report)
