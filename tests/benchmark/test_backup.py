"""``manage.py backup OUT`` and ``manage.py restore IN``: a round trip keeps every project's
export byte for byte and every row (judgments, versions, audit events, jobs); a damaged,
tampered or foreign backup, or a database or storage that holds data, is refused before
anything is written. Runs on the test database's engine (SQLite, or PostgreSQL with
DATABASE_URL); tests/benchmark/test_backup_online.py runs the commands while others write."""

from __future__ import annotations

import json
import shutil
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from annotation.judgment_tasks.models import JudgmentTask
from benchmark.backup import databases
from benchmark.backup.manifest import CHECKSUM, MANIFEST, manifest_read, manifest_write
from benchmark.datasets.services import dataset_export
from benchmark.items.services import item_update
from benchmark.models import Item, JobStatus, Project
from benchmark.storage import storage_files
from review.demo import demo_load
from tests.benchmark.test_backup_manifest import fake_tool
from tests.factories import (
    AuditEventFactory,
    ItemVersionFactory,
    JobFactory,
    JudgmentFactory,
    OutcomeFactory,
    PlanVersionFactory,
    ResponseVersionFactory,
    TrajectoryVersionFactory,
)

pytestmark = pytest.mark.django_db(transaction=True)


# --------------------------------------------------------------------------- helpers


def _exports(tmp: Path) -> dict[str, dict[str, bytes]]:
    """Every project's export in its own format: project name -> {relative path: bytes}."""
    out: dict[str, dict[str, bytes]] = {}
    for project in Project.objects.order_by("name"):
        folder = tmp / f"export-{project.pk}"
        dataset_export(project=project, out=folder)
        out[project.name] = {
            p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*"))
            if p.is_file()
        }
    return out


#: Compared row by row, every field (every other model: by its number of rows).
RECORDS = [
    "annotation.Judgment",
    "annotation.Outcome",
    "benchmark.ItemVersion",
    "annotation.ResponseVersion",
    "annotation.PlanVersion",
    "annotation.TrajectoryVersion",
    "benchmark.AuditEvent",
    "benchmark.Job",
    "benchmark.Item",
]


def _rows(label: str) -> list[dict[str, Any]]:
    model = apps.get_model(label)
    return list(model._default_manager.order_by("pk").values())


def _counts() -> dict[str, int]:
    return {
        m._meta.label: m._default_manager.count()
        for m in apps.get_models(include_auto_created=True)
        if m._meta.managed
    }


def _media() -> dict[str, bytes]:
    return {name: default_storage.open(name).read() for name in storage_files("")}


def _work() -> None:
    """The demo, then what a team adds to it: an edited item (a version), judgments and an
    outcome, answer, plan and trajectory versions, audit events and jobs."""
    demo_load()
    admin = get_user_model().objects.get(username="admin")
    item = Item.objects.filter(project__name="ATP-Bench demo").order_by("pk").first()
    assert item is not None
    item_update(
        item=item, user=admin, changes={"query": "Edited after the demo"}, base_version=None
    )
    task = JudgmentTask.objects.filter(project=item.project).order_by("pk").first()
    assert task is not None
    raters = list(get_user_model().objects.filter(username__startswith="annotator"))
    for other in Item.objects.filter(project=item.project).order_by("pk")[:3]:
        for rater in raters[:2]:
            JudgmentFactory(task=task, item=other, user=rater, value=1)
    OutcomeFactory(task=task, item=item, verdict="accepted")
    ItemVersionFactory(item=item, number=99, author=admin)
    ResponseVersionFactory()
    PlanVersionFactory()
    TrajectoryVersionFactory()
    AuditEventFactory(actor=admin, project=item.project, target="annotator1")
    JobFactory(project=item.project, created_by=admin, status=JobStatus.SUCCEEDED)
    JobFactory(project=item.project, created_by=admin, status=JobStatus.FAILED, error="boom")


def _empty_everything() -> None:
    """What a new machine has: a migrated database without data, an empty media folder."""
    call_command("flush", interactive=False, verbosity=0)
    shutil.rmtree(default_storage.location, ignore_errors=True)
    cache.clear()


def _restore(source: Path, *args: str) -> str:
    out = StringIO()
    call_command("restore", *args, str(source), stdout=out)
    return out.getvalue()


def _backup(out: Path) -> str:
    buf = StringIO()
    call_command("backup", str(out), stdout=buf)
    return buf.getvalue()


# --------------------------------------------------------------------------- the round trip


