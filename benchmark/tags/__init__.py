"""Parse, validate, serialize and edit the tool tags inside interleaved answers.

Pure Python (no Django). Two syntaxes:

* ``"atp"``: ATP-Bench, ``<tool>{"tool_name": ..., "description": ..., "params": {...}}</tool>``
  with a JSON payload;
* ``"llmi"``: LLM-I, ``<imgen>{'source': ..., 'description': ..., 'params': {...}}</imgen>``
  with a Python dict literal.

Typical use::

    from benchmark.tags import parse, validate, serialize

    parsed = parse(answer, "atp")
    findings = validate(parsed, None, image_count=len(item_images))
    assert serialize(parsed) == answer
"""

from .model import (
    CODES,
    NAME_KEY,
    SEVERITIES,
    SYNTAXES,
    TAG_NAME,
    Finding,
    ParsedText,
    Segment,
    Syntax,
    TextSegment,
    ToolCall,
)
from .parse import parse, tag_markers
from .serialize import (
    TagEditError,
    close_tag,
    insert_tag,
    make_payload,
    move_tag,
    remove_tag,
    render_payload,
    render_tag,
    replace_payload,
    serialize,
    set_description,
    set_param,
    set_params,
    set_tool,
)
from .toolsets import (
    ATP_TOOLSET,
    LLMI_TOOLSET,
    Toolset,
    builtin_toolset,
    normalize_toolset,
    toolset_from_specs,
)
from .validate import parse_image_num, rule_score, validate

__all__ = [
    "ATP_TOOLSET",
    "CODES",
    "LLMI_TOOLSET",
    "NAME_KEY",
    "SEVERITIES",
    "SYNTAXES",
    "TAG_NAME",
    "Finding",
    "ParsedText",
    "Segment",
    "Syntax",
    "TagEditError",
    "TextSegment",
    "ToolCall",
    "Toolset",
    "builtin_toolset",
    "close_tag",
    "insert_tag",
    "make_payload",
    "move_tag",
    "normalize_toolset",
    "parse",
    "parse_image_num",
    "remove_tag",
    "render_payload",
    "render_tag",
    "replace_payload",
    "rule_score",
    "serialize",
    "set_description",
    "set_param",
    "set_params",
    "set_tool",
    "tag_markers",
    "toolset_from_specs",
    "validate",
]
