"""Issue 13's "done when", end to end on the four demo projects: load the demo, verify some
items of each through the reviewer's status service, release each, check each release
against its manifest, catch a changed byte in a data file, edit an item (the item page says
it changed since v1, naming the field), release again and compare."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils.text import slugify

from benchmark.items.services import item_update
from benchmark.models import Item, ItemStatus, Project
from benchmark.projects.services import item_status_set
from review.demo import DEMO_PROJECTS, demo_load
from review.releases import selectors
from review.releases.services import release_create, release_verify

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

VERIFIED_PER_PROJECT = 3


@pytest.fixture(autouse=True)
def _fast_and_isolated(settings: Any, tmp_path: Path) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def test_verify_release_check_edit_release_again_and_compare_on_every_demo_project(
    tmp_path: Path,
) -> None:
    demo_load()
    users = get_user_model().objects
    reviewer, admin = users.get(username="reviewer"), users.get(username="admin")
    browser = Client()
    browser.force_login(reviewer)
    assert len(DEMO_PROJECTS) == 4
    for spec in DEMO_PROJECTS:
        project = Project.objects.get(name=spec.name)
        out = tmp_path / slugify(spec.name)
        chosen = list(project.items.order_by("position", "id")[:VERIFIED_PER_PROJECT])
        for item in chosen:
            item_status_set(item=item, user=reviewer, status=ItemStatus.VERIFIED, reason="checked")
        verified = set(
            project.items.filter(status=ItemStatus.VERIFIED).values_list("pk", flat=True)
        )
        assert {i.pk for i in chosen} <= verified, spec.name

        v1 = release_create(project=project, user=reviewer, name="first", out_dir=out / "v1")
        assert v1.label == "v1" and v1.item_count == len(verified), spec.name
        assert {pk for pk, _ in v1.fingerprints} == verified, spec.name
        check = release_verify(path=v1.path)
        assert check.ok, (spec.name, check.problems)

        data_file = next(f["path"] for f in v1.manifest["files"] if f["path"].startswith("data/"))
        _flip_a_byte(Path(v1.path) / data_file)
        check = release_verify(path=v1.path)
        assert not check.ok, spec.name
        assert check.problems == [f"{data_file}: sha256 differs from the manifest"], spec.name

        edited = chosen[0]
        item_update(
            item=edited,
            user=admin,
            changes={"query": f"{edited.query} (edited after v1)"},
            base_version=None,
        )
        card = reverse(
            "review:item_release_state",
            kwargs={"project_id": project.pk, "item_id": edited.pk},
        )
        item_page = browser.get(
            reverse(
                "benchmark:item_detail", kwargs={"project_id": project.pk, "item_id": edited.pk}
            )
        )
        assert item_page.status_code == 200 and card in item_page.content.decode(), spec.name
        body = browser.get(card).content.decode()
        assert "Changed since release" in body and "v1 (first)" in body, spec.name
        assert "<span data-release-changed-fields>query</span>" in body, (spec.name, body)

        v2 = release_create(project=project, user=reviewer, name="second", out_dir=out / "v2")
        assert release_verify(path=v2.path).ok, spec.name
        diff = selectors.release_compare(user=reviewer, project=project, old=v1.pk, new=v2.pk)
        assert diff.added == [] and diff.removed == [], spec.name
        assert [(c.name, c.fields) for c in diff.changed_items] == [
            (Item.objects.get(pk=edited.pk).external_id, ["query"])
        ], spec.name
        assert diff.same == len(verified) - 1, spec.name
        page = browser.get(
            reverse("review:release_compare", kwargs={"project_id": project.pk}),
            {"old": v1.pk, "new": v2.pk},
        ).content.decode()
        assert "<span data-changed-fields>query</span>" in page, spec.name
