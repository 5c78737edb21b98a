"""One versioning mechanism (issue 23): every version row is a ``VersionRow``, every save goes
through ``version_save``, and a stale save is one ``StaleVersion`` (409) carrying the version
that is newest."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.db import IntegrityError

from benchmark.exceptions import Conflict, ValidationFailed
from benchmark.models import ItemVersion
from benchmark.versions import StaleVersion, VersionRow, version_save
from tests.factories import ItemFactory, UserFactory

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
APPS = ("benchmark", "annotation", "review")


def _create(item: Any, user: Any) -> Any:
    def create(number: int, base: int | None, written: Any) -> ItemVersion:
        return ItemVersion.objects.create(
            item=item, number=number, base_number=base, author=user, note=str(written or "")
        )

    return create


def _stale(current: ItemVersion) -> StaleVersion:
    return StaleVersion(f"version {current.number} is newer", current=current)


def test_the_next_version_is_made_on_the_newest_and_numbered_after_it() -> None:
    item, user = ItemFactory(), UserFactory()
    versions = ItemVersion.objects.filter(item=item)
    first = version_save(
        latest=None, versions=versions, base_number=0, stale=_stale, create=_create(item, user)
    )
    assert (first.number, first.base_number) == (1, None)
    second = version_save(
        latest=first,
        versions=versions,
        base_number=1,
        stale=_stale,
        before=lambda: "written first",
        create=_create(item, user),
    )
    assert (second.number, second.base_number, second.note) == (2, 1, "written first")


def test_a_save_on_an_older_version_is_refused_with_the_newest_and_writes_nothing() -> None:
    item, user = ItemFactory(), UserFactory()
    versions = ItemVersion.objects.filter(item=item)
    v1 = version_save(
        latest=None, versions=versions, base_number=None, stale=_stale, create=_create(item, user)
    )
    v2 = version_save(
        latest=v1, versions=versions, base_number=1, stale=_stale, create=_create(item, user)
    )
    wrote: list[str] = []
    with pytest.raises(StaleVersion) as caught:
        version_save(
            latest=v2,
            versions=versions,
            base_number=1,
            stale=_stale,
            before=lambda: wrote.append("the thing"),
            create=_create(item, user),
        )
    assert caught.value.status_code == 409 and caught.value.current == v2
    assert wrote == [] and versions.count() == 2
    # Opened when there was nothing (0), while a version exists: stale too.
    with pytest.raises(StaleVersion):
        version_save(
            latest=v2, versions=versions, base_number=0, stale=_stale, create=_create(item, user)
        )
    # A base given for a thing with no version at all: the caller's "missing" error.
    other = ItemFactory()
    with pytest.raises(ValidationFailed, match="no version 3"):
        version_save(
            latest=None,
            versions=ItemVersion.objects.filter(item=other),
            base_number=3,
            stale=_stale,
            missing=lambda: ValidationFailed("no version 3"),
            create=_create(other, user),
        )


def test_two_saves_on_the_same_version_the_second_gets_the_first_ones_version() -> None:
    """The race: both read version 1 as newest; the other save's row lands first, so this one
    hits the unique number and answers 409 with the version that won."""
    item, user, other = ItemFactory(), UserFactory(), UserFactory()
    versions = ItemVersion.objects.filter(item=item)
    v1 = version_save(
        latest=None, versions=versions, base_number=None, stale=_stale, create=_create(item, user)
    )
    theirs = ItemVersion.objects.create(item=item, number=2, base_number=1, author=other)
    with pytest.raises(StaleVersion) as caught:
        version_save(
            latest=v1, versions=versions, base_number=1, stale=_stale, create=_create(item, user)
        )
    assert caught.value.current == theirs
    assert list(versions.values_list("number", "author")) == [(1, user.pk), (2, other.pk)]


def test_an_integrity_error_with_no_version_at_all_is_a_plain_conflict() -> None:
    item = ItemFactory()

    def create(number: int, base: int | None, written: Any) -> Any:
        raise IntegrityError("someone else's row, then rolled back")

    with pytest.raises(Conflict, match="under way") as caught:
        version_save(
            latest=None,
            versions=ItemVersion.objects.filter(item=item),
            base_number=None,
            stale=_stale,
            create=create,
        )
    assert not isinstance(caught.value, StaleVersion)


def test_every_version_table_is_a_version_row() -> None:
    """Items, plans, reference trajectories, answers and judge templates keep their versions
    in rows of the one abstract row."""
    tables = {m._meta.label for m in apps.get_models() if m._meta.model_name.endswith("version")}
    assert tables >= {
        "benchmark.ItemVersion",
        "annotation.PlanVersion",
        "annotation.TrajectoryVersion",
        "annotation.ResponseVersion",
        "review.JudgeTemplateVersion",
    }
    assert {t for t in tables if not issubclass(apps.get_model(t), VersionRow)} == set()


def test_a_stale_save_has_one_exception_class() -> None:
    """No module defines its own version conflict any more: ``StaleVersion`` is the only
    subclass of ``Conflict`` in the apps."""
    found = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name) and b.id == "Conflict" for b in node.bases
                ):
                    found.append(f"{path.relative_to(ROOT)}:{node.name}")
    assert sorted(found) == ["benchmark/versions.py:StaleVersion"]
