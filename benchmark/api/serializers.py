"""Read serializers for the benchmark API. Writes go through services, never serializers."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from benchmark import permissions
from benchmark.models import (
    Image,
    Item,
    ItemStatus,
    Job,
    JobStatus,
    Plan,
    Project,
    Response,
    Role,
    Trajectory,
)


class StatusCountsSerializer(serializers.Serializer):
    draft = serializers.IntegerField()
    in_review = serializers.IntegerField()
    verified = serializers.IntegerField()
    discarded = serializers.IntegerField()
    total = serializers.IntegerField()


class ProjectSerializer(serializers.ModelSerializer):
    toolset = serializers.CharField(source="toolset.name", read_only=True)
    taxonomy = serializers.CharField(source="taxonomy.name", read_only=True, allow_null=True)
    role = serializers.SerializerMethodField()
    counts = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = [
            "id",
            "name",
            "kind",
            "tag_syntax",
            "data_format",
            "description",
            "toolset",
            "taxonomy",
            "role",
            "counts",
            "created_at",
        ]

    @extend_schema_field(serializers.ChoiceField(choices=Role.choices, allow_null=True))
    def get_role(self, obj: Project) -> str | None:
        if hasattr(obj, "my_role"):
            return obj.my_role
        return permissions.role_in(user=self.context["request"].user, project=obj)

    @extend_schema_field(StatusCountsSerializer(allow_null=True))
    def get_counts(self, obj: Project) -> dict[str, int] | None:
        if not hasattr(obj, "n_items"):
            return None
        counts = {status: getattr(obj, f"n_{status}") for status in ItemStatus.values}
        return {**counts, "total": obj.n_items}


class ItemListSerializer(serializers.ModelSerializer):
    n_images = serializers.SerializerMethodField()
    n_audio = serializers.SerializerMethodField(help_text="Audio files the item's task names.")
    status = serializers.ChoiceField(
        choices=ItemStatus.choices,
        source="shown_status",
        read_only=True,
        allow_null=True,
        help_text="The item's status; null where item status is not shown to you (annotators "
        "in a project with gold items, which are always verified).",
    )

    class Meta:
        model = Item
        fields = [
            "id",
            "project",
            "external_id",
            "position",
            "query",
            "modality",
            "category",
            "intent",
            "domain",
            "level",
            "status",
            "n_images",
            "n_audio",
            "updated_at",
        ]

    def get_n_images(self, obj: Item) -> int:
        return len(obj.image_refs or [])

    def get_n_audio(self, obj: Item) -> int:
        return len(obj.audio_refs or [])


class ImageRefSerializer(serializers.Serializer):
    sha256 = serializers.CharField(allow_null=True)
    role = serializers.CharField()
    path = serializers.CharField()
    position = serializers.IntegerField()


class AudioRefSerializer(serializers.Serializer):
    """One audio file the item's task names (m&m's speech inputs): the name the task uses and,
    when the file is stored here, its hash, kind, size and the permission-checked URL
    (``/audio/<sha256>/``, the same rule as images: members of a project holding it)."""

    name = serializers.CharField(help_text="The file name the item's task uses.")
    sha256 = serializers.CharField(allow_null=True, help_text="null: not stored here")
    kind = serializers.ChoiceField(
        choices=["flac", "wav", "mp3"], allow_null=True, help_text="The file's format."
    )
    size = serializers.IntegerField(allow_null=True, help_text="Bytes.")
    url = serializers.URLField(allow_null=True)


def audio_rows(item_audio: list[dict[str, Any]], request: Any) -> list[dict[str, Any]]:
    """``benchmark.audio.selectors.item_audio`` as the API gives it."""
    rows = []
    for entry in item_audio:
        audio = entry["audio"]
        url = None
        if audio is not None:
            url = reverse("benchmark:audio", kwargs={"sha256": audio.sha256})
            url = request.build_absolute_uri(url) if request else url
        rows.append(
            {
                "name": entry["path"],
                "sha256": audio.sha256 if audio is not None else None,
                "kind": audio.format if audio is not None else None,
                "size": audio.size_bytes if audio is not None else None,
                "url": url,
            }
        )
    return rows


class ItemDetailSerializer(ItemListSerializer):
    image_refs = ImageRefSerializer(many=True, read_only=True)
    audio_files = serializers.SerializerMethodField(
        help_text="The audio files the item's task names (m&m's), in order."
    )
    documents = serializers.JSONField(read_only=True)
    constraints = serializers.JSONField(read_only=True)
    accepted_variants = serializers.JSONField(read_only=True)
    rubric = serializers.JSONField(read_only=True)
    raw = serializers.JSONField(source="raw_record", read_only=True)
    answer_hidden = serializers.SerializerMethodField(
        help_text="The answer, variants and source record are hidden from you (you verify "
        "this item blind and have not answered yet): they read empty."
    )

    class Meta(ItemListSerializer.Meta):
        fields = [
            *ItemListSerializer.Meta.fields,
            "source_file",
            "documents",
            "image_refs",
            "audio_files",
            "constraints",
            "expected_answer",
            "accepted_variants",
            "match_type",
            "rubric",
            "discard_reason",
            "provenance",
            "raw",
            "answer_hidden",
            "created_at",
        ]

    def get_answer_hidden(self, obj: Item) -> bool:
        return bool(getattr(obj, "answer_hidden", False))  # set by the item selector

    @extend_schema_field(AudioRefSerializer(many=True))
    def get_audio_files(self, obj: Item) -> list[dict[str, Any]]:
        from benchmark.audio.selectors import item_audio

        if not obj.audio_refs:
            return []
        request = self.context.get("request")
        if request is None:  # no user to scope the files to: none is shown
            return []
        return audio_rows(item_audio(user=request.user, item=obj), request)


class AudioUploadSerializer(serializers.Serializer):
    file = serializers.FileField(
        help_text="One FLAC, WAV or MP3 file named as the item's task names it (or a new name "
        "ending in .flac, .wav or .mp3), within the server's size limit; sent as "
        "multipart/form-data."
    )


class AudioAttachedSerializer(serializers.Serializer):
    audio_files = AudioRefSerializer(many=True, help_text="The item's audio files now.")
    version = serializers.IntegerField(
        allow_null=True,
        help_text="The item's new version (null: the item already had this file under that "
        "name, nothing changed).",
    )


ATTACHED_FIELDS = ["id", "item", "key", "origin", "model_name", "source_file", "position"]


class ResponseSerializer(serializers.ModelSerializer):
    extra = serializers.JSONField(read_only=True)
    raw = serializers.JSONField(source="raw_record", read_only=True)
    identity_hidden = serializers.SerializerMethodField(
        help_text="Which model wrote this answer is hidden from you (you rate it in a human "
        "evaluation): model_name reads 'hidden', key 'answer-<id>', source_file, raw and extra empty."
    )

    class Meta:
        model = Response
        fields = [*ATTACHED_FIELDS, "text", "extra", "raw", "identity_hidden"]

    def get_identity_hidden(self, obj: Response) -> bool:
        return bool(getattr(obj, "identity_hidden", False))  # set by the response selector


class PlanSerializer(serializers.ModelSerializer):
    steps = serializers.JSONField(read_only=True)
    raw = serializers.JSONField(source="raw_record", read_only=True)

    class Meta:
        model = Plan
        fields = [*ATTACHED_FIELDS, "form", "steps", "code", "is_alternative", "raw"]


class TrajectorySerializer(serializers.ModelSerializer):
    steps = serializers.JSONField(read_only=True)
    checkpoints = serializers.JSONField(read_only=True)
    ordering_constraints = serializers.JSONField(read_only=True)
    efficiency = serializers.JSONField(read_only=True)
    image_refs = ImageRefSerializer(many=True, read_only=True)
    raw = serializers.JSONField(source="raw_record", read_only=True)

    class Meta:
        model = Trajectory
        fields = [
            *ATTACHED_FIELDS,
            "steps",
            "checkpoints",
            "ordering_constraints",
            "efficiency",
            "final_answer",
            "image_refs",
            "raw",
        ]


class ImageSerializer(serializers.ModelSerializer):
    file = serializers.SerializerMethodField()
    thumbnail = serializers.SerializerMethodField()

    class Meta:
        model = Image
        fields = ["sha256", "format", "width", "height", "size_bytes", "file", "thumbnail"]

    def _url(self, name: str, obj: Image) -> str:
        path = reverse(name, kwargs={"sha256": obj.sha256})
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path

    @extend_schema_field(OpenApiTypes.URI)
    def get_file(self, obj: Image) -> str:
        return self._url("benchmark:image", obj)

    @extend_schema_field(OpenApiTypes.URI)
    def get_thumbnail(self, obj: Image) -> str:
        return self._url("benchmark:image_thumb", obj)


class ImageUploadSerializer(serializers.Serializer):
    file = serializers.FileField(
        help_text="One image (PNG, JPEG, WebP, GIF, ...), within the server's size and pixel "
        "limits; sent as multipart/form-data."
    )


class ImageStoredSerializer(ImageSerializer):
    """An image stored for a project, with the path to name it by in item records."""

    path = serializers.SerializerMethodField(
        help_text="images/<sha256>.<ext>: give it as an image path in "
        "POST /api/projects/<id>/items/ (images[].path, documents[].images, or a record's "
        "image fields)."
    )

    class Meta(ImageSerializer.Meta):
        fields = ["sha256", "path", *ImageSerializer.Meta.fields[1:]]

    def get_path(self, obj: Image) -> str:
        return image_record_path(obj)


def image_record_path(image: Image) -> str:
    """The path an item record names a stored image by: ``images/<sha256>.<ext>``, the
    extension of the stored file (the items API resolves the sha256 from the name)."""
    suffix = PurePosixPath(image.file.name or "").suffix if image.file else ""
    if not suffix:
        suffix = "." + (image.format or "png").lower()
    return f"images/{image.sha256}{suffix.lower()}"


class JobSerializer(serializers.ModelSerializer):
    status = serializers.ChoiceField(choices=JobStatus.choices, read_only=True)
    percent = serializers.IntegerField(read_only=True)
    done = serializers.BooleanField(read_only=True)
    cancelled = serializers.BooleanField(
        read_only=True, help_text="Stopped on request (status failed, error 'Cancelled by ...')."
    )
    cancelling = serializers.BooleanField(
        read_only=True, help_text="Asked to stop; it stops at its next progress report."
    )
    filename = serializers.SerializerMethodField()
    result = serializers.JSONField(read_only=True)
    created_by = serializers.CharField(
        source="created_by.get_username", read_only=True, allow_null=True
    )

    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "status",
            "done",
            "cancelled",
            "cancelling",
            "progress",
            "total",
            "percent",
            "message",
            "error",
            "result",
            "filename",
            "project",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
        ]

    def get_filename(self, obj: Job) -> str:
        # The server-side path stays private; only the uploaded file's name is shown.
        return str((obj.params or {}).get("filename", ""))


class ImportUploadSerializer(serializers.Serializer):
    file = serializers.FileField(
        help_text="A data file in the project's format, or a .zip of a dataset folder."
    )
