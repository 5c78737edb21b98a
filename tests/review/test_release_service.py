"""Releases: the files written, the manifest's checksums, provenance pseudonymised or named,
the counts, and release_verify catching a changed byte, a missing file and an extra one."""

from __future__ import annotations

import hashlib
import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from benchmark.datasets.services import dataset_export
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.models import ItemStatus, Project
from review.releases.models import Release
from review.releases.services import item_fingerprint, release_create, release_verify
from tests.factories import (
    DecisionFactory,
    DraftingSessionFactory,
    ImageFactory,
    ItemFactory,
    ItemStatusChangeFactory,
    JudgmentFactory,
    JudgmentTaskFactory,
    OutcomeFactory,
    UserFactory,
    image_ref,
)

pytestmark = pytest.mark.django_db


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def released(project: Project, users: dict[str, Any]) -> dict[str, Any]:
    image = ImageFactory(projects=[project])
    verified = [
        ItemFactory(project=project, status=ItemStatus.VERIFIED, category="Academic", level=1),
        ItemFactory(
            project=project,
            status=ItemStatus.VERIFIED,
            category="Travel",
            image_refs=[image_ref(image, position=0)],
        ),
    ]
    draft = ItemFactory(project=project, status=ItemStatus.DRAFT)
    task = JudgmentTaskFactory(project=project, name="Correct?")
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    JudgmentFactory(task=task, item=verified[0], user=alice)
    JudgmentFactory(task=task, item=verified[0], user=bob)
    JudgmentFactory(task=task, item=verified[1], user=bob)
    OutcomeFactory(task=task, item=verified[0], verdict="accepted")
    DecisionFactory(task=task, item=verified[1], reviewer=users["reviewer"])
    ItemStatusChangeFactory(
        item=verified[0],
        changed_by=users["reviewer"],
        from_status=ItemStatus.IN_REVIEW,
        to_status=ItemStatus.VERIFIED,
        reason="",
    )
    DraftingSessionFactory(item=verified[0], model="drafter-model", created_by=users["annotator"])
    return {"verified": verified, "draft": draft, "image": image, "task": task}