@pytest.mark.slow
def test_a_round_trip_keeps_every_export_byte_for_byte_and_every_record(tmp_path: Path) -> None:
    _work()
    exports = _exports(tmp_path / "before")
    counts = _counts()
    records = {m: _rows(m) for m in RECORDS}
    media = _media()
    assert counts["annotation.Judgment"] == 6 and counts["benchmark.ItemVersion"] >= 2
    assert counts["annotation.ResponseVersion"] and counts["annotation.PlanVersion"]
    assert counts["annotation.TrajectoryVersion"] and counts["benchmark.AuditEvent"]
    assert {"ATP-Bench demo", "LLM-I demo", "Agentic-MME demo", "m&m's demo"} <= set(exports)
    assert media

    said = _backup(tmp_path / "backup")
    assert "Backup written to" in said
    manifest = manifest_read(tmp_path / "backup")
    assert manifest["database"]["engine"] == connection.vendor
    assert manifest["counts"]["annotation.Judgment"] == 6
    assert {f["path"] for f in manifest["files"]} >= {f"media/{name}" for name in media}

    _empty_everything()
    assert databases.data_rows() == {} and not storage_files("")

    said = _restore(tmp_path / "backup")
    assert "Restored from" in said
    assert _counts() == counts
    assert {m: _rows(m) for m in records} == records
    assert _media() == media
    assert _exports(tmp_path / "after") == exports


def test_the_backup_folder_checks_by_hand_and_names_what_it_holds(tmp_path: Path) -> None:
    import hashlib

    default_storage.save("images/ab/one.png", ContentFile(b"\x89PNG one"))
    _backup(tmp_path / "b")
    words = (tmp_path / "b" / CHECKSUM).read_text().split()
    assert words[1] == MANIFEST  # `sha256sum -c manifest.sha256` reads this line
    assert hashlib.sha256((tmp_path / "b" / MANIFEST).read_bytes()).hexdigest() == words[0]
    manifest = json.loads((tmp_path / "b" / MANIFEST).read_text())
    assert manifest["format"] == "benchwright-backup" and manifest["version"] == 1
    assert manifest["created"] and manifest["migrations"]["benchmark"]
    assert "0001_initial" in manifest["migrations"]["benchmark"]
    media = [f for f in manifest["files"] if f["path"].startswith("media/")]
    assert media == [
        {
            "path": "media/images/ab/one.png",
            "size": 8,
            "sha256": hashlib.sha256(b"\x89PNG one").hexdigest(),
        }
    ]


# --------------------------------------------------------------------------- refusals


def test_backup_refuses_an_existing_folder_and_one_inside_media_root(
    tmp_path: Path, settings: Any
) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(CommandError, match="already exists and is not an empty folder"):
        _backup(tmp_path / "full")
    inside = Path(settings.MEDIA_ROOT) / "backups"
    inside.parent.mkdir(parents=True, exist_ok=True)
    with pytest.raises(CommandError, match="inside MEDIA_ROOT"):
        _backup(inside)
    assert not inside.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no leftovers


@pytest.fixture
def backup(tmp_path: Path) -> Path:
    """A backup of a small database (three items and what they need, one image)."""
    from tests.factories import ItemFactory

    ItemFactory.create_batch(3)
    default_storage.save("images/cd/two.png", ContentFile(b"\x89PNG two"))
    _backup(tmp_path / "b")
    return tmp_path / "b"


@pytest.fixture
def state() -> Any:
    """A function answering the database's rows and the storage's files: a refused restore
    leaves both as they were."""
    return lambda: (_counts(), _media())


def test_a_damaged_file_is_named_and_nothing_is_written(backup: Path, state: Any) -> None:
    (backup / "media" / "images" / "cd" / "two.png").write_bytes(b"\x89PNG tw0")
    before = state()
    with pytest.raises(CommandError, match=r"media/images/cd/two.png: its sha256 differs"):
        _restore(backup, "--force")  # checked before anything, even when forced
    assert state() == before


def test_a_missing_or_extra_file_is_named_and_nothing_is_written(backup: Path, state: Any) -> None:
    (backup / "media" / "images" / "cd" / "two.png").unlink()
    (backup / "media" / "planted.txt").write_text("not from the backup")
    before = state()
    with pytest.raises(CommandError) as caught:
        _restore(backup, "--force")
    assert "media/images/cd/two.png: missing" in str(caught.value)
    assert "media/planted.txt: not in the manifest" in str(caught.value)
    assert state() == before


