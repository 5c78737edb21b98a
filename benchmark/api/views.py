"""The benchmark API: read-only, user-scoped viewsets, plus the writes of scripts: the import
upload, new items, and images stored for a project (to name in new items).

Every queryset comes from a selector scoped to the requesting user, so another project's
objects answer 404. Writes go through services; domain errors become 400/403/404/409 in
benchmark.api.exceptions.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from django.urls import reverse
from drf_spectacular.utils import (
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_view,
)
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from benchmark import permissions, selectors, visibility
from benchmark.api.item_inputs import ItemFieldsInput, ItemRecordInput
from benchmark.api.parsers import LimitedJSONParser
from benchmark.api.schema import CountedPagination, QueryIntegerField, id_filter
from benchmark.api.serializers import (
    AudioAttachedSerializer,
    AudioUploadSerializer,
    ImageSerializer,
    ImageStoredSerializer,
    ImageUploadSerializer,
    ImportUploadSerializer,
    ItemDetailSerializer,
    ItemListSerializer,
    JobSerializer,
    PlanSerializer,
    ProjectSerializer,
    ResponseSerializer,
    TrajectorySerializer,
    audio_rows,
)
from benchmark.audio import selectors as audio_selectors
from benchmark.audio import services as audio_services
from benchmark.datasets import services as dataset_services
from benchmark.exceptions import Forbidden, ValidationFailed
from benchmark.images import selectors as image_selectors
from benchmark.images import services as image_services
from benchmark.items import records as item_records
from benchmark.jobs import selectors as job_selectors
from benchmark.jobs import services as job_services
from benchmark.models import (
    Image,
    Item,
    ItemStatus,
    Job,
    JobStatus,
    Modality,
    Origin,
    Plan,
    Project,
    Trajectory,
)
from benchmark.models import Response as ResponseModel
from benchmark.selectors import ItemFilters
from benchmark.typing import User


def _query(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    """Validated query parameters; a bad value answers 400 naming the parameter."""
    params = serializer_class(data=request.query_params)
    params.is_valid(raise_exception=True)
    return {k: v for k, v in params.validated_data.items() if v not in (None, "")}


# --------------------------------------------------------------------------- projects


@extend_schema_view(
    list=extend_schema(summary="Your projects, with your role and item counts per status"),
    retrieve=extend_schema(summary="One of your projects"),
)
class ProjectViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ProjectSerializer
    queryset = Project.objects.none()  # the real one is per user: get_queryset

    def get_queryset(self) -> QuerySet[Project]:
        return selectors.project_list(user=self.request.user)

    @extend_schema(
        summary="Upload a dataset file (or .zip) and start an import job (project admins)",
        request={"multipart/form-data": ImportUploadSerializer},
        responses={202: JobSerializer},
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="import",
        parser_classes=[MultiPartParser, FormParser],
        serializer_class=ImportUploadSerializer,
    )
    def import_data(self, request: Request, pk: str | None = None) -> Response:
        project = self.get_object()  # scoped: another project answers 404
        permissions.require(user=request.user, project=project, action="import")
        upload = ImportUploadSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        job = dataset_services.import_upload_start(
            project=project, user=request.user, upload=upload.validated_data["file"]
        )
        job.refresh_from_db()
        data = JobSerializer(job, context=self.get_serializer_context()).data
        location = request.build_absolute_uri(reverse("job-detail", kwargs={"pk": job.pk}))
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": location})

    @extend_schema(
        summary="Create an item (members who may edit): its fields, or one native record",
        description=(
            "Two bodies, told apart by the key `record`:\n\n"
            "* **fields**: the fields of the New item form (query, documents, images, "
            "category, intent, rubric, constraints, expected_answer, ...), plus `answer` "
            "(ATP-Bench, LLM-I: the ground-truth answer text) and `plan` (m&m's: the gold "
            "plan's steps);\n"
            '* **record**: `{"record": ...}`, one record in the project\'s own format, '
            "as `import_dataset` reads it (one ATP-Bench data.jsonl line, one LLM-I row, one "
            "m&m's task row, one Agentic-MME task file), kept as given so the export writes it "
            "back unchanged.\n\n"
            "The item starts as a draft written by you. Images are named by path and must be "
            "the project's already (a path its items use, or images/<sha256>.<ext> of an image "
            "stored for it): the API reads no files. A bad field answers 400 naming it "
            "(`field` for a record), an id the project has already 409."
        ),
        request=PolymorphicProxySerializer(
            component_name="ItemCreate",
            serializers=[ItemFieldsInput, ItemRecordInput],
            resource_type_field_name=None,
        ),
        responses={201: ItemDetailSerializer},
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="items",
        # JSON only: nested fields and a native record have no form encoding.
        parser_classes=[LimitedJSONParser],
        serializer_class=ItemFieldsInput,
    )
    def items(self, request: Request, pk: str | None = None) -> Response:
        project = self.get_object()  # scoped: another project answers 404
        permissions.require(user=request.user, project=project, action="edit")
        user = request.user
        if not isinstance(user, User):  # members only, so never anonymous here
            raise Forbidden("log in to add items")
        body = request.data if isinstance(request.data, dict) else {}
        if "record" in body:
            given = ItemRecordInput(data=body)
            given.is_valid(raise_exception=True)
            item = item_records.item_create_from_record(
                project=project,
                user=user,
                record=given.validated_data["record"],
                data_format=given.validated_data.get("format"),
            )
        else:
            fields = ItemFieldsInput(data=body)
            fields.is_valid(raise_exception=True)
            data = dict(fields.validated_data)
            answer = data.pop("answer", None)
            plan = data.pop("plan", None)
            images = data.pop("images", None)
            item = item_records.item_create_with_records(
                project=project, user=user, data=data, answer=answer, plan=plan, images=images
            )
        created = selectors.item_list_status_shown(user=user, project=project).get(pk=item.pk)
        out = ItemDetailSerializer(created, context=self.get_serializer_context()).data
        location = request.build_absolute_uri(reverse("item-detail", kwargs={"pk": item.pk}))
        return Response(out, status=status.HTTP_201_CREATED, headers={"Location": location})

    @extend_schema(
        summary="Store an image for the project (members who may edit), to name in new items",
        description=(
            "One image as multipart/form-data `file`, checked and stored once by its sha256 "
            "(the size and pixel limits of the upload page apply; a file that is not an "
            "image, or over a limit, answers 400 naming `file`). The answer's `path` "
            "(images/<sha256>.<ext>) is how item records name it: in "
            "POST /api/projects/<id>/items/ as images[].path, in documents[].images, or in a "
            "native record's image fields. Uploading the same bytes again answers the same "
            "image."
        ),
        request={"multipart/form-data": ImageUploadSerializer},
        responses={201: ImageStoredSerializer},
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="images",
        parser_classes=[MultiPartParser, FormParser],
        serializer_class=ImageUploadSerializer,
    )
    def images(self, request: Request, pk: str | None = None) -> Response:
        project = self.get_object()  # scoped: another project answers 404
        permissions.require(user=request.user, project=project, action="edit")
        upload = ImageUploadSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        try:
            (image,) = image_services.image_upload(
                project=project, user=request.user, files=[upload.validated_data["file"]]
            )
        except ValidationFailed as exc:
            raise ValidationFailed(f"file: {exc.message}") from None
        out = ImageStoredSerializer(image, context=self.get_serializer_context()).data
        location = request.build_absolute_uri(
            reverse("image-detail", kwargs={"sha256": image.sha256})
        )
        return Response(out, status=status.HTTP_201_CREATED, headers={"Location": location})


# --------------------------------------------------------------------------- items


class ItemQuery(serializers.Serializer):
    project = id_filter("Only this project's items.")
    # Blank choices: an empty parameter (``?status=``) filters nothing, as the schema says.
    status = serializers.ChoiceField(choices=ItemStatus.values, required=False, allow_blank=True)
    category = serializers.CharField(required=False, allow_blank=True, max_length=200)
    intent = serializers.CharField(required=False, allow_blank=True, max_length=200)
    level = QueryIntegerField(required=False, min_value=1, max_value=3)
    modality = serializers.ChoiceField(choices=Modality.values, required=False, allow_blank=True)
    q = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="Search the query text and external id.",
    )


@extend_schema_view(
    list=extend_schema(summary="Items in your projects, filtered", parameters=[ItemQuery]),
    retrieve=extend_schema(summary="One item, with documents, images, rubric and source JSON"),
)
class ItemViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Item.objects.none()
    pagination_class = CountedPagination

    def get_serializer_class(self) -> type[serializers.Serializer]:
        return ItemDetailSerializer if self.action == "retrieve" else ItemListSerializer

    def get_queryset(self) -> QuerySet[Item]:
        user = self.request.user
        if self.action != "list":
            return selectors.item_list_status_shown(user=user)
        query = _query(ItemQuery, self.request)
        filters = ItemFilters(
            status=query.get("status", ""),
            category=query.get("category", ""),
            intent=query.get("intent", ""),
            level=query.get("level"),
            modality=query.get("modality", ""),
            q=query.get("q", ""),
        )
        project = None
        if "project" in query:
            # One project: scoped as the item list page scopes it (a constant membership
            # check), and counted from the kept tallies where the filters allow (known_count).
            project = selectors.project_visible(user=user).filter(pk=query["project"]).first()
            if project is None:
                return Item.objects.none()
        if filters.status:
            # refused (400, saying why) where item status is hidden from the user
            selectors.item_status_filter_check(user=user, project=project)
        self.counted: tuple[Project | None, ItemFilters] = (project, filters)
        return selectors.item_list_status_shown(
            user=user, project=project, filters=filters, load_secrets=False
        ).defer("raw", "documents", "constraints", "rubric", "accepted_variants", "expected_answer")

    @extend_schema(
        summary="Attach an audio file to the item (members who may edit it)",
        description=(
            "One FLAC, WAV or MP3 file as multipart/form-data `file`, checked by its first "
            "bytes and stored once by its sha256, attached under its file name: it fills the "
            "item's file of that name that is not stored here, or adds one, as a new version "
            "of the item (like the item page's **Attach audio**). A file that is not audio, "
            "is over the limit or has another name ending answers 400 naming it. The answer "
            "lists the item's audio files as `audio_files` of the item does."
        ),
        request={"multipart/form-data": AudioUploadSerializer},
        responses={201: AudioAttachedSerializer},
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="audio",
        parser_classes=[MultiPartParser, FormParser],
        serializer_class=AudioUploadSerializer,
    )
    def audio(self, request: Request, pk: str | None = None) -> Response:
        item = self.get_object()  # scoped: another project's item answers 404
        upload = AudioUploadSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        audio_services.item_audio_attach(
            user=request.user, item=item, file=upload.validated_data["file"]
        )
        out = {
            "audio_files": audio_rows(
                audio_selectors.item_audio(user=request.user, item=item), request
            ),
            "version": getattr(getattr(item, "version", None), "number", None),
        }
        return Response(AudioAttachedSerializer(out).data, status=status.HTTP_201_CREATED)

    def paginate_queryset(self, queryset: Any) -> list[Any] | None:
        """A page of the list, each row's ``answer_hidden`` decided for the rows shown."""
        page = super().paginate_queryset(queryset)
        if page is not None:
            selectors.item_rows_flag(user=self.request.user, rows=page)
        return page

    def known_count(self) -> int | None:
        """The number of items the list pages through, from the kept tallies when it is one
        project's items filtered by status, category or intent at most (exact, no scan of
        the project); None: the paginator counts the rows."""
        project, filters = getattr(self, "counted", (None, ItemFilters()))
        if project is None or not filters.tallied:
            return None
        return selectors.item_count(user=self.request.user, project=project, filters=filters).n


