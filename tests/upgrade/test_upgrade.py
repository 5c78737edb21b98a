"""Upgrades lose nothing (issue 22, item 16).

A database of the previous release, with the demo and a team's work in it (the committed
fixture, tests/upgrade/previous/, made by tests/upgrade/make_fixture.py from that release's
checkout), is upgraded to this checkout as an admin would: a fresh database of the kind this
run tests on (SQLite, or PostgreSQL beside the test database) is migrated to the release's
migrations, filled with the release's rows through the release's own (historical) models,
then ``manage.py migrate`` runs to whatever the head is now. Then every row of the release
must still be there with its values, and every project must export the same files as that
release exported (tests/upgrade/replay.py does the upgrade in a process of its own; the
comparisons are in tests/upgrade/snapshot.py). No git history or old checkout is needed.

What a migration may do on purpose (remove a model or field, change stored values, add rows
to an old table) is listed in snapshot.py's ``*_ON_PURPOSE`` with the reason; renamed models
and fields are followed through the migrations' RenameModel and RenameField operations.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from tests.upgrade import replay, snapshot

pytestmark = pytest.mark.slow

FIXTURE = snapshot.FIXTURE


def _postgres(settings_dict: dict[str, Any], name: str) -> tuple[str, Any]:
    """The URL of database ``name`` on the server of ``settings_dict``, and a function that
    runs one statement there (connected to the server's "postgres" database)."""
    import psycopg

    host, port = settings_dict.get("HOST") or "127.0.0.1", settings_dict.get("PORT") or 5432
    user, password = settings_dict.get("USER") or "", settings_dict.get("PASSWORD") or ""

    def run(sql: str) -> None:
        with psycopg.connect(
            host=host,
            port=port,
            user=user,
            password=password,
            dbname="postgres",
            autocommit=True,
            connect_timeout=5,
        ) as conn:
            conn.execute(sql)

    auth = urllib.parse.quote(user) + (f":{urllib.parse.quote(password)}" if password else "")
    return f"postgres://{auth}@{host}:{port}/{name}", run


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The fixture's release upgraded to this checkout, once for the module: what the upgrade
    wrote down (rows, the migrations' changes, the exports made again) and the database kind."""
    from django.db import connection

    work = tmp_path_factory.mktemp("upgrade")
    drop = None
    if connection.vendor == "sqlite":
        url = f"sqlite:///{work / 'db.sqlite3'}"
    else:  # a database of its own beside this run's, so no other run's is touched
        name = f"{connection.settings_dict['NAME']}_upgrade"[:63]
        url, run = _postgres(connection.settings_dict, name)
        run(f'DROP DATABASE IF EXISTS "{name}"')
        run(f'CREATE DATABASE "{name}"')

        def drop() -> None:
            run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    try:
        replay.run_child(FIXTURE, work / "out", url, work / "media")
        yield {
            "out": work / "out",
            "vendor": connection.vendor,
            "manifest": json.loads((FIXTURE / snapshot.MANIFEST).read_text()),
            "before": snapshot.rows_read(FIXTURE / snapshot.ROWS),
            "after": snapshot.rows_read(work / "out" / snapshot.ROWS),
            "changes": json.loads((work / "out" / "changes.json").read_text()),
            "exports": json.loads((work / "out" / "exports.json").read_text()),
        }
    finally:
        if drop is not None:
            drop()


def test_the_fixture_is_whole() -> None:
    """The committed fixture holds what its manifest says (a truncated or hand-edited copy
    would make the other tests compare with the wrong thing)."""
    manifest = json.loads((FIXTURE / snapshot.MANIFEST).read_text())
    rows = snapshot.rows_read(FIXTURE / snapshot.ROWS)
    assert {label: len(t["rows"]) for label, t in rows.items()} == manifest["counts"]
    assert snapshot.files_listed(FIXTURE / snapshot.MEDIA) == manifest["media"]
    for spec in manifest["exports"]:
        for rel, entry in spec["files"].items():
            if snapshot.is_text(rel):
                path = FIXTURE / snapshot.EXPORTS / spec["name"] / rel
                assert snapshot.sha256_file(path) == entry["sha256"], (spec["name"], rel)
    # A realistic amount of work, not an empty database: the kinds of rows a team makes.
    counts = manifest["counts"]
    for label in (
        "benchmark.item",
        "benchmark.itemversion",
        "benchmark.itemstatuschange",
        "benchmark.auditevent",
        "benchmark.job",
        "benchmark.image",
        "annotation.judgment",
        "annotation.outcome",
        "annotation.responseversion",
        "annotation.planversion",
        "annotation.trajectoryversion",
        "review.release",
        "review.judgecall",
    ):
        assert counts[label] > 0, label
    assert sum(counts.values()) > 1000


def test_every_row_of_the_previous_release_is_kept(upgraded: dict[str, Any]) -> None:
    problems = snapshot.rows_compare(upgraded["before"], upgraded["after"], upgraded["changes"])
    assert problems == [], "\n".join(problems[:40])


def test_every_project_exports_as_the_previous_release_did(upgraded: dict[str, Any]) -> None:
    manifest = upgraded["manifest"]
    assert len(manifest["exports"]) >= 4 * 4  # own format, Label Studio, JSON Lines, CSV
    problems = snapshot.exports_compare(
        manifest, upgraded["exports"], FIXTURE, upgraded["out"], upgraded["vendor"]
    )
    assert problems == [], "\n\n".join(problems[:10])


def test_the_upgrade_ran_this_checkouts_migrations(upgraded: dict[str, Any]) -> None:
    """After the upgrade the database is at this checkout's head: every model of today has
    its table (a new model has one, empty or filled by its migration)."""
    from django.apps import apps

    tables = {m._meta.label_lower for m in snapshot._tables(apps)}
    assert tables <= set(upgraded["after"]), sorted(tables - set(upgraded["after"]))


# --------------------------------------------------------------------------- the comparison


def _table(fields: list[str], rows: list[list[Any]], pk: str = "id") -> dict[str, Any]:
    return {"pk": pk, "fields": fields, "rows": rows}


NO_CHANGES: dict[str, Any] = {
    "migrations": [],
    "renamed_models": {},
    "removed_models": [],
    "renamed_fields": {},
    "removed_fields": [],
}


def test_the_comparison_finds_a_lost_row_a_changed_value_and_an_added_row() -> None:
    before = {"annotation.judgment": _table(["id", "value"], [[1, "keep"], [2, "fix"]])}
    assert snapshot.rows_compare(before, before, NO_CHANGES) == []
    lost = {"annotation.judgment": _table(["id", "value"], [[1, "keep"]])}
    assert snapshot.rows_compare(before, lost, NO_CHANGES) == [
        "annotation.judgment: 2 rows before the upgrade, 1 after",
        "annotation.judgment 2: missing after the upgrade",
    ]
    changed = {"annotation.judgment": _table(["id", "value"], [[1, "keep"], [2, "drop"]])}
    [problem] = snapshot.rows_compare(before, changed, NO_CHANGES)
    assert problem.startswith('annotation.judgment 2: value was "fix", is "drop"')
    assert (
        snapshot.rows_compare(
            before, changed, NO_CHANGES, changed_on_purpose={"annotation.judgment.value": "why"}
        )
        == []
    )
    added = {"annotation.judgment": _table(["id", "value"], [[1, "keep"], [2, "fix"], [3, "x"]])}
    [problem] = snapshot.rows_compare(before, added, NO_CHANGES)
    assert "2 rows before the upgrade, 3 after" in problem and "ADDED_ON_PURPOSE" in problem


def test_the_comparison_follows_renames_and_asks_for_removals() -> None:
    before = {"review.decision": _table(["id", "verdict"], [[1, "accepted"]])}
    renamed = {
        **NO_CHANGES,
        "renamed_models": {"review.decision": "review.ruling"},
        "renamed_fields": {"review.decision.verdict": "review.ruling.outcome"},
    }
    after = {"review.ruling": _table(["id", "outcome", "note"], [[1, "accepted", ""]])}
    assert snapshot.rows_compare(before, after, renamed) == []
    removed = {**NO_CHANGES, "removed_models": ["review.decision"]}
    [problem] = snapshot.rows_compare(before, {}, removed)
    assert "removed by a migration with its 1 rows" in problem
    assert (
        snapshot.rows_compare(before, {}, removed, removed_on_purpose={"review.decision": "why"})
        == []
    )
    gone = {**NO_CHANGES, "removed_fields": ["review.decision.verdict"]}
    [problem] = snapshot.rows_compare(before, _rename(before), gone)
    assert problem.startswith("review.decision.verdict: removed by a migration")


def _rename(tables: dict[str, Any]) -> dict[str, Any]:
    return {label: _table(["id"], [[row[0]] for row in t["rows"]]) for label, t in tables.items()}


def test_tables_the_database_keeps_are_compared_by_content() -> None:
    label = next(iter(snapshot.KEPT_BY_DATABASE))
    before = {label: _table(["id", "status", "n"], [[1, "draft", 3], [2, "verified", 1]])}
    recounted = {label: _table(["id", "status", "n"], [[7, "verified", 1], [8, "draft", 3]])}
    assert snapshot.rows_compare(before, recounted, NO_CHANGES) == []
    wrong = {label: _table(["id", "status", "n"], [[7, "verified", 1], [8, "draft", 2]])}
    assert snapshot.rows_compare(before, wrong, NO_CHANGES) == [
        f"{label}: its rows differ after the upgrade (compared by content)"
    ]


def test_the_changes_are_read_from_the_migrations_operations() -> None:
    from django.db import migrations, models

    first = migrations.Migration("0099_renames", "review")
    first.operations = [
        migrations.RenameModel("Decision", "Ruling"),
        migrations.RenameField("ruling", "verdict", "outcome"),
        migrations.RemoveField("ruling", "reason"),
    ]
    second = migrations.Migration("0100_more", "review")
    second.operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.RenameField("ruling", "outcome", "result")]
        ),
        migrations.DeleteModel("OracleRun"),
        migrations.AddField("ruling", "note", models.TextField(default="")),
    ]
    assert snapshot.changes_of([(first, False), (second, False)]) == {
        "migrations": ["review.0099_renames", "review.0100_more"],
        "renamed_models": {"review.decision": "review.ruling"},
        "removed_models": ["review.oraclerun"],
        "renamed_fields": {"review.decision.verdict": "review.ruling.result"},
        "removed_fields": ["review.decision.reason"],
    }
