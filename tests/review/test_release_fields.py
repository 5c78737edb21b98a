"""Releases name what changed: per-field fingerprints let a comparison (page, selector and
``release --compare``) list, for each changed item, the fields of its record that changed;
the item page's Releases card names them too. m&m's tool-balanced subset can be released
as such (form and command), and other projects are refused."""

from __future__ import annotations

import csv
import io
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from benchmark.exceptions import ValidationFailed
from benchmark.models import Item, ItemStatus, Plan, Project
from review.plan_scoring.services import project_balanced_subset
from review.releases import selectors
from review.releases.models import Release
from review.releases.services import release_create
from tests.factories import ItemFactory, MembershipFactory, PlanFactory, ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def three(project: Project) -> list[Item]:
    items = [ItemFactory(project=project, status=ItemStatus.VERIFIED) for _ in range(3)]
    for item in items:
        PlanFactory(item=item)
    return items


def _edit(three: list[Item]) -> None:
    """The query of the first item, the tool calls (plan steps) of the second."""
    first, second, _ = three
    first.query = "An edited query"
    first.save()
    plan = Plan.objects.get(item=second)
    plan.steps = [{"id": 0, "name": "object detection", "args": {"image": "1.jpg"}}]
    plan.save()


def test_compare_names_exactly_the_fields_that_changed(
    project: Project, users: dict[str, Any], clients: dict[str, Client], three: list[Item]
) -> None:
    v1 = release_create(project=project, user=users["admin"], name="one")
    assert set(v1.field_fingerprints["items"]) == {str(i.pk) for i in three}
    _edit(three)
    v2 = release_create(project=project, user=users["admin"], name="two")

    result = selectors.release_compare(
        user=users["reviewer"], project=project, old=v1.pk, new=v2.pk
    )
    fields = {c.name: c.fields for c in result.changed_items}
    assert fields == {three[0].external_id: ["query"], three[1].external_id: ["plans"]}
    assert result.same == 1 and result.field_note == ""

    url = reverse("review:release_compare", kwargs={"project_id": project.pk})
    page = clients["reviewer"].get(url, {"old": v1.pk, "new": v2.pk}).content.decode()
    changed = page.split('data-compare="changed"')[1]
    assert f"<code>{three[0].external_id}</code>: <span data-changed-fields>query</span>" in changed
    assert f"<code>{three[1].external_id}</code>: <span data-changed-fields>plans</span>" in changed
    assert three[2].external_id not in changed


def test_a_release_without_field_fingerprints_compares_by_item_with_a_note(
    project: Project, users: dict[str, Any], clients: dict[str, Client], three: list[Item]
) -> None:
    v1 = release_create(project=project, user=users["admin"], name="one")
    Release.objects.filter(pk=v1.pk).update(field_fingerprints={})  # as made before them
    _edit(three)
    v2 = release_create(project=project, user=users["admin"], name="two")
    result = selectors.release_compare(
        user=users["reviewer"], project=project, old=v1.pk, new=v2.pk
    )
    assert sorted(result.changed) == sorted([three[0].external_id, three[1].external_id])
    assert all(c.fields is None for c in result.changed_items)
    assert "v1 recorded no per-field fingerprints" in result.field_note
    url = reverse("review:release_compare", kwargs={"project_id": project.pk})
    page = clients["reviewer"].get(url, {"old": v1.pk, "new": v2.pk}).content.decode()
    assert "data-compare-note" in page and "data-changed-fields" not in page


def test_item_card_names_the_fields_changed_since_the_release(
    project: Project, users: dict[str, Any], clients: dict[str, Client], three: list[Item]
) -> None:
    release_create(project=project, user=users["admin"], name="one")
    _edit(three)
    url = reverse(
        "review:item_release_state", kwargs={"project_id": project.pk, "item_id": three[1].pk}
    )
    body = clients["reviewer"].get(url).content.decode()
    assert "Changed since release" in body
    assert "<span data-release-changed-fields>plans</span>" in body


def test_compare_command(project: Project, users: dict[str, Any], three: list[Item]) -> None:
    release_create(project=project, user=users["admin"], name="one")
    _edit(three)
    release_create(project=project, user=users["admin"], name="two")
    out = StringIO()
    call_command("release", "--project", project.name, "--compare", "v1", "v2", stdout=out)
    text = out.getvalue()
    assert "0 added, 0 removed, 2 changed, 1 unchanged" in text
    assert f"~ {three[0].external_id}: query" in text
    assert f"~ {three[1].external_id}: plans" in text
    with pytest.raises(CommandError, match="--compare: no release v9"):
        call_command("release", "--project", project.name, "--compare", "v1", "v9")


# --------------------------------------------------------------------------- balanced subset


@pytest.fixture
def mms(users: dict[str, Any]) -> Project:
    """An m&m's project: 4 verified items that only caption, 2 that detect then caption, a
    draft; a 40% cap has to drop some captioning ones."""
    project = ProjectFactory(name="mms demo", kind="plan", data_format="mms")
    MembershipFactory(project=project, user=users["reviewer"], role="reviewer")
    for n in range(6):
        item = ItemFactory(project=project, status=ItemStatus.VERIFIED, external_id=f"m{n}")
        steps = [{"id": 0, "name": "image captioning", "args": {"image": "1.jpg"}}]
        if n >= 4:
            steps.insert(0, {"id": 0, "name": "object detection", "args": {"image": "1.jpg"}})
        PlanFactory(item=item, steps=steps)
    ItemFactory(project=project, status=ItemStatus.DRAFT, external_id="m-draft")
    return project