# --------------------------------------------------------------------------- attachments


class AttachedQuery(serializers.Serializer):
    project = id_filter("Only this project's records.")
    item = id_filter("Only this item's records.")
    origin = serializers.ChoiceField(choices=Origin.values, required=False, allow_blank=True)


class _AttachedViewSet(viewsets.ReadOnlyModelViewSet):
    selector: Any = None

    def get_queryset(self) -> QuerySet[Any]:
        rows = type(self).selector(user=self.request.user)
        if self.action != "list":
            return rows
        query = _query(AttachedQuery, self.request)
        if "project" in query:
            rows = rows.filter(item__project_id=query["project"])
        if "item" in query:
            rows = rows.filter(item_id=query["item"])
        if "origin" in query:
            rows = rows.filter(origin=query["origin"])
        return rows


_attached_schema = extend_schema_view(
    list=extend_schema(parameters=[AttachedQuery]),
)


@_attached_schema
class ResponseViewSet(_AttachedViewSet):
    """Interleaved answers (ground truth and model responses) with their tool tags."""

    queryset = ResponseModel.objects.none()
    serializer_class = ResponseSerializer
    selector = staticmethod(selectors.response_list)


@_attached_schema
class PlanViewSet(_AttachedViewSet):
    """Tool plans: ground truth, alternatives and model predictions."""

    queryset = Plan.objects.none()
    serializer_class = PlanSerializer
    selector = staticmethod(selectors.plan_list)


