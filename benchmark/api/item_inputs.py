"""Bodies of ``POST /api/projects/<id>/items/``: the item's fields, or one record in the
benchmark's own format. Input checks only; the services in benchmark.items.records write."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from benchmark import limits
from benchmark.models import DataFormat, Modality

ROLES = ("query", "document", "input")


class DocumentInput(serializers.Serializer):
    text = serializers.CharField(allow_blank=True, max_length=limits.DOCUMENT.limit)
    images = serializers.ListField(
        child=serializers.CharField(max_length=500),
        required=False,
        default=list,
        help_text="Paths of images the project holds (see images).",
    )


class ImageInput(serializers.Serializer):
    path = serializers.CharField(
        max_length=500,
        help_text="A path the project's items already use (e.g. images/atp_0001_0.png, kept "
        "as is), or images/<sha256>.<ext> (or the bare sha256) of an image stored for the "
        "project. The API reads no files: an unknown path answers 400 naming images[i].path.",
    )
    role = serializers.ChoiceField(
        choices=ROLES,
        required=False,
        help_text="query (ATP-Bench image query), document (ATP-Bench documents: name it in "
        "its document's images too, unless there are no documents), input (LLM-I, m&m's, "
        "Agentic-MME). Default: document for ATP-Bench, else input.",
    )
    position = serializers.IntegerField(min_value=0, required=False)


class CriterionInput(serializers.Serializer):
    key = serializers.RegexField(r"^r[1-9][0-9]*$", help_text="r1 .. r10")
    text = serializers.CharField(max_length=limits.CRITERION.limit)


class PlanStepInput(serializers.Serializer):
    id = serializers.IntegerField(min_value=0)
    name = serializers.CharField(help_text="A tool of the project's toolset.")
    args = serializers.DictField(
        required=False, default=dict, help_text="Values; <node-N>.key refers to step N's output."
    )


class ItemFieldsInput(serializers.Serializer):
    """The item's fields, as the "New item" form has them."""

    external_id = serializers.CharField(
        max_length=limits.EXTERNAL_ID.limit, required=False, help_text="Default: a new unique id."
    )
    query = serializers.CharField(
        min_length=1,
        max_length=limits.QUERY.limit,
        help_text="ATP-Bench query, LLM-I prompt, m&m's user request, Agentic-MME question.",
    )
    modality = serializers.ChoiceField(
        choices=Modality.choices, required=False, help_text="Default: from the images."
    )
    documents = DocumentInput(many=True, required=False)
    images = ImageInput(many=True, required=False)
    constraints = serializers.DictField(
        required=False, help_text='LLM-I: {"image_num": -1|0|n|99, "tools": [...]}.'
    )
    expected_answer = serializers.CharField(
        allow_blank=True, required=False, max_length=limits.EXPECTED_ANSWER.limit
    )
    accepted_variants = serializers.ListField(
        child=serializers.CharField(max_length=limits.ACCEPTED_VARIANT.limit), required=False
    )
    match_type = serializers.CharField(allow_blank=True, required=False, max_length=30)
    rubric = CriterionInput(many=True, required=False)
    category = serializers.CharField(
        allow_blank=True, required=False, max_length=limits.LABEL.limit
    )
    intent = serializers.CharField(allow_blank=True, required=False, max_length=limits.LABEL.limit)
    domain = serializers.CharField(allow_blank=True, required=False, max_length=limits.LABEL.limit)
    level = serializers.IntegerField(min_value=1, max_value=3, required=False, allow_null=True)
    answer = serializers.CharField(
        allow_blank=True,
        required=False,
        max_length=limits.ANSWER.limit,
        help_text="ATP-Bench and LLM-I: the ground-truth answer text (a Response 'gt').",
    )
    plan = PlanStepInput(
        many=True, required=False, help_text="m&m's: the gold plan's steps (a Plan 'gold')."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({unknown[0]: ["unknown field"]})
        return attrs


@extend_schema_field(
    {
        "oneOf": [
            {"type": "object", "minProperties": 1, "additionalProperties": True},
            {"type": "string", "minLength": 2, "maxLength": limits.RECORD_BYTES.limit},
        ]
    }
)
class RecordField(serializers.JSONField):
    """A record: a JSON object, or its JSON text (never null, never empty)."""


class ItemRecordInput(serializers.Serializer):
    """One record in the benchmark's own format."""

    record = RecordField(
        help_text="One record as import_dataset reads it: an ATP-Bench data.jsonl line "
        "{trace_id, query, image_query, doc, images, gt, category, intent}, an LLM-I row "
        "{prompt, r1..r10[, images]} or training row {prompt, data_source, extra_info}, an "
        "m&m's task row {id, user_request, plan_str, code_str, alt_plans_str}, or an "
        "Agentic-MME task file {task_id, meta, input, golden_answer, process_evaluation}; "
        "as a JSON object or as its JSON text. The project's format decides which."
    )

    format = serializers.ChoiceField(
        choices=DataFormat.values,
        required=False,
        help_text="Optional: the project's format (another answers 400).",
    )

    def validate_record(self, value: Any) -> Any:
        if not isinstance(value, dict | str) or not value:
            raise serializers.ValidationError("must be a JSON object (or its JSON text)")
        if isinstance(value, str):
            size = len(value.encode())
            if size > limits.RECORD_BYTES.limit:
                raise serializers.ValidationError(
                    f"is larger than {limits.RECORD_BYTES.limit:,} bytes ({size:,})"
                )
            at = limits.json_too_deep(value)
            if at is not None:
                raise serializers.ValidationError(
                    f"JSON nested deeper than {limits.JSON_DEPTH.limit} levels (char {at})"
                )
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        other = sorted(set(self.initial_data) - {"record", "format"})
        if other:
            raise serializers.ValidationError(
                {other[0]: ["send either a record or the item's fields, not both"]}
            )
        return attrs
