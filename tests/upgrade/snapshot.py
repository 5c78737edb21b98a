"""What the upgrade test (tests/upgrade/test_upgrade.py) and the script that makes its fixture
(tests/upgrade/make_fixture.py) share: a database written down as a fixture, and put back.

A fixture is a folder (``tests/upgrade/previous/`` is the committed one):

    manifest.json   the release it was made from, the migration targets per app at that
                    release, the row count per model, the exports made (how, and the sha256
                    and size of every file each wrote), the media files (sha256 and size)
    rows.json.gz    every row of every model that release's migrations know, including
                    Django's own tables and the automatic many-to-many tables:
                    ``{"app.model": {"pk": field name, "fields": [field name, ...],
                    "rows": [[value, ...], ...]}}``
                    (a foreign key's value is its id; values are JSON: datetimes in ISO 8601
                    with microseconds, decimals as strings, bytes in base64)
    storage/        the files the rows name (image files and thumbnails), by storage path
    exports/        each export's text files as that release wrote them (binary files, such as
                    the images an export copies, are in the manifest by sha256 only)

Nothing here imports Django at module level: the script sets Django up on the database it
is given first (``django_setup``).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import gzip
import hashlib
import io
import json
import os
import sys
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parent / "previous"
MANIFEST = "manifest.json"
ROWS = "rows.json.gz"
MEDIA = "storage"  # not "media": .gitignore keeps media/ folders out
EXPORTS = "exports"

#: Tables the database keeps from other tables by itself (triggers), with who keeps them. They
#: are loaded after every other table, replacing what the triggers wrote meanwhile, and are
#: compared by content: their ids are the database's own (a recount gives new ones).
KEPT_BY_DATABASE = {
    "benchmark.itemtally": "benchmark.models.indexing (triggers on benchmark_item)",
}

#: What an upgrade may do to the release's rows on purpose, each with the reason; anything
#: else the upgrade test reports as a loss. Keys are ``app.model`` or ``app.model.field``, as
#: the fixture's release names them. A migration that removes a model or field, changes
#: stored values or adds rows to an existing table lists it here in the same commit.
REMOVED_ON_PURPOSE: dict[str, str] = {}
CHANGED_ON_PURPOSE: dict[str, str] = {}
ADDED_ON_PURPOSE: dict[str, str] = {
    "contenttypes.contenttype": "migrate adds the content type of every new model",
    "auth.permission": "migrate adds the permissions of every new model",
}

#: Files of an export kept in the fixture as text (the others only by sha256 and size).
TEXT_SUFFIXES = {".json", ".jsonl", ".csv", ".xml", ".md", ".txt", ""}

#: The judgment task schemes whose judgments Label Studio's export writes (as choices).
LABEL_STUDIO_SCHEMES = ("binary", "nominal", "ordinal")

#: The demo user whose session fetches the web downloads of an export spec.
EXPORT_USER = "admin"


def django_setup() -> None:
    """Django on the database and media folder of the environment (DATABASE_URL, MEDIA_ROOT),
    importing this checkout's code."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmark.settings")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def git_head() -> str:
    """This checkout's commit (short), or "unknown" without git."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return done.stdout.strip()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def files_listed(root: Path) -> dict[str, dict[str, Any]]:
    """Every file under ``root``: its path relative to it -> {"sha256", "size"}."""
    return {
        path.relative_to(root).as_posix(): {
            "sha256": sha256_file(path),
            "size": path.stat().st_size,
        }
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


# --------------------------------------------------------------------------- migrations


def leaf_targets(connection: Any) -> list[list[str]]:
    """The last migration of every app in this checkout, as ``[app, name]`` pairs."""
    from django.db.migrations.loader import MigrationLoader

    return sorted([list(node) for node in MigrationLoader(connection).graph.leaf_nodes()])


def migrate_to(connection: Any, targets: Iterable[Iterable[str]]) -> Any:
    """Migrate the database forward to ``targets`` with Django's migration executor (as
    ``manage.py migrate`` at the release of those targets did: its plan, then its
    ``post_migrate`` with the models of that release) and return that release's models
    (an app registry of the historical models)."""
    from django.core.management.sql import emit_post_migrate_signal
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    nodes = [tuple(t) for t in targets]
    missing = [
        f"{app}.{name}" for app, name in nodes if (app, name) not in executor.loader.graph.nodes
    ]
    if missing:
        raise LookupError(
            f"migrations of the fixture's release are no longer in this checkout: "
            f"{', '.join(missing)} (squashed or removed?): refresh the fixture "
            "(tests/upgrade/make_fixture.py)"
        )
    plan = executor.migration_plan(nodes)
    state = executor.migrate(nodes, plan=plan)
    apps = state.apps
    emit_post_migrate_signal(0, False, connection.alias, apps=apps, plan=plan)
    return apps


def schema_changes(connection: Any) -> dict[str, Any]:
    """What the migrations the database has not run yet do to its release's models and
    fields (see :func:`changes_of`)."""
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    return changes_of(executor.migration_plan(executor.loader.graph.leaf_nodes()))


def _operations(ops: Iterable[Any]) -> Iterator[Any]:
    """The operations, with those a SeparateDatabaseAndState makes to the models' state."""
    from django.db import migrations

    for op in ops:
        if isinstance(op, migrations.SeparateDatabaseAndState):
            yield from _operations(op.state_operations)
        else:
            yield op