@_attached_schema
class TrajectoryViewSet(_AttachedViewSet):
    """Reference trajectories (checkpoints) and agent runs (tool events)."""

    queryset = Trajectory.objects.none()
    serializer_class = TrajectorySerializer
    selector = staticmethod(selectors.trajectory_list)


# --------------------------------------------------------------------------- images


class ImageQuery(serializers.Serializer):
    project = id_filter("Only this project's images.")


@extend_schema_view(
    list=extend_schema(parameters=[ImageQuery]),
    retrieve=extend_schema(
        parameters=[
            OpenApiParameter(
                "sha256", {"type": "string", "pattern": "^[0-9a-f]{64}$"}, OpenApiParameter.PATH
            )
        ]
    ),
)
class ImageViewSet(viewsets.ReadOnlyModelViewSet):
    """Image metadata; ``file`` and ``thumbnail`` link to the permission-checked downloads."""

    queryset = Image.objects.none()
    serializer_class = ImageSerializer
    lookup_field = "sha256"
    lookup_value_regex = "[0-9a-f]{64}"

    def get_queryset(self) -> QuerySet[Image]:
        user = self.request.user
        if self.action == "list":
            query = _query(ImageQuery, self.request)
            if "project" in query:
                # A project the user is not a member of answers 404 (never a count).
                project = selectors.project_get(user=user, pk=query["project"])
                return image_selectors.image_list(user=user, project=project)
        return image_selectors.image_list(user=user)


