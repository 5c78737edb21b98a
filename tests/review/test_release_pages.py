"""Release pages: roles (annotator 403, outsider 404), the list's query count, the "New
release" form (made, refused with the field named), the manifest page, verify and the zip."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from benchmark.models import ItemStatus, Project
from review.releases.models import Release
from review.releases.services import release_create
from tests.factories import ItemFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def items(project: Project) -> None:
    for category in ("Academic", "Academic", "Travel"):
        ItemFactory(project=project, status=ItemStatus.VERIFIED, category=category)
    ItemFactory(project=project, status=ItemStatus.DRAFT)


def _list_url(project: Project) -> str:
    return reverse("review:release_list", kwargs={"project_id": project.pk})


def test_roles(
    project: Project, clients: dict[str, Client], users: dict[str, Any], items: None
) -> None:
    release = release_create(project=project, user=users["admin"], name="v1")
    urls = [
        _list_url(project),
        reverse("review:release_detail", kwargs={"project_id": project.pk, "pk": release.pk}),
        reverse("review:release_download", kwargs={"project_id": project.pk, "pk": release.pk}),
    ]
    for url in urls:
        assert clients["reviewer"].get(url).status_code == 200
        assert clients["annotator"].get(url).status_code == 403
        assert clients["outsider"].get(url).status_code == 404
    assert clients["annotator"].post(_list_url(project), {"name": "x"}).status_code == 403
    assert not Release.objects.filter(name="x").exists()


def test_list_page_query_count(
    project: Project,
    clients: dict[str, Client],
    users: dict[str, Any],
    items: None,
    django_assert_max_num_queries: Any,
) -> None:
    for n in range(3):
        release_create(project=project, user=users["admin"], name=f"r{n}")
    with django_assert_max_num_queries(8):
        response = clients["reviewer"].get(_list_url(project))
    body = response.content.decode()
    assert body.count("data-releases") == 1
    for n in range(3):
        assert f">r{n}</a>" in body
    assert "admin-user" in body


def test_new_release_form(project: Project, clients: dict[str, Client], items: None) -> None:
    response = clients["reviewer"].post(_list_url(project), {"name": "First", "status": "verified"})
    release = Release.objects.get(project=project)
    assert response.status_code == 302
    assert response["Location"].endswith(f"/releases/{release.pk}/")
    assert release.item_count == 3 and release.created_by is not None
    again = clients["reviewer"].post(_list_url(project), {"name": "First", "status": "verified"})
    assert again.status_code == 200
    assert "already has a release named" in again.content.decode()
    empty = clients["reviewer"].post(_list_url(project), {"name": "", "status": "all"})
    assert empty.status_code == 200 and "This field is required" in empty.content.decode()
    everything = clients["admin"].post(
        _list_url(project), {"name": "All", "status": "all"}, HTTP_HX_REQUEST="true"
    )
    assert everything.status_code == 200 and everything["HX-Redirect"].endswith("/")
    assert Release.objects.get(name="All").item_count == 4


def test_detail_verify_and_download(
    project: Project,
    clients: dict[str, Client],
    users: dict[str, Any],
    items: None,
    django_assert_max_num_queries: Any,
) -> None:
    release = release_create(project=project, user=users["admin"], name="Shown")
    kwargs = {"project_id": project.pk, "pk": release.pk}
    with django_assert_max_num_queries(7):
        response = clients["reviewer"].get(reverse("review:release_detail", kwargs=kwargs))
    detail = response.content.decode()
    assert "provenance.jsonl" in detail and release.manifest["files"][0]["sha256"] in detail
    verify = reverse("review:release_verify", kwargs=kwargs)
    assert "data-verify-ok" in clients["reviewer"].post(verify).content.decode()
    (Path(release.path) / "README.md").write_text("tampered")
    failed = clients["reviewer"].post(verify, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="check")
    assert (
        "README.md: size" in failed.content.decode()
        and "data-verify-failed" in failed.content.decode()
    )
    response = clients["reviewer"].get(reverse("review:release_download", kwargs=kwargs))
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    names = archive.namelist()
    assert any(n.endswith("/manifest.json") for n in names)
    assert any(n.endswith("/provenance.jsonl") for n in names)


def test_large_release_runs_as_a_job(
    project: Project,
    clients: dict[str, Client],
    items: None,
    monkeypatch: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from benchmark.models import Job, JobStatus
    from review.releases import services

    monkeypatch.setattr(services, "RELEASE_JOB_MIN_ITEMS", 2)
    with django_capture_on_commit_callbacks(execute=True):
        response = clients["reviewer"].post(
            _list_url(project), {"name": "Big", "status": "verified"}
        )
    job = Job.objects.get(kind=services.RELEASE_KIND)
    assert response.status_code == 302 and response["Location"].endswith(f"/jobs/{job.pk}/")
    assert job.status == JobStatus.SUCCEEDED, job.error
    release = Release.objects.get(project=project, name="Big")
    assert job.result == {"release_id": release.pk, "project_id": project.pk, "number": 1}
    page = clients["reviewer"].get(response["Location"]).content.decode()
    assert (
        reverse("review:release_detail", kwargs={"project_id": project.pk, "pk": release.pk})
        in page
    )
    # Running the job again writes nothing new.
    services.release_create_job(job=job, progress=lambda **kw: None)
    assert Release.objects.filter(project=project).count() == 1
    # A taken name is refused on the form, before any job starts.
    again = clients["reviewer"].post(_list_url(project), {"name": "Big", "status": "verified"})
    assert again.status_code == 200 and Job.objects.filter(kind=services.RELEASE_KIND).count() == 1


def test_item_changed_since_release_and_compare(
    project: Project, clients: dict[str, Client], users: dict[str, Any], items: None
) -> None:
    from benchmark.models import Item

    first, second, third = Item.objects.filter(project=project, status="verified")
    state_url = reverse(
        "review:item_release_state", kwargs={"project_id": project.pk, "item_id": first.pk}
    )
    assert "data-release-none" in clients["reviewer"].get(state_url).content.decode()
    v1 = release_create(project=project, user=users["admin"], name="one")
    assert "data-release-unchanged" in clients["reviewer"].get(state_url).content.decode()
    assert clients["annotator"].get(state_url).status_code == 403
    assert clients["outsider"].get(state_url).status_code == 404

    first.query = "Edited after v1"
    first.save()
    third.status = "in_review"
    third.save()
    body = clients["reviewer"].get(state_url).content.decode()
    assert "data-release-changed" in body and "v1" in body
    item_page = (
        clients["reviewer"]
        .get(
            reverse("benchmark:item_detail", kwargs={"project_id": project.pk, "item_id": first.pk})
        )
        .content.decode()
    )
    assert state_url in item_page

    added = ItemFactory(project=project, status=ItemStatus.VERIFIED, external_id="new-one")
    v2 = release_create(project=project, user=users["admin"], name="two")
    assert v2.number == 2
    assert "data-release-unchanged" in clients["reviewer"].get(state_url).content.decode()
    compare = reverse("review:release_compare", kwargs={"project_id": project.pk})
    page = clients["reviewer"].get(compare, {"old": v1.pk, "new": v2.pk}).content.decode()
    assert "1 added, 1 removed, 1 changed, 1 unchanged" in page
    assert f"<code>{added.external_id}</code>" in page
    assert (
        f"<code>{third.external_id}</code>" in page and f"<code>{first.external_id}</code>" in page
    )
    assert second.external_id not in page.split('data-compare="added"')[1]
    bad = clients["reviewer"].get(compare, {"old": "999999", "new": v2.pk})
    assert bad.status_code == 200 and "Select a valid choice" in bad.content.decode()
    assert clients["annotator"].get(compare).status_code == 403