def changes_of(plan: list[tuple[Any, bool]]) -> dict[str, Any]:
    """What a migration plan (forward) does to the models and fields that exist before it,
    read from its operations: ``{"migrations": ["app.name", ...], "renamed_models": {old
    label: new label}, "removed_models": [label, ...], "renamed_fields": {"label.field":
    "new label.new field"}, "removed_fields": ["label.field", ...]}``, the keys named as
    before the plan."""
    from django.db import migrations

    model_now: dict[str, str] = {}  # label before the plan -> its label so far
    field_now: dict[str, str] = {}  # "label.field" before the plan -> its name so far
    removed_models: list[str] = []
    removed_fields: list[str] = []

    def model_before(label: str) -> str:
        return next((old for old, now in model_now.items() if now == label), label)

    def field_before(label: str, name: str) -> str:
        key = f"{label}.{name}"
        found = next((old for old, now in field_now.items() if now == key), None)
        return found or f"{model_before(label)}.{name}"

    for migration, backwards in plan:
        if backwards:
            raise ValueError(f"{migration}: only a forward plan says what an upgrade does")
        app = migration.app_label
        for op in _operations(migration.operations):
            if isinstance(op, migrations.RenameModel):
                old, new = f"{app}.{op.old_name_lower}", f"{app}.{op.new_name_lower}"
                model_now[model_before(old)] = new
                for key, now in field_now.items():
                    if now.startswith(f"{old}."):
                        field_now[key] = f"{new}.{now[len(old) + 1 :]}"
            elif isinstance(op, migrations.DeleteModel):
                removed_models.append(model_before(f"{app}.{op.name_lower}"))
            elif isinstance(op, migrations.RenameField):
                label = f"{app}.{op.model_name_lower}"
                field_now[field_before(label, op.old_name)] = f"{label}.{op.new_name}"
            elif isinstance(op, migrations.RemoveField):
                removed_fields.append(field_before(f"{app}.{op.model_name_lower}", op.name))
    return {
        "migrations": [f"{m.app_label}.{m.name}" for m, _ in plan],
        "renamed_models": {old: new for old, new in model_now.items() if old != new},
        "removed_models": removed_models,
        "renamed_fields": {old: new for old, new in field_now.items() if old != new},
        "removed_fields": removed_fields,
    }


# --------------------------------------------------------------------------- rows


def _plain(value: Any) -> Any:
    """A column's Python value as JSON (the field's ``to_python`` reads it back)."""
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        from django.utils.duration import duration_string

        return duration_string(value)
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, bytes | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if hasattr(value, "name") and hasattr(value, "storage"):  # a FieldFile
        return value.name or ""
    return value


def _tables(apps: Any) -> list[Any]:
    """The models with a table of their own, by label."""
    models = [
        m
        for m in apps.get_models(include_auto_created=True)
        if m._meta.managed and not m._meta.proxy
    ]
    return sorted(models, key=lambda m: m._meta.label_lower)


