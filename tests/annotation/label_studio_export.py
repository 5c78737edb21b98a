"""Label Studio 1.23's normal JSON export (the project's Export button, "JSON"), built for tests.

Each task is written with the keys, in the order, that Label Studio 1.23.2's JSON export
writes for a task imported through its API (checked against a real export of that version:
``id``, ``annotations``, ``drafts``, ``predictions``, ``data``, ``meta``, ..., ``allow_skip``,
..., ``comment_authors``), and each annotation with ``completed_by`` as the annotator's
numeric Label Studio user id, as the Export button writes it (also
https://labelstud.io/guide/task_format.html: ``"completed_by": 10``). Only an API snapshot
that expands the field writes an object (``{"id", "email", "first_name", "last_name"}``);
:func:`expanded` turns an export into that shape.
"""

from __future__ import annotations

import copy
import zlib
from typing import Any

CREATED = "2025-05-12T09:14:03.118290Z"


def _annotation(ann_id: int, task_id: int, project: int, user: int, result: list) -> dict:
    return {
        "id": ann_id,
        "completed_by": user,
        "result": result,
        "was_cancelled": False,
        "ground_truth": False,
        "created_at": CREATED,
        "updated_at": CREATED,
        "draft_created_at": None,
        "lead_time": 11.734,
        "prediction": {},
        "result_count": len(result),
        "unique_id": f"6c1a3f3e-0b7d-4c1e-9a51-{ann_id:012d}",
        "import_id": None,
        "last_action": None,
        "bulk_created": False,
        "task": task_id,
        "project": project,
        "updated_by": user,
        "parent_prediction": None,
        "parent_annotation": None,
        "last_created_by": None,
    }


def choice(value: str, *, from_name: str = "verdict", to_name: str = "query") -> dict:
    """One ``choices`` result as the labeling UI saves it."""
    return {
        "value": {"choices": [value]},
        "id": f"r{zlib.crc32(f'{from_name}:{value}'.encode()):08x}",
        "from_name": from_name,
        "to_name": to_name,
        "type": "choices",
        "origin": "manual",
    }


def text(value: str, *, from_name: str = "comment", to_name: str = "query") -> dict:
    return {
        "value": {"text": [value]},
        "id": f"t{zlib.crc32(f'{from_name}:{value}'.encode()):08x}",
        "from_name": from_name,
        "to_name": to_name,
        "type": "textarea",
        "origin": "manual",
    }


def normal_export(
    datas: list[dict[str, Any]],
    annotations: dict[int, list[tuple[int, list[dict]]]],
    *,
    project: int = 3,
    first_task_id: int = 41,
) -> list[dict[str, Any]]:
    """A Label Studio JSON export of one task per ``datas`` entry (its ``data``), with
    ``annotations[i]`` = [(Label Studio user id, result list), ...] on the i-th task."""
    tasks = []
    ann_id = 100
    for i, data in enumerate(datas):
        task_id = first_task_id + i
        anns = []
        for user, result in annotations.get(i, []):
            ann_id += 1
            anns.append(_annotation(ann_id, task_id, project, user, result))
        tasks.append(
            {
                "id": task_id,
                "annotations": anns,
                "drafts": [],
                "predictions": [],
                "data": copy.deepcopy(data),
                "meta": {},
                "created_at": CREATED,
                "updated_at": CREATED,
                "allow_skip": True,
                "inner_id": i + 1,
                "total_annotations": len(anns),
                "cancelled_annotations": 0,
                "total_predictions": 0,
                "comment_count": 0,
                "unresolved_comment_count": 0,
                "last_comment_updated_at": None,
                "project": project,
                "updated_by": anns[-1]["completed_by"] if anns else None,
                "comment_authors": [],
            }
        )
    return tasks


def expanded(tasks: list[dict[str, Any]], emails: dict[int, str]) -> list[dict[str, Any]]:
    """``tasks`` as an API snapshot that expands ``completed_by`` writes them."""
    out = copy.deepcopy(tasks)
    for task in out:
        for annotation in task["annotations"]:
            uid = annotation["completed_by"]
            annotation["completed_by"] = {
                "id": uid,
                "email": emails.get(uid, ""),
                "first_name": "",
                "last_name": "",
            }
    return out
