"""Turn a format reader's ``ItemRecord`` into the item dict ``tables_for`` reads."""

from __future__ import annotations

import json
from typing import Any

from benchmark.formats import ItemRecord


def item_record_dict(record: ItemRecord, *, subset: bool = False) -> dict[str, Any]:
    """The Item fields of ``record`` with its responses, plans and trajectories; ``raw`` is the
    parsed source record (``{}`` when it is not a JSON object) and ``sha256`` is empty (a file
    read does not hash images)."""
    try:
        raw = json.loads(record.raw) if record.raw else {}
    except ValueError:
        raw = {}
    return {
        "external_id": record.external_id,
        "query": record.query,
        "category": record.category,
        "intent": record.intent,
        "documents": record.documents,
        "image_refs": [
            {"sha256": "", "role": i.role, "path": i.path, "position": i.position}
            for i in record.images
        ],
        "rubric": record.rubric,
        "constraints": record.constraints,
        "level": record.level,
        "domain": record.domain,
        "match_type": record.match_type,
        "status": record.status,
        "responses": [{"key": r.key, "text": r.text, "origin": r.origin} for r in record.responses],
        "plans": [
            {"key": p.key, "steps": p.steps, "is_alternative": p.is_alternative}
            for p in record.plans
        ],
        "trajectories": [
            {"key": t.key, "steps": t.steps, "checkpoints": t.checkpoints}
            for t in record.trajectories
        ],
        "subset": subset,
        "raw": raw if isinstance(raw, dict) else {},
    }