def rows_dump(apps: Any) -> dict[str, dict[str, Any]]:
    """Every row of every model of ``apps`` (the current models, or a release's historical
    ones), ordered by primary key."""
    dump: dict[str, dict[str, Any]] = {}
    for model in _tables(apps):
        fields = list(model._meta.concrete_fields)
        rows = model._base_manager.order_by("pk").values_list(*(f.attname for f in fields))
        dump[model._meta.label_lower] = {
            "pk": model._meta.pk.name,
            "fields": [f.name for f in fields],
            "rows": [[_plain(v) for v in row] for row in rows.iterator(2000)],
        }
    return dump


def rows_load(apps: Any, dump: dict[str, dict[str, Any]], connection: Any) -> None:
    """Write the dumped rows through the historical models of ``apps`` (the release the dump
    was made at), in one transaction. Rows the migrations or ``post_migrate`` put in a table
    first (content types, permissions) are replaced by the dumped ones; tables the database
    keeps itself (KEPT_BY_DATABASE) are written last. Values are written as they are:
    ``auto_now`` fields keep the dumped time."""
    from django.core.management.color import no_style
    from django.db import transaction

    tables = {m._meta.label_lower: m for m in _tables(apps)}
    unknown = sorted(set(dump) - set(tables))
    if unknown:
        raise LookupError(f"the dump has models its release's migrations do not: {unknown}")
    order = sorted(dump, key=lambda label: (label in KEPT_BY_DATABASE, label))
    with transaction.atomic(using=connection.alias):
        for label in order:  # first empty every table (a cascade may reach any of them)
            tables[label]._base_manager.all().delete()
        for label in order:
            model = tables[label]
            by_name = {f.name: f for f in model._meta.concrete_fields}
            fields = [by_name[name] for name in dump[label]["fields"]]
            for f in fields:  # the copy of a historical model: its fields are its own
                if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
                    f.auto_now = f.auto_now_add = False
            objs = []
            for row in dump[label]["rows"]:
                values = {
                    f.attname: f.to_python(v)
                    for f, v in zip(fields, row, strict=True)
                    if not f.generated
                }
                objs.append(model(**values))
            if label in KEPT_BY_DATABASE:  # what the triggers wrote meanwhile
                model._base_manager.all().delete()
            model._base_manager.bulk_create(objs, batch_size=500)
        sql = connection.ops.sequence_reset_sql(no_style(), list(tables.values()))
        with connection.cursor() as cursor:
            for statement in sql:
                cursor.execute(statement)


def rows_write(dump: dict[str, Any], path: Path) -> None:
    """The dump as gzip'd JSON (no time in the gzip header: the same rows give the same
    file)."""
    data = json.dumps(dump, ensure_ascii=False, separators=(",", ":"))  # keys in their order
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
        fh.write(data.encode())