def _table2(release: Release) -> dict[str, str]:
    text = (Path(release.path) / "stats" / "mms_table2.csv").read_text()
    return {row["Item"]: row["Number"] for row in csv.DictReader(io.StringIO(text))}


def test_the_balanced_subset_is_released_as_such(
    mms: Project, users: dict[str, Any], tmp_path: Path
) -> None:
    subset, _ = project_balanced_subset(project=mms, cap=0.4, seed=3)
    assert 0 < len(subset.ids) < 6
    release = release_create(
        project=mms,
        user=users["reviewer"],
        name="balanced",
        subset="balanced",
        cap=0.4,
        seed=3,
        out_dir=tmp_path / "b",
    )
    released = {Item.objects.get(pk=pk).external_id for pk, _ in release.fingerprints}
    assert released == set(subset.ids) and release.item_count == len(subset.ids)
    expected = {"status": "verified", "subset": "balanced", "cap": 0.4, "seed": 3}
    assert release.filter == expected and release.manifest["filter"] == expected
    table = _table2(release)
    assert table["Raw examples"] == "7"
    assert table["Human verified examples"] == "6"
    assert table["Human verified & balanced examples"] == str(len(subset.ids))
    assert table["Counted over"] == f"human verified & balanced ({len(subset.ids)})"

    plain = release_create(project=mms, user=None, name="verified", out_dir=tmp_path / "v")
    assert plain.item_count == 6 and _table2(plain)["Human verified & balanced examples"] == "0"


def test_balanced_subset_refused_outside_mms_and_off_verified(
    project: Project, mms: Project, users: dict[str, Any], three: list[Item]
) -> None:
    with pytest.raises(ValidationFailed, match="tool-balanced subset is m&m's.*ATP-Bench"):
        release_create(project=project, user=users["admin"], name="b", subset="balanced")
    with pytest.raises(ValidationFailed, match="choose status verified"):
        release_create(project=mms, user=None, name="b", subset="balanced", status=None)
    assert not Release.objects.exists()


def test_balanced_subset_from_the_form_and_the_command(
    mms: Project, project: Project, clients: dict[str, Client], tmp_path: Path
) -> None:
    url = reverse("review:release_list", kwargs={"project_id": mms.pk})
    assert 'name="subset"' in clients["reviewer"].get(url).content.decode()
    atp_form = reverse("review:release_list", kwargs={"project_id": project.pk})
    assert 'name="subset"' not in clients["reviewer"].get(atp_form).content.decode()
    clients["reviewer"].post(
        url, {"name": "web", "status": "verified", "subset": "balanced", "cap": "40", "seed": "3"}
    )
    web = Release.objects.get(project=mms, name="web")
    assert web.filter["subset"] == "balanced" and web.filter["cap"] == 0.4

    out = StringIO()
    call_command(
        "release",
        "--project",
        mms.name,
        "--name",
        "cli",
        "--subset",
        "balanced",
        "--cap",
        "40",
        "--seed",
        "3",
        str(tmp_path / "cli"),
        stdout=out,
    )
    cli = Release.objects.get(project=mms, name="cli")
    assert cli.fingerprints == web.fingerprints and cli.filter == web.filter
    with pytest.raises(CommandError, match="tool-balanced subset is m&m's"):
        call_command(
            "release",
            "--project",
            project.name,
            "--name",
            "x",
            "--subset",
            "balanced",
            str(tmp_path / "x"),
        )


def test_a_large_balanced_release_runs_as_a_job_with_its_filter(
    mms: Project,
    clients: dict[str, Client],
    monkeypatch: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from benchmark.models import Job, JobStatus
    from review.releases import services

    monkeypatch.setattr(services, "RELEASE_JOB_MIN_ITEMS", 2)
    url = reverse("review:release_list", kwargs={"project_id": mms.pk})
    with django_capture_on_commit_callbacks(execute=True):
        clients["reviewer"].post(
            url, {"name": "job", "status": "verified", "subset": "balanced", "cap": "40"}
        )
    job = Job.objects.get(kind=services.RELEASE_KIND)
    assert job.status == JobStatus.SUCCEEDED, job.error
    release = Release.objects.get(project=mms, name="job")
    subset, _ = project_balanced_subset(project=mms, cap=0.4, seed=0)
    assert release.filter == {"status": "verified", "subset": "balanced", "cap": 0.4, "seed": 0}
    assert release.item_count == len(subset.ids) < 6


def test_the_compare_page_reads_a_fixed_number_of_queries(
    project: Project,
    users: dict[str, Any],
    clients: dict[str, Client],
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    url = reverse("review:release_compare", kwargs={"project_id": project.pk})

    def queries(n_items: int) -> int:
        Release.objects.all().delete()
        Item.objects.filter(project=project).delete()
        items = [ItemFactory(project=project, status=ItemStatus.VERIFIED) for _ in range(n_items)]
        v1 = release_create(project=project, user=users["admin"], name="one")
        Item.objects.filter(pk__in=[i.pk for i in items]).update(query="edited")
        v2 = release_create(project=project, user=users["admin"], name="two")
        with CaptureQueriesContext(connection) as ctx:
            page = clients["reviewer"].get(url, {"old": v1.pk, "new": v2.pk})
        assert page.content.decode().count("<span data-changed-fields>query</span>") == n_items
        return len(ctx.captured_queries)

    assert queries(2) == queries(12)