def test_a_changed_manifest_is_refused(backup: Path, state: Any) -> None:
    text = (backup / MANIFEST).read_text()
    (backup / MANIFEST).write_text(text.replace('"size": 8', '"size": 9'))
    before = state()
    with pytest.raises(CommandError, match="does not match the checksum"):
        _restore(backup, "--force")
    assert state() == before


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m.update(version=2), "backup format version 2"),
        (lambda m: m["files"].append({"path": "media/../../etc/x", "size": 1, "sha256": "0" * 64}),
         r"inside the folder"),
        (lambda m: m["files"].append({"path": "/etc/passwd", "size": 1, "sha256": "0" * 64}),
         r"inside the folder"),
        (lambda m: m["migrations"]["benchmark"].append("9999_from_the_future"),
         "made by a newer Benchwright .*benchmark.9999_from_the_future"),
    ],
)  # fmt: skip
def test_a_manifest_this_code_cannot_restore_is_refused(
    backup: Path, state: Any, change: Any, message: str
) -> None:
    manifest = json.loads((backup / MANIFEST).read_text())
    change(manifest)
    manifest_write(backup, manifest)  # a consistent checksum: the content itself is refused
    before = state()
    with pytest.raises(CommandError, match=message):
        _restore(backup, "--force")
    assert state() == before


def test_a_backup_of_the_other_engine_is_refused(backup: Path, state: Any) -> None:
    other = {"sqlite": "postgresql", "postgresql": "sqlite"}[connection.vendor]
    names = {"sqlite": "database.sqlite3", "postgresql": "database.pgdump"}
    manifest = json.loads((backup / MANIFEST).read_text())
    (backup / names[connection.vendor]).rename(backup / names[other])
    manifest["database"]["engine"] = other
    for entry in manifest["files"]:
        if entry["path"] == names[connection.vendor]:
            entry["path"] = names[other]
    manifest_write(backup, manifest)
    before = state()
    with pytest.raises(CommandError, match=f"the backup is of a {other} database"):
        _restore(backup, "--force")
    assert state() == before


def test_a_database_with_data_is_refused_unless_forced(backup: Path) -> None:
    from tests.factories import ProjectFactory

    _empty_everything()
    ProjectFactory(name="Work since")
    with pytest.raises(CommandError, match=r"the database is not empty \(.*benchmark.Project 1"):
        _restore(backup)
    assert storage_files("") == []  # nothing written
    assert Project.objects.filter(name="Work since").exists()

    _restore(backup, "--force")
    assert not Project.objects.filter(name="Work since").exists()
    assert Item.objects.count() == 3
    assert default_storage.open("images/cd/two.png").read() == b"\x89PNG two"


def test_a_storage_with_files_is_refused_unless_forced(backup: Path) -> None:
    _empty_everything()
    default_storage.save("images/zz/other.png", ContentFile(b"other"))
    with pytest.raises(CommandError, match="the media storage already holds 1 file "):
        _restore(backup)
    assert databases.data_rows() == {}
    _restore(backup, "--force")
    assert Item.objects.count() == 3
    assert default_storage.exists("images/zz/other.png")  # kept: --force only writes over


def test_a_failed_database_load_removes_the_files_it_wrote(
    backup: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = type(databases.engine_current())

    def broken(self: Any, source: Path) -> None:
        raise databases.BackupFailed("the disk is full")

    monkeypatch.setattr(engine, "load", broken)
    _empty_everything()
    with pytest.raises(CommandError, match="the disk is full"):
        _restore(backup)
    assert databases.data_rows() == {}
    assert storage_files("") == []  # the files written before the load failed are gone


# --------------------------------------------------------------------------- PostgreSQL's tools


@pytest.fixture
def postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("pg_dump and pg_restore are for PostgreSQL databases")


@pytest.mark.usefixtures("postgresql")
def test_without_pg_dump_the_backup_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(CommandError, match="pg_dump was not found on PATH; install"):
        _backup(tmp_path / "b")
    assert not (tmp_path / "b").exists()


@pytest.mark.usefixtures("postgresql")
def test_a_pg_dump_older_than_the_server_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_tool(tmp_path / "bin", "pg_dump", "9.6.24")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(CommandError, match=r"pg_dump is version 9 but the server is PostgreSQL"):
        _backup(tmp_path / "b")
    assert not (tmp_path / "b").exists()


@pytest.mark.usefixtures("postgresql")
def test_a_pg_restore_older_than_the_pg_dump_is_refused(
    backup: Path, state: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dumped_by = manifest_read(backup)["database"]["pg_dump_major"]
    fake_tool(tmp_path / "bin", "pg_restore", f"{dumped_by - 1}.2")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    before = state()
    with pytest.raises(CommandError, match=f"backup was written by pg_dump {dumped_by}"):
        _restore(backup, "--force")
    assert state() == before


@pytest.mark.usefixtures("postgresql")
def test_a_backup_of_a_newer_server_is_refused(backup: Path, state: Any) -> None:
    manifest = json.loads((backup / MANIFEST).read_text())
    manifest["database"]["server_major"] = 99
    manifest_write(backup, manifest)
    before = state()
    with pytest.raises(CommandError, match="restore into PostgreSQL 99 or newer"):
        _restore(backup, "--force")
    assert state() == before
