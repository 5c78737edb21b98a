"""The built-in ATP-Bench and LLM-I toolsets as plain data, and the toolset shape.

A toolset maps a lower-case tool name to its parameters::

    {"reference": {"params": [{"name": "img_index", "type": "int", "required": True}]}}

Tool names in tags match case-insensitively (ATP-Bench samples write ``Reference``; the real
casing was never published). Parameter ``type`` uses the project's vocabulary (``int``,
``float``, ``str``, ``bool``, ``list``, ``dict``, ``list[float]``, …; JSON-schema names such as
``integer``, ``number``, ``string`` also work). An unknown type string is not checked.

A parameter may carry an optional ``role`` that selects the extra checks:

* ``image_index``: an index into the available images (``img_index_out_of_range``; for
  ATP-Bench Reference also ``reference_reused``). Default for a parameter named ``img_index``.
* ``code``: Python source that must compile (``code_syntax``). Default for ``code``.
* ``text``: must not be blank (``empty_prompt``). Default for any other string parameter.
* ``none``: no extra check.

ATP-Bench's Code parameter name is an assumption (the paper says "a diagram type and a
specification of the data"); the data README lists it as unverified.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from .model import Syntax

__all__ = [
    "ATP_TOOLSET",
    "LLMI_TOOLSET",
    "ParamSpec",
    "Toolset",
    "builtin_toolset",
    "normalize_toolset",
    "toolset_from_specs",
]


class _ParamSpecBase(TypedDict):
    name: str
    type: str
    required: bool


class ParamSpec(_ParamSpecBase, total=False):
    role: str


Toolset = Mapping[str, Mapping[str, Any]]


def _p(name: str, type_: str = "str", required: bool = True) -> dict[str, Any]:
    return {"name": name, "type": type_, "required": required}


ATP_TOOLSET: dict[str, dict[str, Any]] = {
    "reference": {"params": [_p("img_index", "int")]},
    "diffusion": {"params": [_p("prompt")]},
    "search": {"params": [_p("query")]},
    "code": {"params": [_p("code")]},
    "edit": {"params": [_p("img_index", "int"), _p("prompt")]},
}

LLMI_TOOLSET: dict[str, dict[str, Any]] = {
    "search": {"params": [_p("query")]},
    "diffusion": {"params": [_p("prompt")]},
    "code": {"params": [_p("code")]},
    "edit": {"params": [_p("img_index", "int"), _p("prompt")]},
}


def builtin_toolset(syntax: Syntax) -> dict[str, dict[str, Any]]:
    """A fresh copy of the built-in toolset for ``"atp"`` or ``"llmi"``."""
    source = ATP_TOOLSET if syntax == "atp" else LLMI_TOOLSET
    return {name: {"params": [dict(p) for p in tool["params"]]} for name, tool in source.items()}


def normalize_toolset(toolset: Toolset) -> dict[str, list[dict[str, Any]]]:
    """Lower-case tool names and fill in parameter defaults: ``{name: [param, ...]}``."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name, tool in toolset.items():
        params = []
        for spec in tool.get("params", ()) or ():
            param = dict(spec)
            param.setdefault("type", "")
            param.setdefault("required", True)
            params.append(param)
        out[str(name).lower()] = params
    return out


def toolset_from_specs(specs: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Build a toolset from tool rows shaped like ``{"name", "parameters": [{"name", "type",
    "required", ...}]}`` (the shape of ``benchmark.builtin.toolsets`` and of ``Tool`` rows)."""
    toolset: dict[str, dict[str, Any]] = {}
    for spec in specs:
        params = [
            {
                key: value
                for key, value in param.items()
                if key in ("name", "type", "required", "role")
            }
            for param in spec.get("parameters", spec.get("params", ())) or ()
        ]
        toolset[str(spec["name"]).lower()] = {"params": params}
    return toolset