# --------------------------------------------------------------------------- jobs


class JobQuery(serializers.Serializer):
    project = id_filter("Only this project's jobs.")
    kind = serializers.CharField(required=False, allow_blank=True, max_length=50)
    status = serializers.ChoiceField(choices=JobStatus.values, required=False, allow_blank=True)


@extend_schema_view(list=extend_schema(parameters=[JobQuery]))
class JobViewSet(viewsets.ReadOnlyModelViewSet):
    """Background jobs you started or that belong to your projects; poll one for progress."""

    queryset = Job.objects.none()
    serializer_class = JobSerializer

    def get_queryset(self) -> QuerySet[Job]:
        # Model calls about an item hidden from the user (blind verification) are left out.
        jobs = visibility.exclude_hidden_jobs(
            job_selectors.job_list(user=self.request.user), user=self.request.user
        )
        if self.action == "list":
            query = _query(JobQuery, self.request)
            if "project" in query:
                jobs = jobs.filter(project_id=query["project"])
            if "kind" in query:
                jobs = jobs.filter(kind=query["kind"])
            if "status" in query:
                jobs = jobs.filter(status=query["status"])
        return jobs

    def get_object(self) -> Job:
        """The one job selector: another project's job is 404; a job of the user's project
        that their role does not show (e.g. an annotator and a scoring job) is 403."""
        try:
            pk = int(self.kwargs["pk"])
        except (TypeError, ValueError):
            raise Http404("no such job") from None
        return job_selectors.job_get(user=self.request.user, pk=pk)

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        # A job whose worker died answers "failed" to the poll instead of "running" forever.
        job = job_services.job_refresh(job=self.get_object())
        return Response(self.get_serializer(job).data)
