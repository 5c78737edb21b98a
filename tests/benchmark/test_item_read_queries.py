"""Reading one item (item page, judge page, every submitted judgment): the answer-hiding rules
are asked once, in a small query of their own, not once for the flag and again for every
secret column; a blind verifier still reads an empty answer that was never loaded. The
blind-verification rule first checks, in one small query, whether any task can hide an answer
from the user at all; when none can (most users, most pages) the rule adds nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmark import visibility
from benchmark.selectors import item_get
from tests.annotation.test_blind_answer_edits import world as world  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


def _read(user: Any, world: dict[str, Any]) -> tuple[Any, list[str]]:  # noqa: F811
    with CaptureQueriesContext(connection) as queries:
        item = item_get(user=user, project=world["project"], pk=world["item"].pk)
    return item, [q["sql"] for q in queries.captured_queries]


def test_one_item_read_asks_the_hiding_rules_once(world: dict[str, Any]) -> None:  # noqa: F811
    verifier = world["u"]["annotator1"]
    with visibility.decisions_remembered():  # one request
        rules_sql = str(visibility.hidden_items(user=verifier).query)
        per_rule = rules_sql.count("annotation_judgmenttask")
        assert per_rule > 0
        item, sqls = _read(verifier, world)
    # the rule (its check for blind tasks ran once, to build rules_sql above, and is
    # remembered for this request), then the row
    assert sum(sql.count("annotation_judgmenttask") for sql in sqls) == per_rule
    assert len(sqls) == 2
    # blind: the answer reads empty and was not selected
    assert item.answer_hidden is True
    assert item.expected_answer == "" and item.accepted_variants == [] and item.raw == ""
    assert not any("expected_answer" in sql for sql in sqls)


def test_a_reviewer_reads_the_answer(world: dict[str, Any]) -> None:  # noqa: F811
    item, sqls = _read(world["u"]["reviewer"], world)
    assert item.answer_hidden is False
    assert item.expected_answer == "Pack order"
    # no task can hide an answer from a reviewer: the check, then the row; no rule's subquery
    assert len(sqls) == 2
    assert "annotation_outcome" not in sqls[1] and "annotation_judgment" not in sqls[1]


def test_an_item_outside_the_users_projects_is_404(world: dict[str, Any]) -> None:  # noqa: F811
    from django.contrib.auth import get_user_model
    from django.http import Http404

    stranger = get_user_model().objects.create_user("stranger", password="x")
    with pytest.raises(Http404):
        item_get(user=stranger, project=world["project"], pk=world["item"].pk)
