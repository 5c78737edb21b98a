"""A drafting reply with a NUL character (``\\x00``), on PostgreSQL (whose text and ``jsonb``
columns refuse NUL) as on SQLite: the model call keeps the reply exactly, the job's result
quotes it exactly, and the candidates people read are the queries without the NUL. Before,
PostgreSQL failed the draft ("the draft could not be saved") and lost the call's record."""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotation.model_drafts.models import DraftCandidate
from benchmark.fields import NUL_MARK, NulJSONField
from benchmark.llm import services as llm_services
from benchmark.models import Job, ModelCall, Project
from tests.annotation.test_model_drafts_services import QUERIES, draft_queries
from tests.annotation.test_model_drafts_services import atp as atp  # noqa: F401 - fixture
from tests.llm_server import FakeModelServer

pytestmark = pytest.mark.django_db


def test_a_drafting_reply_with_a_nul_is_kept_and_read_without_it(
    atp: Project,  # noqa: F811
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    reply = "Here:\x00 " + json.dumps(["ripe\x00 avocado?", *QUERIES[1:]])
    model_server.answer = reply
    draft = draft_queries(atp, users["annotator"], django_capture_on_commit_callbacks)
    assert (draft.status, draft.error) == ("ready", "")
    contents = [c.content for c in DraftCandidate.objects.filter(draft=draft).order_by("position")]
    assert contents == ["ripe avocado?", *QUERIES[1:]]
    assert ModelCall.objects.get().answer == reply


def test_a_model_call_job_keeps_a_nul_in_its_result(
    atp: Project,  # noqa: F811
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    model_server.answer = "a\x00b"
    with django_capture_on_commit_callbacks(execute=True):
        job = llm_services.model_call_start(
            project=atp, user=users["admin"], purpose="test", prompt="say a, b"
        )
    job = Job.objects.get(pk=job.pk)
    assert job.status == "succeeded", job.error
    assert job.result["answer"] == "a\x00b"
    assert ModelCall.objects.get().answer == "a\x00b"


def _strings(value: Any) -> str:
    if isinstance(value, dict):
        return "".join(str(k) + _strings(v) for k, v in value.items())
    if isinstance(value, list):
        return "".join(_strings(v) for v in value)
    return value if isinstance(value, str) else ""


@pytest.mark.parametrize(
    "value",
    [
        {"answer": "a\x00b", "n": 3, "list": ["x\x00", None, 1.5], "k\x00ey": {"deep": "\x00"}},
        {"plain": "text", "mark": NUL_MARK + "looks escaped"},
        ["\x00"],
        "only\x00text",
        None,
    ],
)
def test_nul_json_round_trips_any_value(value: Any) -> None:
    field = NulJSONField()
    stored = field.get_prep_value(value)
    assert "\x00" not in _strings(stored)  # what jsonb is given holds no NUL
    assert field.from_db_value(json.dumps(stored), None, None) == value
