"""What the database keeps about items so pages need not scan a project: the per-project
tallies (``benchmark_itemtally``: items by status, category and intent) and the text-search
index on ``query`` and ``external_id``.

Both are kept by the database itself, so no writer can forget them: bulk imports, queryset
updates and cascading deletes included.

- SQLite: row triggers keep the tallies; a contentless FTS5 table (``benchmark_item_fts``,
  the item's id as rowid, its project as a token) kept by triggers is the search index.
- PostgreSQL: one statement-level trigger function with transition tables keeps the tallies
  (one grouped upsert per statement, so a bulk insert of 100,000 items is one statement
  there too); a GIN index on ``to_tsvector('simple', ...)`` is the search index.

:func:`ensure` creates whatever is missing (idempotent). The migration
``item_tally_and_search`` runs it, and so does ``post_migrate``: SQLite's schema editor
rebuilds a table it alters (copy, drop, rename), which drops the table's triggers; running
:func:`ensure` after every migrate puts them back and recounts the tallies then.

:func:`search_terms` and :func:`search_sql` turn what a user typed into the same search on
both: every word must appear, the last one as a prefix (what is being typed). Words are runs
of letters and digits, so ``atp-00123`` searches ``atp`` and ``00123*``.
"""

from __future__ import annotations

import re
from typing import Any

ITEM = "benchmark_item"
TALLY = "benchmark_itemtally"
FTS = "benchmark_item_fts"
_KEYS = "project_id, status, category, intent"

# ------------------------------------------------------------------ SQLite

_SQLITE_TALLY_TRIGGERS = {
    "benchmark_item_tally_ins": f"""
CREATE TRIGGER IF NOT EXISTS benchmark_item_tally_ins AFTER INSERT ON {ITEM} BEGIN
  INSERT INTO {TALLY} ({_KEYS}, n) VALUES (new.project_id, new.status, new.category, new.intent, 1)
  ON CONFLICT ({_KEYS}) DO UPDATE SET n = n + 1;
END""",
    "benchmark_item_tally_del": f"""
CREATE TRIGGER IF NOT EXISTS benchmark_item_tally_del AFTER DELETE ON {ITEM} BEGIN
  UPDATE {TALLY} SET n = n - 1 WHERE project_id = old.project_id AND status = old.status
    AND category = old.category AND intent = old.intent;
END""",
    "benchmark_item_tally_upd": f"""
CREATE TRIGGER IF NOT EXISTS benchmark_item_tally_upd
AFTER UPDATE OF project_id, status, category, intent ON {ITEM}
WHEN old.project_id IS NOT new.project_id OR old.status IS NOT new.status
  OR old.category IS NOT new.category OR old.intent IS NOT new.intent BEGIN
  UPDATE {TALLY} SET n = n - 1 WHERE project_id = old.project_id AND status = old.status
    AND category = old.category AND intent = old.intent;
  INSERT INTO {TALLY} ({_KEYS}, n) VALUES (new.project_id, new.status, new.category, new.intent, 1)
  ON CONFLICT ({_KEYS}) DO UPDATE SET n = n + 1;
END""",
}

