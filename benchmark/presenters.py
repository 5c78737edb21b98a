"""How items and what hangs off them are shown: plain dicts for templates, built from models.
Shared by the browsing pages and the judging pages."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from benchmark.models import Image, Item, Origin, Plan, Trajectory

TAG_RE = re.compile(r"<(tool|imgen)>(.*?)(</\1>|$)", re.S)
TAG_NAME_RE = re.compile(r"""["']?(?:tool_name|source)["']?\s*:\s*["']([^"'\n]{1,60})["']""")
NODE_RE = re.compile(r"<node-\d+>\.\w+")


def tag_segments(text: str) -> list[dict[str, Any]]:
    """Split answer text into plain runs and tool tags (``<tool>…</tool>``,
    ``<imgen>…</imgen>``; an unclosed tag runs to the end). Templates escape every run."""
    out: list[dict[str, Any]] = []
    pos = 0
    for match in TAG_RE.finditer(text or ""):
        if match.start() > pos:
            out.append({"kind": "", "text": text[pos : match.start()]})
        name = TAG_NAME_RE.search(match.group(2))
        out.append(
            {
                "kind": match.group(1),
                "text": match.group(0),
                "name": name.group(1) if name else "",
                "closed": bool(match.group(3)),
            }
        )
        pos = match.end()
    if pos < len(text or ""):
        out.append({"kind": "", "text": text[pos:]})
    return out


def node_segments(text: str) -> list[dict[str, str]]:
    """Split a plan argument into plain runs and ``<node-K>.key`` references."""
    out: list[dict[str, str]] = []
    pos = 0
    for match in NODE_RE.finditer(text):
        if match.start() > pos:
            out.append({"kind": "", "text": text[pos : match.start()]})
        out.append({"kind": "node", "text": match.group(0)})
        pos = match.end()
    if pos < len(text):
        out.append({"kind": "", "text": text[pos:]})
    return out


def pretty_json(raw: str) -> str:
    if not raw:
        return ""
    try:
        return json.dumps(orjson.loads(raw), indent=2, ensure_ascii=False)
    except orjson.JSONDecodeError:
        return raw


def as_display_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def image_entries(
    refs: list[dict[str, Any]], images: dict[str, Image], index_name: str = "img_index"
) -> list[dict[str, Any]]:
    """Image refs with their stored image, index and label. The index counts within the
    ref's role from 0 in source order: the ``img_index`` by which ATP and LLM-I answers
    address document and input images (``image_index`` in Agentic-MME)."""
    ordinal: dict[str, int] = {}
    entries = []
    role_order: dict[str, int] = {}
    for ref in refs:
        role_order.setdefault(ref.get("role") or "document", len(role_order))
    ordered = sorted(
        enumerate(refs),
        key=lambda pair: (
            role_order[pair[1].get("role") or "document"],
            pair[1].get("position", 0),
            pair[0],
        ),
    )
    for _, ref in ordered:
        role = ref.get("role") or "document"
        index = ordinal.get(role, 0)
        ordinal[role] = index + 1
        sha = ref.get("sha256") or ""
        entries.append(
            {
                "sha256": sha,
                "path": ref.get("path", ""),
                "role": role,
                "index": index,
                "label": "query image" if role == "query" else f"{index_name} {index}",
                "image": images.get(sha),
            }
        )
    return entries


def attachment_label(row: Any) -> str:
    if row.origin == Origin.MODEL:
        return f"Prediction · {row.model_name}" if row.model_name else "Prediction"
    if isinstance(row, Plan) and row.is_alternative:
        return "Alternative plan"
    return "Ground truth"


def plan_view(plan: Plan) -> dict[str, Any]:
    steps = []
    for n, step in enumerate(plan.steps or []):
        if not isinstance(step, dict):
            steps.append(
                {"id": n, "name": "", "args": [("", node_segments(as_display_text(step)))]}
            )
            continue
        args = step.get("args") or {}
        if not isinstance(args, dict):
            args = {"": args}
        steps.append(
            {
                "id": step.get("id", n),
                "name": step.get("name") or step.get("tool") or step.get("tool_name") or "",
                "args": [(k, node_segments(as_display_text(v))) for k, v in args.items()],
            }
        )
    return {
        "obj": plan,
        "label": attachment_label(plan),
        "steps": steps,
        "raw": pretty_json(plan.raw),
    }


CHECKPOINT_KEYS = {"id", "axis", "description", "tools", "code_check", "visual_check"}


def checkpoint_view(cp: Any) -> dict[str, Any]:
    if not isinstance(cp, dict):
        return {"description": as_display_text(cp), "details": []}
    code = cp.get("code_check") or {}
    visual = cp.get("visual_check") or {}
    details = []
    if isinstance(code, dict):
        details += [
            (f"code_check.{k}", as_display_text(v))
            for k, v in code.items()
            if k not in ("bbox_2d",)
        ]
    for key, value in cp.items():
        if key not in CHECKPOINT_KEYS:
            details.append((key, as_display_text(value)))
    return {
        "id": cp.get("id", ""),
        "axis": str(cp.get("axis", "")),
        "description": cp.get("description", ""),
        "tools": cp.get("tools") or [],
        "bbox": code.get("bbox_2d") if isinstance(code, dict) else None,
        "question": visual.get("question", "") if isinstance(visual, dict) else "",
        "expected": visual.get("expected_answer", "") if isinstance(visual, dict) else "",
        "details": details,
    }


def _box_of(value: Any) -> list[float] | None:
    """A 0-1000 box ``[x1, y1, x2, y2]`` with x1 < x2 and y1 < y2, else None."""
    if not isinstance(value, list | tuple) or len(value) != 4:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    x1, y1, x2, y2 = (max(0.0, min(1000.0, float(v))) for v in value)
    return [x1, y1, x2, y2] if x1 < x2 and y1 < y2 else None


def checkpoint_visual(
    cp: Any, entries: list[dict[str, Any]], images: dict[str, Image]
) -> dict[str, Any] | None:
    """What a visual checkpoint asks about, as pictures: its crop (the input image at
    ``code_check.image_index`` cut to ``bbox_2d`` on the 0-1000 scale, in the source image's
    pixels for an SVG view box) and the ground-truth artifact stored for it
    (``reference_image``). ``entries`` are the item's images (``image_entries``) and
    ``images`` the stored images the viewer may see: an image outside them is left out. None
    when the checkpoint shows nothing."""
    if not isinstance(cp, dict):
        return None
    raw_code = cp.get("code_check")
    code: dict[str, Any] = raw_code if isinstance(raw_code, dict) else {}
    out: dict[str, Any] = {}
    box = _box_of(code.get("bbox_2d"))
    index = code.get("image_index", 0)
    source = next(
        (
            e
            for e in entries
            if e["role"] in ("query", "input") and e["index"] == index and e["image"] is not None
        ),
        None,
    )
    if box is not None and source is not None:
        width, height = source["image"].width, source["image"].height
        x1, y1, x2, y2 = (
            round(box[0] * width / 1000),
            round(box[1] * height / 1000),
            round(box[2] * width / 1000),
            round(box[3] * height / 1000),
        )
        out["crop"] = {
            "source": source,
            "width": width,
            "height": height,
            "x": x1,
            "y": y1,
            "w": max(1, x2 - x1),
            "h": max(1, y2 - y1),
        }
    stored = cp.get("reference_image")
    sha = stored.get("sha256") if isinstance(stored, dict) else None
    if isinstance(sha, str) and sha in images:
        out["artifact"] = {
            "sha256": sha,
            "path": "",
            "role": "artifact",
            "label": f"ground truth of {cp.get('id') or 'this step'}",
            "image": images[sha],
        }
    return out or None


def trajectory_view(traj: Trajectory, images: dict[str, Image]) -> dict[str, Any]:
    entries = image_entries(traj.image_refs or [], images, "image_index")
    by_path = {e["path"]: e for e in entries if e["path"]}

    def produced(path: str) -> dict[str, Any] | None:
        if not path:
            return None
        path = path.replace("\\", "/")
        if path in by_path:
            return by_path[path]
        for ref_path, entry in by_path.items():
            if ref_path.endswith("/" + path.lstrip("./")) or path.endswith("/" + ref_path):
                return entry
        return None

    steps = []
    for n, step in enumerate(traj.steps or []):
        if not isinstance(step, dict):
            steps.append(
                {"index": n, "tool": "", "args": [("", as_display_text(step))], "output": []}
            )
            continue
        raw_output = step.get("output")
        output: dict[str, Any] = raw_output if isinstance(raw_output, dict) else {}
        out_path = str(output.get("output_path", "") or "")
        image = produced(out_path)
        if image is not None and output.get("new_image_index") is not None:
            image = {**image, "label": f"image_index {output['new_image_index']}"}
        steps.append(
            {
                "index": step.get("index", n),
                "tool": step.get("tool_name") or step.get("name") or "",
                "turn": step.get("turn"),
                "args": [(k, as_display_text(v)) for k, v in (step.get("arguments") or {}).items()]
                if isinstance(step.get("arguments"), dict)
                else [("", as_display_text(step.get("arguments", "")))],
                "output": [
                    (k, as_display_text(v)) for k, v in output.items() if k not in ("output_path",)
                ],
                "output_path": out_path,
                "image": image,
            }
        )
    orderings = []
    for oc in traj.ordering_constraints or []:
        if isinstance(oc, dict):
            orderings.append(
                {
                    "id": oc.get("id", ""),
                    "sequence": [str(s) for s in oc.get("sequence") or []],
                    "max_gap": oc.get("max_gap"),
                }
            )
    return {
        "obj": traj,
        "label": "Run" + (f" · {traj.model_name}" if traj.model_name else "")
        if traj.origin == Origin.MODEL
        else "Reference trajectory",
        "checkpoints": [checkpoint_view(cp) for cp in traj.checkpoints or []],
        "orderings": orderings,
        "efficiency": [(k, as_display_text(v)) for k, v in (traj.efficiency or {}).items()],
        "steps": steps,
        "images": entries,
        "raw": pretty_json(traj.raw),
    }


def item_view(
    item: Item, images: dict[str, Image], index_name: str = "img_index"
) -> dict[str, Any]:
    entries = image_entries(item.image_refs or [], images, index_name)
    by_path = {e["path"]: e for e in entries if e["path"]}
    documents = []
    for n, doc in enumerate(item.documents or []):
        if isinstance(doc, dict):
            paths = doc.get("images") or []
            documents.append(
                {
                    "n": n,
                    "text": as_display_text(doc.get("text", "")),
                    "images": [
                        by_path.get(p) or {"path": p, "sha256": "", "label": ""}
                        for p in paths
                        if isinstance(p, str)
                    ],
                }
            )
        else:
            documents.append({"n": n, "text": as_display_text(doc), "images": []})
    rubric = []
    for n, criterion in enumerate(item.rubric or []):
        if isinstance(criterion, dict):
            rubric.append(
                (
                    criterion.get("key", f"r{n + 1}"),
                    as_display_text(criterion.get("text", criterion)),
                )
            )
        else:
            rubric.append((f"r{n + 1}", as_display_text(criterion)))
    return {
        "documents": documents,
        "images": entries,
        "query_images": [e for e in entries if e["role"] in ("query", "input")],
        "constraints": [(k, as_display_text(v)) for k, v in (item.constraints or {}).items()],
        "rubric": rubric,
        "raw": pretty_json(item.raw_source),
    }


def item_view_thumbs(view: dict[str, Any]) -> list[str]:
    """The content hashes of the thumbnails an item's panel draws from :func:`item_view`
    (its query and input images, then each document's), stored images only, each once, in
    the order they appear (templates/annotation/_item_panel.html)."""
    shas: list[str] = []
    entries = [*view["query_images"], *(e for doc in view["documents"] for e in doc["images"])]
    for entry in entries:
        sha = entry.get("sha256") or ""
        if entry.get("image") and sha and sha not in shas:
            shas.append(sha)
    return shas


INPUT_FILE = re.compile(
    r"^[\w\-./]+\.(?:jpe?g|png|gif|webp|bmp|flac|wav|mp3|mp4|txt|json|csv|pdf)$", re.I
)


def plan_input_files(plans: list[Plan]) -> list[str]:
    """File names the plans take as arguments (m&m's inputs: images, audio, text files), in
    order of first mention."""
    files: dict[str, None] = {}
    for plan in plans:
        for step in plan.steps or []:
            args = step.get("args") if isinstance(step, dict) else None
            for value in args.values() if isinstance(args, dict) else []:
                if isinstance(value, str) and INPUT_FILE.match(value.strip()):
                    files[value.strip()] = None
    return list(files)
