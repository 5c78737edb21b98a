"""Snapshot and load the whole database, per engine, with the engine's own tools.

- SQLite: the online backup API (``sqlite3.Connection.backup``) copies every page in one step
  inside one read transaction, so the copy is the database at one instant while others keep
  writing (WAL lets them). Restoring copies the file back the same way, in one write
  transaction.
- PostgreSQL: ``pg_dump`` (custom format) in a transaction whose snapshot it shares
  (``pg_export_snapshot``), so the row counts in the manifest are those of the dump; restoring
  is ``pg_restore --single-transaction`` into a database without tables.

The rows per model and the applied migrations are read from the snapshot itself."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from django.apps import apps
from django.db import connection, transaction
from django.db.backends.postgresql.client import DatabaseClient

from benchmark.backup.manifest import DATABASE_FILES
from benchmark.exceptions import ValidationFailed

#: Rows ``manage.py migrate`` writes into an empty database itself: a database holding only
#: these is empty.
MIGRATE_MADE = {"contenttypes.ContentType", "auth.Permission"}


class BackupFailed(ValidationFailed):
    """A backup or restore could not be done; nothing was written (the message says why)."""


@dataclass
class Snapshot:
    """What the manifest says about the database copy."""

    engine: str
    facts: dict[str, Any] = field(default_factory=dict)
    migrations: dict[str, list[str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


def _tables() -> dict[str, str]:
    """Model label -> table, for every concrete model (many-to-many tables included)."""
    return {
        m._meta.label: m._meta.db_table
        for m in apps.get_models(include_auto_created=True)
        if m._meta.managed and not m._meta.proxy
    }


def _read_state(cursor: Any, quote: Any, present: set[str]) -> tuple[dict, dict]:
    """(applied migrations per app, rows per model label) through ``cursor``, for the tables
    in ``present``."""
    migrations: dict[str, list[str]] = {}
    if "django_migrations" in present:
        cursor.execute("SELECT app, name FROM django_migrations ORDER BY app, name")
        for app, name in cursor.fetchall():
            migrations.setdefault(app, []).append(name)
    counts = {}
    for label, table in sorted(_tables().items()):
        if table in present:
            cursor.execute(f"SELECT COUNT(*) FROM {quote(table)}")  # noqa: S608 (model tables)
            counts[label] = int(cursor.fetchone()[0])
    return migrations, counts


def data_rows() -> dict[str, int]:
    """Rows per model in the current database beyond what ``migrate`` writes itself (an
    empty database answers {})."""
    present = set(connection.introspection.table_names())
    with connection.cursor() as cursor:
        _, counts = _read_state(cursor, connection.ops.quote_name, present)
    return {k: n for k, n in counts.items() if n and k not in MIGRATE_MADE}


def current_counts() -> dict[str, int]:
    """Rows per model label in the current database (tables that exist)."""
    present = set(connection.introspection.table_names())
    with connection.cursor() as cursor:
        return _read_state(cursor, connection.ops.quote_name, present)[1]


class Engine(Protocol):
    name: str

    def check_tools(self, manifest: dict[str, Any] | None) -> None: ...

    def snapshot(self, target: Path) -> Snapshot: ...

    def load(self, source: Path) -> None: ...


# --------------------------------------------------------------------------- SQLite


def _quote_sqlite(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class SqliteEngine:
    name = "sqlite"

    def check_tools(self, manifest: dict[str, Any] | None) -> None:
        return None  # the sqlite3 module is all it takes

    def snapshot(self, target: Path) -> Snapshot:
        if connection.in_atomic_block:
            raise BackupFailed("a backup cannot be taken inside a transaction")
        connection.ensure_connection()
        source = connection.connection
        with closing(sqlite3.connect(target)) as copy:
            source.backup(copy)  # every page in one step: one consistent read
            copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
            with closing(copy.cursor()) as cursor:
                cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                present = {row[0] for row in cursor.fetchall()}
                migrations, counts = _read_state(cursor, _quote_sqlite, present)
                cursor.execute("PRAGMA quick_check")
                check = cursor.fetchone()[0]
        if check != "ok":
            raise BackupFailed(f"the copy of the SQLite database fails its check: {check}")
        return Snapshot(
            engine=self.name,
            facts={"sqlite_version": sqlite3.sqlite_version},
            migrations=migrations,
            counts=counts,
        )

    def load(self, source: Path) -> None:
        uri = source.resolve().as_uri() + "?immutable=1"
        connection.close()
        connection.ensure_connection()
        with closing(sqlite3.connect(uri, uri=True)) as backup:
            # Replaces every page of the database in one write transaction.
            backup.backup(connection.connection)
        connection.close()


# --------------------------------------------------------------------------- PostgreSQL

_VERSION = re.compile(r"\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?")


def pg_tool_major(tool: str) -> tuple[str, int]:
    """(path, major version) of the PostgreSQL client tool ``tool`` found on PATH; a clear
    BackupFailed when it is missing or does not say its version."""
    path = shutil.which(tool)
    if path is None:
        raise BackupFailed(
            f"{tool} was not found on PATH; install the PostgreSQL client tools of your "
            "server's version (e.g. apt-get install postgresql-client-15) or put them on PATH"
        )
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except OSError as exc:
        raise BackupFailed(f"{path} does not run: {exc}") from None
    found = _VERSION.search(out)
    if found is None:
        raise BackupFailed(f"{path} --version did not name a PostgreSQL version: {out.strip()!r}")
    return path, int(found.group(1))


def _server_major() -> int:
    connection.ensure_connection()
    return int(connection.pg_version) // 10000  # type: ignore[attr-defined]


def _pg_env() -> dict[str, str]:
    """libpq's environment for the current database (tools read the connection from it)."""
    s = connection.settings_dict
    _, extra = DatabaseClient.settings_to_cmd_args_env(s, [])
    env = {**os.environ, **(extra or {})}
    for var, value in (
        ("PGHOST", s.get("HOST")),
        ("PGPORT", s.get("PORT")),
        ("PGUSER", s.get("USER")),
        ("PGDATABASE", s.get("NAME")),
    ):
        if value:
            env[var] = str(value)
    return env


