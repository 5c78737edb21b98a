"""Each data migration says in its docstring what happens to old rows (issue 22, item 16).

Every RunPython and RunSQL operation in the migrations of Benchwright's apps (inside a
SeparateDatabaseAndState too) needs a paragraph that starts with ``Old rows:`` in the
migration module's docstring or in the RunPython function's, saying what the operation does
to the rows that exist when it runs (kept as they are, filled, recounted, packed...) and what
migrating back does. A schema-only migration needs none: Django's operations say it.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Iterator
from typing import Any

from django.db import migrations
from django.db.migrations.loader import MigrationLoader

APPS = ("benchmark", "annotation", "review")
OLD_ROWS = re.compile(r"^\s*Old rows:\s+\S.{20,}", re.MULTILINE | re.DOTALL)


def _data_operations(ops: Any) -> Iterator[Any]:
    for op in ops:
        if isinstance(op, migrations.SeparateDatabaseAndState):
            yield from _data_operations(op.database_operations)
        elif isinstance(op, migrations.RunPython | migrations.RunSQL):
            yield op


def _data_migrations() -> list[tuple[str, Any, list[Any]]]:
    loader = MigrationLoader(None, ignore_no_migrations=True)  # from disk, no database
    found = []
    for (app, name), migration in sorted(loader.disk_migrations.items()):
        if app in APPS:
            ops = list(_data_operations(migration.operations))
            if ops:
                found.append((f"{app}.{name}", migration, ops))
    return found


def _says_what_happens(doc: str | None) -> bool:
    return bool(doc and OLD_ROWS.search(inspect.cleandoc(doc)))


def test_every_data_migration_says_what_happens_to_old_rows() -> None:
    found = _data_migrations()
    names = {name for name, _, _ in found}
    # The walk finds them, including RunPython next to a SeparateDatabaseAndState.
    assert {
        "annotation.0015_judgment_team_indexes",
        "annotation.0016_judgment_agreement_and_day",
        "annotation.0018_unpack_response_version_text",
        "benchmark.0015_item_tally_and_search",
        "benchmark.0019_unpack_response_text",
    } <= names
    missing = []
    for name, migration, ops in found:
        module_doc = sys.modules[type(migration).__module__].__doc__
        for op in ops:
            code = getattr(op, "code", None)
            if not (_says_what_happens(module_doc) or _says_what_happens(code and code.__doc__)):
                what = code.__name__ if code else "RunSQL"
                missing.append(f"{name} ({what})")
    assert missing == [], (
        "these data migrations do not say what happens to old rows (a paragraph starting "
        f"'Old rows:' in the module's or the function's docstring): {', '.join(missing)}"
    )


def test_the_rule_wants_a_sentence_not_the_words() -> None:
    assert _says_what_happens(
        '"""Fill x.\n\nOld rows: each gets its credit stored; others stay."""'
    )
    assert not _says_what_happens("Fill the agreement credit of every judgment.")
    assert not _says_what_happens("Old rows:")
    assert not _says_what_happens(None)
