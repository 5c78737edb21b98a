"""Judging over the API: tasks, "next item", blind judgments and outcomes. (Agreement figures
are review's: review/api.py.)"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.judgment_tasks import selectors, services
from annotation.judgment_tasks.models import Judgment, JudgmentTask
from benchmark.api.parsers import LimitedJSONParser
from benchmark.api.schema import ID_MAX
from benchmark.permissions import can
from benchmark.typing import request_user


class JudgmentTaskSerializer(serializers.ModelSerializer):
    class Meta:
        model = JudgmentTask
        fields = [
            "id", "project", "name", "question", "scheme", "labels", "relabel_fields", "overlap",
            "author_may_judge", "consensus", "required_value", "lease_minutes", "active",
            "unit_kind",
        ]  # fmt: skip


class AssignmentSerializer(serializers.Serializer):
    item = serializers.IntegerField(source="item_id")
    external_id = serializers.CharField(source="item.external_id")
    unit = serializers.CharField(help_text='The unit key for a task with units, else "".')
    expires_at = serializers.DateTimeField()


class JudgmentSerializer(serializers.ModelSerializer):
    annotator = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Judgment
        fields = ["id", "item", "unit", "annotator", "value", "reason", "comment", "relabel",
                  "seconds", "created_at"]  # fmt: skip
        read_only_fields = fields


@extend_schema_field(
    {
        "anyOf": [
            {"type": "integer"},
            {"type": "number"},
            {"type": "string"},
            {"type": "boolean"},
            {"type": "array", "items": {}},
            {"type": "object", "additionalProperties": True},
        ],
        "description": "The judgment: a value of the task's scheme (never null).",
    }
)
class JudgmentValueField(serializers.JSONField):
    """Any JSON value but null; which values fit is the task's scheme (checked on submit)."""


class JudgmentInSerializer(serializers.Serializer):
    item = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=ID_MAX,
        help_text="The item; may be left out when ``unit`` is given.",
    )
    unit = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=100,
        help_text="For a task with units: the unit key, response:<answer id>:<label> "
        "(pair:<answer id>:<answer id> for a preference between two answers).",
    )
    value = JudgmentValueField()
    reason = serializers.CharField(required=False, allow_blank=True, max_length=100)
    comment = serializers.CharField(required=False, allow_blank=True)
    relabel = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False)
    seconds = serializers.FloatField(required=False, min_value=0)


class JudgmentTaskViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = JudgmentTaskSerializer

    queryset = JudgmentTask.objects.none()  # the real one is per user: get_queryset

    def get_queryset(self) -> QuerySet[JudgmentTask]:
        if not self.request.user.is_authenticated:
            return JudgmentTask.objects.none()
        return JudgmentTask.objects.filter(project__memberships__user=self.request.user).order_by(
            "project_id", "name"
        )

    @extend_schema(request=None, responses={200: AssignmentSerializer, 204: None})
    @action(detail=True, methods=["post"])
    def next(self, request: Request, pk: Any = None) -> Response:
        """Lease the next item to judge; 204 when nothing is left."""
        task = self.get_object()
        assignment = services.assignment_next_for_user(task=task, user=request_user(request))
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(AssignmentSerializer(assignment).data)

    @extend_schema(
        methods=["get"],
        responses=JudgmentSerializer(many=True),
        description="Reviewers and admins see every judgment; annotators only their own.",
    )
    @extend_schema(
        methods=["post"],
        request=JudgmentInSerializer,
        responses={201: JudgmentSerializer, 200: OpenApiTypes.OBJECT},
        description="201 with the judgment; 200 with the first judgment and "
        "``already_recorded`` when you had already judged the item (nothing changes).",
    )
    # JSON only: ``value`` is any JSON value, which form data cannot carry.
    @action(detail=True, methods=["get", "post"], parser_classes=[LimitedJSONParser])
    def judgments(self, request: Request, pk: Any = None) -> Response:
        task = self.get_object()
        if request.method == "POST":
            data = JudgmentInSerializer(data=request.data)
            data.is_valid(raise_exception=True)
            values = dict(data.validated_data)
            item_id = values.pop("item", None)
            if item_id is None:
                item_id = selectors.unit_item_id(task=task, key=values.get("unit", ""))
            item = selectors.task_item_get(user=request.user, task=task, pk=item_id)
            judgment, created = services.judgment_submit_once(
                task=task, item=item, user=request_user(request), **values
            )
            if not created:
                # Already recorded: the first judgment stands; say so rather than "created".
                return Response(
                    {
                        **JudgmentSerializer(judgment).data,
                        "already_recorded": True,
                        "detail": "you already judged this item; your first judgment stands "
                        "and this one was not recorded",
                    },
                    status=status.HTTP_200_OK,
                )
            return Response(JudgmentSerializer(judgment).data, status=status.HTTP_201_CREATED)
        # Reviewers: the judgments that count towards outcomes (gold judgments are on the
        # task's gold page); annotators: their own, gold judgments among them as any other.
        rows = Judgment.objects.filter(task=task)
        if not can(user=request.user, project=task.project, action="adjudicate"):
            rows = Judgment.with_gold.filter(task=task, user=request_user(request))
        rows = rows.select_related("user").order_by("item_id", "id")
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(JudgmentSerializer(page, many=True).data)