def _tail(text: str, lines: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


@contextmanager
def _exported_snapshot() -> Iterator[tuple[Any, str]]:
    """(a cursor in a read-only repeatable-read transaction, the id of its snapshot for
    ``pg_dump --snapshot``), on a connection of its own, held while the block runs."""
    raw = connection.get_new_connection(connection.get_connection_params())
    try:
        raw.autocommit = False
        with raw.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            cursor.execute("SELECT pg_export_snapshot()")
            yield cursor, cursor.fetchone()[0]
        raw.rollback()
    finally:
        raw.close()


class PostgresEngine:
    name = "postgresql"

    def check_tools(self, manifest: dict[str, Any] | None) -> None:
        """For a backup (``manifest`` None): pg_dump at least as new as the server (an older
        pg_dump refuses a newer server). For a restore: pg_restore at least as new as the
        pg_dump that wrote the backup, and a server at least as new as the one dumped."""
        server = _server_major()
        if manifest is None:
            path, major = pg_tool_major("pg_dump")
            if major < server:
                raise BackupFailed(
                    f"{path} is version {major} but the server is PostgreSQL {server}: pg_dump "
                    f"cannot dump a newer server. Install postgresql-client-{server} and put "
                    "its pg_dump first on PATH"
                )
            return
        facts = manifest["database"]
        path, major = pg_tool_major("pg_restore")
        dumped_by = int(facts.get("pg_dump_major") or 0)
        if major < dumped_by:
            raise BackupFailed(
                f"{path} is version {major} but the backup was written by pg_dump {dumped_by}: "
                f"install postgresql-client-{dumped_by} (or newer) and put its pg_restore "
                "first on PATH"
            )
        source = int(facts.get("server_major") or 0)
        if server < source:
            raise BackupFailed(
                f"the backup is of a PostgreSQL {source} database and this server is "
                f"PostgreSQL {server}: restore into PostgreSQL {source} or newer"
            )

    def snapshot(self, target: Path) -> Snapshot:
        pg_dump, major = pg_tool_major("pg_dump")
        with _exported_snapshot() as (cursor, snapshot_id):
            cursor.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
            present = {row[0] for row in cursor.fetchall()}
            migrations, counts = _read_state(cursor, connection.ops.quote_name, present)
            done = subprocess.run(
                [pg_dump, "--format=custom", f"--snapshot={snapshot_id}", f"--file={target}"],
                env=_pg_env(),
                capture_output=True,
                text=True,
                check=False,
            )
        if done.returncode != 0:
            raise BackupFailed(f"pg_dump failed (exit {done.returncode}): {_tail(done.stderr)}")
        return Snapshot(
            engine=self.name,
            facts={"pg_dump_major": major, "server_major": _server_major()},
            migrations=migrations,
            counts=counts,
        )

    def load(self, source: Path) -> None:
        pg_restore, _ = pg_tool_major("pg_restore")
        _pg_clear()
        done = subprocess.run(
            [pg_restore, "--no-owner", "--no-privileges", "--single-transaction",
             "--exit-on-error", f"--dbname={connection.settings_dict['NAME']}", str(source)],
            env=_pg_env(), capture_output=True, text=True, check=False,
        )  # fmt: skip
        connection.close()
        if done.returncode != 0:
            raise BackupFailed(
                f"pg_restore failed (exit {done.returncode}), so nothing of the backup was "
                f"kept and the database has no tables: {_tail(done.stderr)}"
            )


def _pg_clear() -> None:
    """Drop every table, sequence, view and function of the current schema (not those of
    extensions), in one transaction: what ``migrate`` made in a database with no data, or,
    with ``--force``, a database being replaced."""
    not_extension = (
        "NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = {oid} AND d.deptype = 'e')"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        for kinds, what in ((("r", "p"), "TABLE"), (("v", "m"), "VIEW"), (("S",), "SEQUENCE")):
            cursor.execute(
                "SELECT c.relname, c.relkind FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND c.relkind = ANY(%s) AND "
                + not_extension.format(oid="c.oid"),
                [list(kinds)],
            )
            for name, kind in cursor.fetchall():
                materialized = "MATERIALIZED " if kind == "m" else ""
                cursor.execute(
                    f"DROP {materialized}{what} IF EXISTS {connection.ops.quote_name(name)} CASCADE"
                )
        cursor.execute(
            "SELECT p.oid::regprocedure::text FROM pg_proc p "
            "WHERE p.pronamespace = current_schema()::regnamespace AND "
            + not_extension.format(oid="p.oid")
        )
        for (signature,) in cursor.fetchall():
            cursor.execute(f"DROP FUNCTION IF EXISTS {signature} CASCADE")


ENGINES: dict[str, type[Engine]] = {
    "sqlite": SqliteEngine,
    "postgresql": PostgresEngine,
}


def engine_current() -> Engine:
    """The engine of the default database."""
    vendor = connection.vendor
    if vendor not in ENGINES or vendor not in DATABASE_FILES:
        raise BackupFailed(f"backups of {vendor} databases are not supported")
    return ENGINES[vendor]()
