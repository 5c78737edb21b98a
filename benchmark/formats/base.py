"""Records shared by every format reader and writer. No Django here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class FormatError(ValueError):
    """Bad input, with where it is: file, record (id or index) and field."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        record: str | int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.record = record
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = []
        if self.file:
            where.append(str(self.file))
        if self.record is not None:
            where.append(f"record {self.record}")
        if self.field:
            where.append(f"field {self.field!r}")
        return f"{', '.join(where)}: {self.message}" if where else self.message


@dataclass
class ImageRef:
    """An image a record refers to. ``path`` is relative to the dataset root: the folder given
    to ``read``, or the folder holding the file given. Writers take image paths for the record
    itself from ``raw``, so ``path`` only serves to find and copy the bytes."""

    path: str
    role: str = "document"  # document | query | input | artifact
    position: int = 0


@dataclass
class ItemRecord:
    external_id: str
    source_file: str  # file name relative to the dataset folder, e.g. "data.jsonl"
    raw: str  # exact JSON text of the source record
    position: int = 0
    query: str = ""
    modality: str = "text"  # text | image
    documents: list[dict[str, Any]] = field(default_factory=list)  # [{"text", "images": [paths]}]
    images: list[ImageRef] = field(default_factory=list)
    # Audio files the record names (m&m's speech inputs), by the name it uses; the importer
    # stores each from the dataset folder (``benchmark.formats.audio``).
    audio: list[str] = field(default_factory=list)
    constraints: dict[str, Any] = field(default_factory=dict)
    expected_answer: str = ""
    accepted_variants: list[str] = field(default_factory=list)
    match_type: str = ""
    rubric: list[dict[str, Any]] = field(default_factory=list)  # [{"key": "r1", "text": ...}]
    category: str = ""
    intent: str = ""
    domain: str = ""
    level: int | None = None
    status: str = "draft"
    provenance: str = ""
    # Things that live inside the item's own record (a ground-truth answer, a plan, the
    # reference trajectory); written back from the item record itself.
    responses: list[ResponseRecord] = field(default_factory=list)
    plans: list[PlanRecord] = field(default_factory=list)
    trajectories: list[TrajectoryRecord] = field(default_factory=list)


@dataclass
class AttachmentRecord:
    """Fields shared by records attached to an item. ``item_id`` is the item's external id;
    ``key`` is unique per item (e.g. "gt", "answers.json#3")."""

    item_id: str
    key: str
    source_file: str = ""
    raw: str = ""  # exact JSON text when the attachment is its own source record, else ""
    origin: str = "ground_truth"  # ground_truth | model
    model_name: str = ""
    position: int = 0


@dataclass
class ResponseRecord(AttachmentRecord):
    text: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class PlanRecord(AttachmentRecord):
    form: str = "json"  # json | code | raw
    steps: list[dict[str, Any]] = field(default_factory=list)
    code: str = ""
    is_alternative: bool = False


@dataclass
class TrajectoryRecord(AttachmentRecord):
    steps: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    ordering_constraints: list[dict[str, Any]] = field(default_factory=list)
    efficiency: dict[str, Any] = field(default_factory=dict)
    final_answer: str = ""
    images: list[ImageRef] = field(default_factory=list)
