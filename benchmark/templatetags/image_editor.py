"""``{% image_editor_state image recipe prefix %}``: what ``partials/image_editor.html`` needs
to draw the editor for ``image`` (a source Image) with an optional saved ``recipe``."""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.urls import NoReverseMatch, reverse
from django.utils.text import slugify

from benchmark.imaging import ops
from benchmark.imaging.recipe import Recipe, RecipeError
from benchmark.models import Image

register = template.Library()


def _ops_json() -> list[dict[str, Any]]:
    return [spec.to_dict() for spec in ops.OPS.values()]


def _box_px(recipe: dict[str, Any] | None, image: Image) -> list[int] | None:
    """The pixel box of the recipe's first crop when the crop is the first step."""
    if not recipe:
        return None
    try:
        parsed = Recipe.from_dict(recipe)
    except RecipeError:
        return None
    if not parsed.steps or parsed.steps[0].op != "crop":
        return None
    params = parsed.steps[0].params
    try:
        if params.get("box") is not None:
            return [int(v) for v in params["box"]]
        return list(ops.bbox_to_pixels(params["bbox_2d"], (image.width, image.height)))
    except ops.OpError:
        return None


@register.simple_tag(takes_context=True)
def image_editor_state(
    context: template.Context, image: Image, recipe: Any = None, prefix: str = ""
) -> dict[str, Any]:
    project = context.get("project")
    preview_url = derive_url = ""
    if project is not None:
        try:
            preview_url = reverse("benchmark:image_preview", args=[project.pk])
            derive_url = reverse("benchmark:image_derive", args=[project.pk])
        except NoReverseMatch:  # pragma: no cover - the routes always exist
            pass
    if isinstance(recipe, str):
        try:
            recipe = json.loads(recipe) if recipe else None
        except json.JSONDecodeError:
            recipe = None
    if not isinstance(recipe, dict) or recipe.get("source_sha256") != image.sha256:
        recipe = None
    config = {
        "sha256": image.sha256,
        "width": image.width,
        "height": image.height,
        "src": reverse("benchmark:image", args=[image.sha256]),
        "prefix": prefix or "",
        "previewUrl": preview_url,
        "deriveUrl": derive_url,
        "recipe": recipe,
        "ops": _ops_json(),
    }
    box = _box_px(recipe, image)
    return {
        "id": f"ie-{slugify(prefix) or 'editor'}-{image.sha256[:8]}",
        "config_json": json.dumps(config, separators=(",", ":")),
        "recipe_json": json.dumps(recipe, separators=(",", ":")) if recipe else "",
        "box_px_json": json.dumps(box) if box else "",
        "box_px": box,
    }