def rows_read(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def rows_compare(
    old: dict[str, Any],
    new: dict[str, Any],
    changes: dict[str, Any],
    *,
    removed_on_purpose: dict[str, str] | None = None,
    changed_on_purpose: dict[str, str] | None = None,
    added_on_purpose: dict[str, str] | None = None,
) -> list[str]:
    """What the upgrade lost or changed, one sentence per model or field (empty: nothing):

    - every model of the release is still there (under its new label when a migration
      renamed it) with as many rows: fewer is a loss, more needs ``added_on_purpose``;
    - every row keeps its primary key and the value of every field of the release (renamed
      fields under their new name); a changed value needs ``changed_on_purpose``;
    - a model or field a migration removed needs ``removed_on_purpose`` (its rows or values
      are gone);
    - tables the database keeps (KEPT_BY_DATABASE) are compared by content, not by id.

    The ``*_on_purpose`` maps (default: this module's) take ``app.model`` or
    ``app.model.field`` (the release's names) to the reason."""
    removed_on_purpose = REMOVED_ON_PURPOSE if removed_on_purpose is None else removed_on_purpose
    changed_on_purpose = CHANGED_ON_PURPOSE if changed_on_purpose is None else changed_on_purpose
    added_on_purpose = ADDED_ON_PURPOSE if added_on_purpose is None else added_on_purpose
    old = _content_types_renamed(old, changes["renamed_models"])
    old, new = _without_empty_tallies(old), _without_empty_tallies(new)
    problems: list[str] = []
    renamed_fields = changes["renamed_fields"]
    removed_fields = set(changes["removed_fields"])
    for label, table in sorted(old.items()):
        count = len(table["rows"])
        if label in changes["removed_models"]:
            if label not in removed_on_purpose and count:
                problems.append(
                    f"{label}: removed by a migration with its {count} rows; if that is on "
                    "purpose, list it in REMOVED_ON_PURPOSE with the reason"
                )
            continue
        now = changes["renamed_models"].get(label, label)
        if now not in new:
            problems.append(f"{label}: no such model after the upgrade ({count} rows before)")
            continue
        after = new[now]
        if len(after["rows"]) < count:
            problems.append(f"{label}: {count} rows before the upgrade, {len(after['rows'])} after")
        elif len(after["rows"]) > count and label not in added_on_purpose:
            problems.append(
                f"{label}: {count} rows before the upgrade, {len(after['rows'])} after; if a "
                "migration adds rows on purpose, list it in ADDED_ON_PURPOSE with the reason"
            )
        problems.extend(
            _values_compare(
                label,
                table,
                after,
                renamed_fields,
                removed_fields,
                removed_on_purpose,
                changed_on_purpose,
            )
        )
    return problems


def _without_empty_tallies(tables: dict[str, Any]) -> dict[str, Any]:
    """The tables with the rows of the database's own tallies (KEPT_BY_DATABASE) that count
    nothing (``n`` = 0) left out: a recount of the items (SQLite rebuilds a table a migration
    alters, and ``benchmark.models.indexing.ensure`` counts the tallies again) writes no row
    for nothing, where the triggers had kept one at 0. Everything a tally counts is compared."""
    out = dict(tables)
    for label in KEPT_BY_DATABASE:
        table = tables.get(label)
        if not table or "n" not in table["fields"]:
            continue
        n = table["fields"].index("n")
        out[label] = {**table, "rows": [row for row in table["rows"] if row[n] != 0]}
    return out


def _content_types_renamed(dump: dict[str, Any], renamed: dict[str, str]) -> dict[str, Any]:
    """The dump with the content types of renamed models under their new names, as Django's
    RenameModel renames them."""
    table = dump.get("contenttypes.contenttype")
    if not table or not renamed:
        return dump
    app, model = table["fields"].index("app_label"), table["fields"].index("model")
    rows = []
    for row in table["rows"]:
        new = renamed.get(f"{row[app]}.{row[model]}")
        if new is not None:
            row = list(row)
            row[model] = new.split(".", 1)[1]
        rows.append(row)
    return {**dump, "contenttypes.contenttype": {**table, "rows": rows}}


def _values_compare(
    label: str,
    before: dict[str, Any],
    after: dict[str, Any],
    renamed_fields: dict[str, str],
    removed_fields: set[str],
    removed_on_purpose: dict[str, str],
    changed_on_purpose: dict[str, str],
) -> list[str]:
    problems: list[str] = []
    position = {name: i for i, name in enumerate(after["fields"])}
    columns: list[tuple[str, int, int]] = []  # (field, index before, index after)
    for i, name in enumerate(before["fields"]):
        key = f"{label}.{name}"
        if key in removed_fields:
            if key not in removed_on_purpose:
                problems.append(
                    f"{key}: removed by a migration with its values; if that is on purpose, "
                    "list it in REMOVED_ON_PURPOSE with the reason"
                )
            continue
        if key in changed_on_purpose:
            continue
        now = renamed_fields.get(key, key).rsplit(".", 1)[1]
        if now not in position:
            problems.append(f"{key}: no such field after the upgrade")
            continue
        columns.append((name, i, position[now]))
    if label in KEPT_BY_DATABASE:  # by content: the ids are the database's
        pk = before["fields"].index(before["pk"])
        keep = [(name, i, j) for name, i, j in columns if i != pk]

        def content(rows: list[list[Any]], side: int) -> list[str]:
            return sorted(json.dumps([row[c[side]] for c in keep]) for row in rows)

        if content(before["rows"], 1) != content(after["rows"], 2):
            problems.append(f"{label}: its rows differ after the upgrade (compared by content)")
        return problems
    pk_before, pk_after = (t["fields"].index(t["pk"]) for t in (before, after))
    rows_after = {row[pk_after]: row for row in after["rows"]}
    for row in before["rows"]:
        pk = row[pk_before]
        kept = rows_after.get(pk)
        if kept is None:
            problems.append(f"{label} {pk}: missing after the upgrade")
            continue
        for name, i, j in columns:
            if not _same(row[i], kept[j]):
                problems.append(
                    f"{label} {pk}: {name} was {_short(row[i])}, is {_short(kept[j])}; if a "
                    "migration changes it on purpose, list it in CHANGED_ON_PURPOSE"
                )
    return problems


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a == b  # 1 and 1.0 from a JSON number
    return type(a) is type(b) and a == b


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else f"{text[:77]}..."


# --------------------------------------------------------------------------- exports


def export_specs() -> list[dict[str, Any]]:
    """The exports every project of the database supports, as a user makes them: its own
    format, Label Studio (plain, and with each judgment task's judgments), JSON Lines and CSV
    (``manage.py export_dataset``), and each judgment task's judgments as CSV and JSON Lines
    (the agreement page's downloads). Each spec is ``{"name": folder, "command": argv}`` or
    ``{"name": folder, "get": path}``; "OUT" in argv is the file or folder to write."""
    from django.urls import reverse
    from django.utils.text import slugify

    from annotation.judgment_tasks.models import Judgment
    from benchmark.models import Project

    specs: list[dict[str, Any]] = []
    for project in Project.objects.order_by("pk"):
        base = slugify(project.name) or f"project-{project.pk}"
        own = ["--format", project.data_format, "--project", project.name]
        ls = ["--format", "label-studio", "--project", project.name]
        specs += [
            {"name": f"{base}/own", "command": [*own, "OUT"]},
            {"name": f"{base}/label-studio", "command": [*ls, "OUT/tasks.json"]},
            {"name": f"{base}/jsonl", "command": ["--format", "jsonl", "--project", project.name, "OUT/items.jsonl"]},
            {"name": f"{base}/csv", "command": ["--format", "csv", "--project", project.name, "OUT/items.csv"]},
        ]  # fmt: skip
        judged = (
            project.judgment_tasks.filter(
                pk__in=Judgment.objects.values("task_id"),
                unit_kind="item",
                scheme__in=LABEL_STUDIO_SCHEMES,
            )
            .order_by("pk")
            .values_list("pk", "name")
        )
        for pk, name in judged:
            task = slugify(name) or f"task-{pk}"
            specs.append(
                {
                    "name": f"{base}/label-studio-{task}",
                    "command": [*ls, "--with-judgments", name, "OUT/tasks.json"],
                }
            )
        for pk, name in (
            project.judgment_tasks.filter(pk__in=Judgment.objects.values("task_id"))
            .order_by("pk")
            .values_list("pk", "name")
        ):
            task = slugify(name) or f"task-{pk}"
            for fmt in ("csv", "jsonl"):
                path = reverse("review:judgments_export", kwargs={"pk": pk, "fmt": fmt})
                specs.append(
                    {
                        "name": f"{base}/judgments-{task}-{fmt}",
                        "get": path,
                        "file": f"judgments.{fmt}",
                    }
                )
    return specs


def exports_run(specs: list[dict[str, Any]], root: Path) -> dict[str, dict[str, Any]]:
    """Make each export into ``root/<name>/`` with this checkout's code; returns, per spec
    name, its files (sha256 and size) or the error it raised."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    out: dict[str, dict[str, Any]] = {}
    client = Client()
    client.force_login(get_user_model().objects.get(username=EXPORT_USER))
    for spec in specs:
        folder = root / spec["name"]
        folder.mkdir(parents=True)
        try:
            if "command" in spec:
                argv = [
                    arg.replace("OUT", str(folder)) if arg.startswith("OUT") else arg
                    for arg in spec["command"]
                ]
                call_command("export_dataset", *argv, stdout=io.StringIO())
            else:
                # as a user's saved link would: a path that moved answers 301 to where it went
                response = client.get(spec["get"], follow=True)
                if response.status_code != 200:
                    raise RuntimeError(f"GET {spec['get']} answered {response.status_code}")
                body = (
                    b"".join(response.streaming_content) if response.streaming else response.content
                )
                (folder / spec["file"]).write_bytes(body)
        except Exception as exc:  # reported, and compared as such
            out[spec["name"]] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        out[spec["name"]] = {"files": files_listed(folder)}
    return out


def is_text(path: str) -> bool:
    return Path(path).suffix.lower() in TEXT_SUFFIXES


def _json_values(path: Path) -> Any:
    """The JSON values of a .json, .jsonl or .csv file (a CSV cell holding a JSON array or
    object as that value), so two files can be compared without the order of object keys."""
    import csv

    text = path.read_text()
    if path.suffix == ".json":
        return json.loads(text)
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return [[_cell(c) for c in row] for row in rows]


def _cell(text: str) -> Any:
    if text[:1] in ("[", "{"):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def _same_values(a: Path, b: Path) -> bool:
    if a.suffix not in (".json", ".jsonl", ".csv"):
        return False
    try:
        return bool(_json_values(a) == _json_values(b))
    except ValueError:
        return False


def exports_compare(
    manifest: dict[str, Any], made: dict[str, Any], fixture: Path, out: Path, vendor: str
) -> list[str]:
    """Each export of the fixture made again: the same files with the same bytes. On another
    database than the fixture's (``vendor``), JSON in .json, .jsonl and .csv files may differ
    in the order of object keys only: PostgreSQL's jsonb keeps an object's keys in an order of
    its own. A text file that differs is shown by its first differing lines."""
    problems: list[str] = []
    for spec in manifest["exports"]:
        name = spec["name"]
        again = made.get(name, {"error": "not made"})
        if "error" in again:
            problems.append(f"export {name}: {again['error']}")
            continue
        before, after = spec["files"], again["files"]
        for rel in sorted(before.keys() - after.keys()):
            problems.append(f"export {name}: {rel} is no longer written")
        for rel in sorted(after.keys() - before.keys()):
            problems.append(f"export {name}: {rel} is new")
        for rel in sorted(before.keys() & after.keys()):
            if before[rel] == after[rel]:
                continue
            old_file, new_file = fixture / EXPORTS / name / rel, out / EXPORTS / name / rel
            if vendor != manifest["database"] and is_text(rel) and _same_values(old_file, new_file):
                continue
            message = f"export {name}: {rel} differs ({before[rel]['size']} -> {after[rel]['size']} bytes)"
            if is_text(rel):
                old_lines = old_file.read_text(errors="replace").splitlines()
                new_lines = new_file.read_text(errors="replace").splitlines()
                message += "\n" + "\n".join(_differences(old_lines, new_lines))
            problems.append(message)
    return problems


def _window(line: str, column: int, width: int = 90) -> str:
    start = max(0, column - width // 3)
    text = line[start : start + width]
    return ("..." if start else "") + text + ("..." if start + width < len(line) else "")


def _differences(before: list[str], after: list[str], limit: int = 4) -> list[str]:
    """The first ``limit`` differing lines of two texts, each around its first differing
    character (export lines are long: a whole JSON record)."""
    import difflib

    out: list[str] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            old = before[i1 + k] if i1 + k < i2 else None
            new = after[j1 + k] if j1 + k < j2 else None
            if old is None or new is None:
                side, line, n = ("after", new, j1 + k) if old is None else ("before", old, i1 + k)
                out.append(f"  line {n + 1} only {side}: {_window(line or '', 0)}")
            else:
                col = next(
                    (c for c, (x, y) in enumerate(zip(old, new, strict=False)) if x != y),
                    min(len(old), len(new)),
                )
                out.append(
                    f"  line {i1 + k + 1}, column {col + 1}:\n"
                    f"    before: {_window(old, col)}\n    after:  {_window(new, col)}"
                )
            if len(out) == limit:
                return out
    return out
