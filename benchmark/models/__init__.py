"""The benchmark app's models, one module per area, all registered with Django from here.

``core`` holds the domain (projects, toolsets, taxonomies, items and what hangs off them, jobs,
model calls); ``people``, ``api_tokens``, ``items`` and ``input_drafts`` hold the models of
those features. Every
module here imports only Django, ``benchmark.fields`` and its siblings, never a feature's
services, so any layer above may import ``benchmark.models``.
"""

from benchmark.models.api_tokens import ApiToken, ApiTokenUse
from benchmark.models.core import (
    AttachedRecord,
    AudioFile,
    DataFormat,
    Image,
    Item,
    ItemStatus,
    ItemStatusChange,
    ItemTally,
    Job,
    JobStatus,
    Membership,
    Modality,
    ModelCall,
    Origin,
    Plan,
    PlanSyntax,
    Project,
    ProjectKind,
    Response,
    Role,
    TagSyntax,
    Taxonomy,
    TaxonomyTerm,
    TermKind,
    Tool,
    ToolEdge,
    Toolset,
    Trajectory,
)
from benchmark.models.input_drafts import InputDraft
from benchmark.models.items import ItemVersion
from benchmark.models.people import AuditAction, AuditEvent, Invitation
from benchmark.models.saved_filters import SavedFilter

__all__ = [
    "ApiToken",
    "ApiTokenUse",
    "AttachedRecord",
    "AudioFile",
    "AuditAction",
    "AuditEvent",
    "DataFormat",
    "Image",
    "InputDraft",
    "Invitation",
    "Item",
    "ItemStatus",
    "ItemStatusChange",
    "ItemTally",
    "ItemVersion",
    "Job",
    "JobStatus",
    "Membership",
    "Modality",
    "ModelCall",
    "Origin",
    "Plan",
    "PlanSyntax",
    "Project",
    "ProjectKind",
    "Response",
    "Role",
    "SavedFilter",
    "TagSyntax",
    "Taxonomy",
    "TaxonomyTerm",
    "TermKind",
    "Tool",
    "ToolEdge",
    "Toolset",
    "Trajectory",
]