# Contentless (it keeps only the index; the text stays in benchmark_item), with the item's
# project as a token ("p<id>") so a search in one project intersects with that project's
# posting list instead of visiting every project's matches.
_SQLITE_FTS_TABLE = (
    f"CREATE VIRTUAL TABLE {FTS} USING fts5(query, external_id, project, content='', "
    "detail=column, tokenize='unicode61 remove_diacritics 0')"
)
_SQLITE_FTS_FILL = (
    f"INSERT INTO {FTS} (rowid, query, external_id, project) "
    f"SELECT id, query, external_id, 'p' || project_id FROM {ITEM}"
)
_FTS_NEW = "new.id, new.query, new.external_id, 'p' || new.project_id"
_FTS_OLD = "old.id, old.query, old.external_id, 'p' || old.project_id"
_SQLITE_FTS_TRIGGERS = {
    "benchmark_item_fts_ins": f"""
CREATE TRIGGER IF NOT EXISTS benchmark_item_fts_ins AFTER INSERT ON {ITEM} BEGIN
  INSERT INTO {FTS} (rowid, query, external_id, project) VALUES ({_FTS_NEW});
END""",
    "benchmark_item_fts_del": f"""
CREATE TRIGGER IF NOT EXISTS benchmark_item_fts_del AFTER DELETE ON {ITEM} BEGIN
  INSERT INTO {FTS} ({FTS}, rowid, query, external_id, project) VALUES ('delete', {_FTS_OLD});
END""",
    "benchmark_item_fts_upd": f"""
CREATE TRIGGER IF NOT EXISTS benchmark_item_fts_upd
AFTER UPDATE OF query, external_id, project_id ON {ITEM} BEGIN
  INSERT INTO {FTS} ({FTS}, rowid, query, external_id, project) VALUES ('delete', {_FTS_OLD});
  INSERT INTO {FTS} (rowid, query, external_id, project) VALUES ({_FTS_NEW});
END""",
}

# ------------------------------------------------------------------ PostgreSQL

# The indexed document, a stored generated column (Django's model does not know it, so it
# never reads or writes it): rows that the index finds are checked against it without
# parsing their text again. Punctuation becomes spaces first, so PostgreSQL's parser splits
# "atp-00123" or "a.b" into words as SQLite's unicode61 tokenizer does (it would otherwise
# keep hosts, file paths and hyphenated words whole).
PG_COLUMN = "search_document"
_PG_DOCUMENT = (
    "to_tsvector('simple'::regconfig, "
    "regexp_replace(query || ' ' || external_id, '[[:punct:]]+', ' ', 'g'))"
)
_PG_ADD_COLUMN = (
    f"ALTER TABLE {ITEM} ADD COLUMN IF NOT EXISTS {PG_COLUMN} tsvector "
    f"GENERATED ALWAYS AS ({_PG_DOCUMENT}) STORED"
)
_PG_MATCH = (
    "t.project_id = d.project_id AND t.status = d.status "
    "AND t.category = d.category AND t.intent = d.intent"
)
_PG_DELTA = (
    f"SELECT {_KEYS}, sum(n) AS n FROM (SELECT {_KEYS}, 1 AS n FROM new_rows "
    f"UNION ALL SELECT {_KEYS}, -1 FROM old_rows) AS x GROUP BY {_KEYS}"
)
# Rows are added in key order, so concurrent writers lock tally rows in one order.
_PG_FUNCTION = f"""
CREATE OR REPLACE FUNCTION benchmark_item_tally() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO {TALLY} AS t ({_KEYS}, n)
    SELECT {_KEYS}, count(*) FROM new_rows GROUP BY {_KEYS} ORDER BY {_KEYS}
    ON CONFLICT ({_KEYS}) DO UPDATE SET n = t.n + excluded.n;
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE {TALLY} AS t SET n = t.n - d.n
    FROM (SELECT {_KEYS}, count(*) AS n FROM old_rows GROUP BY {_KEYS}) AS d
    WHERE {_PG_MATCH};
  ELSE  -- UPDATE: only the net change per key, so an edit of the text writes nothing here
    INSERT INTO {TALLY} AS t ({_KEYS}, n)
    SELECT * FROM ({_PG_DELTA}) AS d WHERE d.n > 0 ORDER BY {_KEYS}
    ON CONFLICT ({_KEYS}) DO UPDATE SET n = t.n + excluded.n;
    UPDATE {TALLY} AS t SET n = t.n + d.n
    FROM ({_PG_DELTA}) AS d WHERE d.n < 0 AND {_PG_MATCH};
  END IF;
  RETURN NULL;
END $$"""
_PG_TRIGGERS = {
    "benchmark_item_tally_ins": (
        f"CREATE TRIGGER benchmark_item_tally_ins AFTER INSERT ON {ITEM} "
        "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
        "EXECUTE FUNCTION benchmark_item_tally()"
    ),
    "benchmark_item_tally_del": (
        f"CREATE TRIGGER benchmark_item_tally_del AFTER DELETE ON {ITEM} "
        "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
        "EXECUTE FUNCTION benchmark_item_tally()"
    ),
    "benchmark_item_tally_upd": (
        f"CREATE TRIGGER benchmark_item_tally_upd AFTER UPDATE ON {ITEM} "
        "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT "
        "EXECUTE FUNCTION benchmark_item_tally()"
    ),
}
_PG_INDEX = f"CREATE INDEX IF NOT EXISTS benchmark_item_search ON {ITEM} USING gin ({PG_COLUMN})"

