"""Built-in toolsets and taxonomies for the four benchmarks Benchwright serves.

    toolsets_ensure() -> {"atp", "llmi", "agentic-mme", "mms"}: Toolset
    taxonomies_ensure() -> {"atp", "agentic-mme", "llmi", "mms"}: Taxonomy

Both are idempotent and create only what is missing (``python manage.py seed_builtin``).
"""

from .taxonomies import atp_intent_term_name, taxonomies_ensure
from .toolsets import mms_tool_graph, mms_tool_metadata, toolsets_ensure

__all__ = [
    "atp_intent_term_name",
    "mms_tool_graph",
    "mms_tool_metadata",
    "taxonomies_ensure",
    "toolsets_ensure",
]