def _provenance(release: Release) -> list[dict[str, Any]]:
    text = (Path(release.path) / "provenance.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def test_release_writes_the_export_byte_for_byte_with_manifest_and_card(
    project: Project, users: dict[str, Any], released: dict[str, Any], tmp_path: Path
) -> None:
    release = release_create(project=project, user=users["reviewer"], name="First")
    root = Path(release.path)
    assert release.number == 1 and release.item_count == 2
    assert root.is_relative_to(Path(tmp_path))  # under the test's MEDIA_ROOT
    expected = tmp_path / "plain"
    dataset_export(project=project, out=expected, status=ItemStatus.VERIFIED)
    assert _files(root / "data") == _files(expected)
    assert any(name.startswith("images/") for name in _files(root / "data"))

    manifest = json.loads((root / "manifest.json").read_text())
    assert manifest == release.manifest
    assert manifest["release"] == "First" and manifest["project"] == project.name
    assert manifest["created_by"] == "reviewer-user"
    assert manifest["filter"] == {"status": "verified"}
    assert manifest["benchwright_version"]
    assert manifest["counts"]["status"] == {"verified": 2}
    assert manifest["counts"]["category"] == {"Academic": 1, "Travel": 1}
    assert manifest["counts"]["level"] == {"": 1, "1": 1}
    listed = {f["path"]: f for f in manifest["files"]}
    assert set(listed) == set(_files(root)) - {"manifest.json"}
    for rel, entry in listed.items():
        data = (root / rel).read_bytes()
        assert entry["size"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()

    card = (root / "README.md").read_text()
    assert card.startswith("---\npretty_name:")
    assert "license: other" in card and "size_categories:\n- n<1K" in card
    assert release_verify(path=root).ok


def test_provenance_pseudonymises_annotators_unless_named(
    project: Project, users: dict[str, Any], released: dict[str, Any]
) -> None:
    release = release_create(project=project, user=users["admin"], name="Blind")
    rows = _provenance(release)
    assert [r["id"] for r in rows] == [i.external_id for i in released["verified"]]
    first, second = rows
    assert [j["annotator"] for j in first["judgments"]] == ["annotator-1", "annotator-2"]
    assert [j["annotator"] for j in second["judgments"]] == ["annotator-2"]  # bob, stable
    text = (Path(release.path) / "provenance.jsonl").read_text()
    assert "alice" not in text and "bob" not in text and "reviewer-user" not in text
    assert first["outcomes"][0]["verdict"] == "accepted"
    assert first["outcomes"][0]["rule"] == released["task"].consensus
    assert first["status_history"][0]["to"] == "verified"
    assert second["reviewer_decisions"][0]["verdict"] == "accepted"
    assert first["counts"]["item_versions"] == 0
    assert first["drafting"] == [
        {"kind": "backward drafting", "model": "drafter-model", "by": "annotator-3"}
    ]

    named = release_create(project=project, user=users["admin"], name="Named", named=True)
    assert named.number == 2
    first = _provenance(named)[0]
    assert [j["annotator"] for j in first["judgments"]] == ["alice", "bob"]
    assert first["status_history"][0]["by"] == "reviewer-user"
    assert first["drafting"][0]["by"] == "annotator-user"


def test_a_release_carries_the_papers_statistics_tables(
    project: Project, users: dict[str, Any], released: dict[str, Any]
) -> None:
    """ATP-Bench Tables 2 and 9 over the released (verified) items, in stats/ as CSV and
    markdown, listed in the manifest and shown in the dataset card."""
    release = release_create(project=project, user=users["admin"], name="With stats")
    root = Path(release.path)
    table2 = (root / "stats" / "atp_table2.csv").read_text()
    rows = {line.split(",")[0]: line for line in table2.splitlines()[1:]}
    # One verified item per category; the draft item is not released.
    assert set(rows) == {"Academic", "Travel", "Overall"}
    assert rows["Overall"].split(",")[2] == "2"
    assert (root / "stats" / "atp_table9.md").read_text().startswith("### ")
    assert {f["path"] for f in release.manifest["files"]} >= {
        "stats/atp_table2.csv",
        "stats/atp_table2.md",
        "stats/atp_table9.csv",
        "stats/atp_table9.md",
    }
    assert "How each column is computed" in (root / "README.md").read_text()


def test_release_refuses_bad_input(
    project: Project, users: dict[str, Any], released: dict[str, Any], tmp_path: Path
) -> None:
    release_create(project=project, user=users["admin"], name="Once")
    with pytest.raises(Conflict, match="name"):
        release_create(project=project, user=users["admin"], name="Once")
    with pytest.raises(ValidationFailed, match="name"):
        release_create(project=project, user=users["admin"], name="  ")
    with pytest.raises(ValidationFailed, match="status"):
        release_create(project=project, user=users["admin"], name="X", status="bogus")
    with pytest.raises(Forbidden):
        release_create(project=project, user=users["annotator"], name="Y")
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("x")
    with pytest.raises(ValidationFailed, match="folder"):
        release_create(project=project, user=users["admin"], name="Z", out_dir=full)
    assert Release.objects.filter(project=project).count() == 1


def test_fingerprints_tell_later_edits(
    project: Project, users: dict[str, Any], released: dict[str, Any]
) -> None:
    release = release_create(project=project, user=users["admin"], name="Frozen")
    frozen = dict(release.fingerprints)
    item = released["verified"][0]
    assert frozen[item.pk] == item_fingerprint(item=item)
    item.query = "Edited after the release"
    item.save()
    assert frozen[item.pk] != item_fingerprint(item=item)
    assert released["draft"].pk not in frozen


def test_verify_catches_a_changed_byte_a_missing_and_an_extra_file(
    project: Project, users: dict[str, Any], released: dict[str, Any]
) -> None:
    root = Path(release_create(project=project, user=users["admin"], name="R").path)
    data = next((root / "data").glob("*.jsonl"))
    original = data.read_bytes()
    data.write_bytes(original[:-2] + bytes([original[-2] ^ 1]) + original[-1:])
    result = release_verify(path=root)
    assert not result.ok and result.problems[0].startswith(f"{data.relative_to(root)}: sha256")
    data.write_bytes(original)
    assert release_verify(path=root).ok
    (root / "README.md").unlink()
    assert release_verify(path=root).problems == ["README.md: missing"]
    (root / "stray.txt").write_text("x")
    assert "stray.txt: extra file, not in the manifest" in release_verify(path=root).problems


def test_release_commands(project: Project, released: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "cmd-release"
    stdout = StringIO()
    call_command(
        "release", "--project", project.name, "--name", "From CLI", str(out), stdout=stdout
    )
    assert "v1 From CLI: 2 items" in stdout.getvalue()
    assert (out / "manifest.json").exists()
    release = Release.objects.get(project=project)
    assert release.path == str(out) and release.created_by is None
    ok = StringIO()
    call_command("release_verify", str(out), stdout=ok)
    assert ok.getvalue().startswith("ok:")
    (out / "provenance.jsonl").write_text("changed\n")
    with pytest.raises(CommandError, match="provenance.jsonl"):
        call_command("release_verify", str(out), stderr=StringIO())
    with pytest.raises(CommandError, match="--project"):
        call_command("release", "--project", "nope", "--name", "x", str(tmp_path / "n"))
    with pytest.raises(CommandError, match="name"):
        call_command(
            "release", "--project", project.name, "--name", "From CLI", str(tmp_path / "m")
        )
    all_items = tmp_path / "all"
    call_command(
        "release",
        "--project",
        project.name,
        "--name",
        "All",
        "--status",
        "all",
        str(all_items),
        stdout=StringIO(),
    )
    assert json.loads((all_items / "manifest.json").read_text())["counts"]["items"] == 3


def test_a_failed_release_leaves_no_folder_and_can_be_made_again(
    project: Project,
    users: dict[str, Any],
    released: dict[str, Any],
    monkeypatch: Any,
    settings: Any,
) -> None:
    from review.releases import services

    def broken(*args: Any, **kwargs: Any) -> list[Any]:
        raise RuntimeError("disk full")

    monkeypatch.setattr(services, "_release_stats", broken)
    with pytest.raises(RuntimeError):
        release_create(project=project, user=users["admin"], name="Broken")
    folder = Path(settings.MEDIA_ROOT) / "releases" / str(project.pk) / "1"
    assert not folder.exists() and not Release.objects.exists()
    monkeypatch.undo()
    folder.mkdir(parents=True)
    (folder / "orphan.txt").write_text("left over")  # by a crash no row claims
    release = release_create(project=project, user=users["admin"], name="Again")
    assert release.number == 1 and not (folder / "orphan.txt").exists()
    assert release_verify(path=release.path).ok