_RECOUNT = [
    f"DELETE FROM {TALLY}",
    f"INSERT INTO {TALLY} ({_KEYS}, n) SELECT {_KEYS}, count(*) FROM {ITEM} GROUP BY {_KEYS}",
]


def ensure(connection: Any) -> None:
    """Create the tally triggers and the search index where missing; recount the tallies
    when a trigger had to be (re)created."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            _ensure_sqlite(cursor)
        elif connection.vendor == "postgresql":
            _ensure_postgresql(cursor)


def _ensure_sqlite(cursor: Any) -> None:
    cursor.execute("SELECT name FROM sqlite_master WHERE type IN ('trigger', 'table')")
    have = {row[0] for row in cursor.fetchall()}
    if ITEM not in have or TALLY not in have:
        return  # before the migration that makes them
    if not set(_SQLITE_TALLY_TRIGGERS) <= have:
        for sql in _RECOUNT:
            cursor.execute(sql)
        for sql in _SQLITE_TALLY_TRIGGERS.values():
            cursor.execute(sql)
    if FTS not in have:
        cursor.execute(_SQLITE_FTS_TABLE)
    if FTS not in have or not set(_SQLITE_FTS_TRIGGERS) <= have:
        cursor.execute(f"INSERT INTO {FTS} ({FTS}) VALUES ('delete-all')")
        cursor.execute(_SQLITE_FTS_FILL)
        for sql in _SQLITE_FTS_TRIGGERS.values():
            cursor.execute(sql)


def _ensure_postgresql(cursor: Any) -> None:
    cursor.execute("SELECT to_regclass(%s), to_regclass(%s)", [ITEM, TALLY])
    if None in cursor.fetchone():
        return
    cursor.execute("SELECT tgname FROM pg_trigger WHERE tgrelid = %s::regclass", [ITEM])
    have = {row[0] for row in cursor.fetchall()}
    if not set(_PG_TRIGGERS) <= have:
        cursor.execute(_PG_FUNCTION)
        for name, sql in _PG_TRIGGERS.items():
            cursor.execute(f"DROP TRIGGER IF EXISTS {name} ON {ITEM}")
            cursor.execute(sql)
        for sql in _RECOUNT:
            cursor.execute(sql)
    cursor.execute("SELECT to_regclass('benchmark_item_search')")
    if cursor.fetchone()[0] is None:
        # CREATE INDEX refuses a table with pending (deferred foreign-key) trigger events
        # in the transaction: check those now.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(_PG_ADD_COLUMN)
        cursor.execute(_PG_INDEX)


# Row triggers cost a bulk insert on SQLite more than the insert itself (an FTS5 insert per
# row): a bulk load drops the two INSERT triggers in its transaction and, at its end, fills the
# index and the tallies with one statement each for the rows above the largest id it saw first,
# then puts the triggers back. SQLite's schema changes are part of the transaction, so a
# rollback (or a rollback to a savepoint) restores the triggers, and no other connection can
# write in between (one writer at a time).
_SQLITE_BULK_TRIGGERS = ("benchmark_item_tally_ins", "benchmark_item_fts_ins")
_SQLITE_BULK_FILL = [
    f"{_SQLITE_FTS_FILL} WHERE id > %s",
    f"INSERT INTO {TALLY} ({_KEYS}, n) SELECT {_KEYS}, count(*) FROM {ITEM} WHERE id > %s "
    f"GROUP BY {_KEYS} ORDER BY {_KEYS} ON CONFLICT ({_KEYS}) DO UPDATE SET n = n + excluded.n",
]


def bulk_begin(connection: Any) -> int | None:
    """Before a bulk insert of items, in the transaction that makes it: on SQLite, drop the row
    triggers that index and count each new item and return the largest item id so far, for
    :func:`bulk_end`; elsewhere (PostgreSQL's triggers are per statement already) None."""
    if connection.vendor != "sqlite" or not connection.in_atomic_block:
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        have = {row[0] for row in cursor.fetchall()}
        if not set(_SQLITE_BULK_TRIGGERS) <= have:
            return None  # before the migration that makes them: nothing to defer
        cursor.execute(f"SELECT coalesce(max(id), 0) FROM {ITEM}")
        before = int(cursor.fetchone()[0])
        for name in _SQLITE_BULK_TRIGGERS:
            cursor.execute(f"DROP TRIGGER {name}")
    return before


def bulk_end(connection: Any, before: int | None) -> None:
    """After the bulk insert that :func:`bulk_begin` (which returned ``before``) prepared:
    index and count the items above ``before`` and put the row triggers back."""
    if before is None:
        return
    with connection.cursor() as cursor:
        for sql in _SQLITE_BULK_FILL:
            cursor.execute(sql, [before])
        cursor.execute(_SQLITE_TALLY_TRIGGERS["benchmark_item_tally_ins"])
        cursor.execute(_SQLITE_FTS_TRIGGERS["benchmark_item_fts_ins"])


def drop(connection: Any) -> None:
    """Undo :func:`ensure` (the migration's reverse)."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            for name in [*_SQLITE_TALLY_TRIGGERS, *_SQLITE_FTS_TRIGGERS]:
                cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
            cursor.execute(f"DROP TABLE IF EXISTS {FTS}")
        elif connection.vendor == "postgresql":
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # as in _ensure_postgresql
            for name in _PG_TRIGGERS:
                cursor.execute(f"DROP TRIGGER IF EXISTS {name} ON {ITEM}")
            cursor.execute("DROP FUNCTION IF EXISTS benchmark_item_tally()")
            cursor.execute("DROP INDEX IF EXISTS benchmark_item_search")
            cursor.execute(f"ALTER TABLE {ITEM} DROP COLUMN IF EXISTS {PG_COLUMN}")


# ------------------------------------------------------------------ search

_WORD = re.compile(r"[^\W_]+")


def search_terms(text: str) -> list[str]:
    """The words of what a user typed, lower-cased (at most 16)."""
    return _WORD.findall(text.lower())[:16]


def search_sql(vendor: str, terms: list[str], project_id: int | None) -> tuple[str, list[Any]]:
    """A condition on ``benchmark_item`` true for the items holding every term (the last as a
    prefix), with its parameters; ``terms`` must not be empty. On SQLite the condition joins
    ``benchmark_item_fts`` (the caller adds the table to the query, see
    ``benchmark.selectors.item_search``), so the index drives the query in rowid
    order and stops at the page's last row."""
    if vendor == "postgresql":
        tsquery = " & ".join(terms[:-1] + [f"{terms[-1]}:*"])
        return f'"{ITEM}"."{PG_COLUMN}" @@ to_tsquery(\'simple\'::regconfig, %s)', [tsquery]
    words = " AND ".join([*(f'"{t}"' for t in terms[:-1]), f'"{terms[-1]}"*'])
    match = f"{{query external_id}} : ({words})"
    if project_id is not None:
        match = f'project : "p{int(project_id)}" AND {match}'
    return f'{FTS}.rowid = "{ITEM}"."id" AND {FTS} MATCH %s', [match]
