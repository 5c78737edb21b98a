"""What judges read of a stored answer or item besides its text: the images a rendered answer
produced (LLM-I ``<imgen>``, ATP-Bench ``<tool>``), the answer with its image tags replaced, and
an item's images as the item page shows them. Calls carry images as ``sha256:`` references; the
runner looks them up among the project's images and sends them as data URLs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmark.models import Item, Response
from benchmark.tags import parse as parse_tags

#: Where a rendered answer's images live (see ``rendered_images``).
RENDERED_IMAGES = "rendered_images"
IMAGE_REF_PREFIX = "sha256:"


def rendered_images(response: Response) -> list[str | None] | None:
    """A rendered answer's images: ``Response.extra["rendered_images"]``, one entry per image
    tag of the answer (LLM-I ``<imgen>``, ATP-Bench ``<tool>``), in order: the sha256 of the
    image that tag produced (an image of the project), or null where it produced none. None
    when the answer has not been rendered (no such key). Rendering (issue 11) fills it, and so
    may an answer import whose format carries the images. The rubric and MLLM judges attach
    the produced images, in this order."""
    value = (response.extra or {}).get(RENDERED_IMAGES)
    if not isinstance(value, list):
        return None
    return [v if isinstance(v, str) and v else None for v in value]


def rendered_answer(text: str, images: Sequence[str | None] | None = None) -> str:
    """An LLM-I answer with each ``<imgen>`` tag replaced by ``[image k]``. With ``images``
    (the answer's ``rendered_images``) k counts the images produced, which is the order they
    are attached in, and a tag that produced none becomes ``[image not produced]``."""
    tools = parse_tags(text, "llmi").tools
    out, cursor, shown = [], 0, 0
    for n, tool in enumerate(tools):
        out.append(text[cursor : tool.start])
        if images is None:
            out.append(f"[image {n + 1}]")
        elif n < len(images) and images[n]:
            shown += 1
            out.append(f"[image {shown}]")
        else:
            out.append("[image not produced]")
        cursor = tool.end
    out.append(text[cursor:])
    return "".join(out)


def image_refs(shas: Sequence[str | None]) -> list[str]:
    """``sha256:`` references of the images present, in order."""
    return [f"{IMAGE_REF_PREFIX}{sha}" for sha in shas if sha]


def query_images(item: Item) -> tuple[list[str], str]:
    """The item's images as the item page shows them (the documents' images in ``img_index``
    order, then the query's own image) as references, and a line naming each attached image,
    added to the query a judge reads. ("", no images) for an item without stored images."""
    refs = [r for r in item.image_refs or [] if isinstance(r, dict) and r.get("sha256")]

    def position(ref: dict[str, Any]) -> int:
        value = ref.get("position", 0)
        return value if isinstance(value, int) else 0

    documents = sorted(
        (r for r in refs if (r.get("role") or "document") == "document"), key=position
    )
    query = sorted((r for r in refs if r.get("role") == "query"), key=position)
    names = [f"img_index {position(r)}" for r in documents] + ["the query's image"] * len(query)
    if not names:
        return [], ""
    legend = "\n\n(Images attached, in order: " + "; ".join(
        f"{n} = {name}" for n, name in enumerate(names, start=1)
    )
    return image_refs([r["sha256"] for r in documents + query]), legend + ".)"
