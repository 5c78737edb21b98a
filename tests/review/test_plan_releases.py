"""m&m's on verified items: the tool-balanced subset page and scoring uploaded predictions."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from benchmark.builtin import toolsets_ensure
from benchmark.datasets import services
from benchmark.metrics.mms import read_gold, read_predictions, score_plans
from benchmark.models import Item, Project
from benchmark.plans.verify import toolset_from_mapping
from benchmark.toolsets.specs import plan_toolset
from tests.factories import MembershipFactory, UserFactory
from tests.shared_data import SHARED_DATA

pytestmark = pytest.mark.django_db


@pytest.fixture
def mms_project(client_for: Any) -> dict[str, Any]:
    toolset = toolsets_ensure()["mms"]
    project = Project.objects.create(name="mms", kind="plan", data_format="mms", toolset=toolset)
    services.dataset_import(project=project, path=SHARED_DATA / "mms" / "tasks.json")
    Item.objects.filter(project=project).update(status="verified")
    reviewer = UserFactory(username="rev")
    MembershipFactory(project=project, user=reviewer, role="reviewer")
    annotator = UserFactory(username="ann")
    MembershipFactory(project=project, user=annotator, role="annotator")
    return {"project": project, "rev": client_for(reviewer), "ann": client_for(annotator)}


def test_scoring_page_matches_the_metrics_module(mms_project: dict[str, Any]) -> None:
    project = mms_project["project"]
    upload = SimpleUploadedFile(
        "predictions.jsonl", (SHARED_DATA / "mms" / "predictions.jsonl").read_bytes()
    )
    page = mms_project["rev"].post(
        reverse("review:score_plans", args=[project.pk]),
        {"predictions": upload, "plan_format": "auto", "only_verified": "on"},
    )
    assert page.status_code == 200
    result = page.context["result"]
    gold, _ = read_gold(SHARED_DATA / "mms" / "tasks.json")
    expected = score_plans(
        gold,
        read_predictions(SHARED_DATA / "mms" / "predictions.jsonl"),
        toolset_from_mapping(plan_toolset(project.toolset)),
    )
    for key in (
        "tool_macro_f1",
        "argname_f1",
        "argvalue_f1",
        "edge_f1",
        "plan_tool_accuracy",
        "parse_rate",
        "verify_pass_rate",
        "n_invalid",
    ):
        assert result[key] == expected[key], key
    assert result["n_items"] == 15
    assert 0 < result["tool_macro_f1"] < 100
    assert str(result["tool_macro_f1"]) in page.content.decode()


def test_scoring_page_reports_a_broken_file(mms_project: dict[str, Any]) -> None:
    project = mms_project["project"]
    upload = SimpleUploadedFile("p.jsonl", b'{"id": 8, "prediction": []}\n{not json\n')
    page = mms_project["rev"].post(
        reverse("review:score_plans", args=[project.pk]),
        {"predictions": upload, "plan_format": "auto"},
    )
    assert page.status_code == 200
    assert "line 2 is not valid JSON" in page.content.decode()
    assert page.context["result"] is None


def test_balanced_subset_page(mms_project: dict[str, Any]) -> None:
    project = mms_project["project"]
    url = reverse("review:balance", args=[project.pk])
    page = mms_project["rev"].get(url, {"cap": "20", "seed": "1"})
    assert page.status_code == 200
    subset = page.context["subset"]
    assert 0 < len(subset.ids) <= 15
    total = sum(subset.after.values())
    assert max(subset.after.values()) / total <= 0.2 or not subset.met
    again = mms_project["rev"].get(url, {"cap": "20", "seed": "1", "download": "1"})
    assert again.json()["ids"] == subset.ids
    assert mms_project["ann"].get(url).status_code == 403
