"""Long answer texts (Response.text, ResponseVersion.text) are stored compressed on SQLite
(PackedTextField) and read back as the same text, whichever way they were written (the ORM, the
bulk import, rows stored before the change) and read (the ORM, subqueries, the export's plain
SQL). PostgreSQL keeps plain text and compresses it itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.db import NotSupportedError, connection
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.tag_review import selectors as tag_selectors
from annotation.tag_review.models import ResponseVersion
from annotation.tag_review.services import response_save_version
from benchmark import fields
from benchmark.fields import PACK_FROM, pack_stored_text, pack_text, unpack_text
from benchmark.models import ItemStatus, Origin, Project, Response, Role
from review.answers.services import ground_truth_texts
from tests.factories import (
    ItemFactory,
    MembershipFactory,
    ProjectFactory,
    ResponseFactory,
    UserFactory,
)
from tests.jsonl_io import export_lines, import_lines

SQLITE = connection.vendor == "sqlite"


def call(n: int) -> str:
    return f'<tool>{{"tool_name": "Reference", "description": "d{n}", "params": {{"img_index": {n}}}}}</tool>'


def long_answer(calls: int, seed: int = 0) -> str:
    """An interleaved answer of about 700 characters per call, with some non-ASCII text."""
    para = f"Part {seed}: the encoder turns the image into patch features, Grüße 東京. " * 9
    return "\n\n".join(f"{para}\n\n{call(n)}" for n in range(calls))


def stored(table: str, pk: int) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT text FROM {table} WHERE id = %s", [pk])
        return cursor.fetchone()[0]


# --------------------------------------------------------------------------- pure functions


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=3000) | st.text(alphabet="ab <>{}", min_size=PACK_FROM, max_size=3000))
def test_pack_then_unpack_gives_back_the_same_text(text: str) -> None:
    packed = pack_text(text)
    assert unpack_text(packed) == text
    if type(packed) is bytes:
        assert len(text) >= PACK_FROM and len(packed) < len(text.encode())


def test_short_incompressible_and_other_values_stay_as_they_are() -> None:
    assert pack_text("") == ""
    assert pack_text("x" * (PACK_FROM - 1)) == "x" * (PACK_FROM - 1)
    assert pack_text(None) is None and unpack_text(None) is None
    assert unpack_text("plain") == "plain"
    text = long_answer(2)
    packed = pack_text(text)
    assert type(packed) is bytes and len(packed) * 3 < len(text.encode())
    assert pack_text(text) == packed  # the same text, the same bytes: equality lookups match


def test_text_that_would_not_shrink_by_a_tenth_stays_text(monkeypatch: pytest.MonkeyPatch) -> None:
    class Poor:  # a compressor that saves only 5%
        def compress(self, data: bytes) -> bytes:
            return data[: len(data) * 95 // 100]

    fields._codec()  # this thread's pair, then its compressor replaced
    monkeypatch.setattr(fields._codecs, "pair", (Poor(), fields._codecs.pair[1]))
    text = long_answer(2)
    assert pack_text(text) == text


# --------------------------------------------------------------------------- through the ORM


@pytest.mark.django_db
def test_a_long_answer_is_stored_packed_on_sqlite_and_read_back_unchanged() -> None:
    text = long_answer(3)
    short = ResponseFactory(text="A short answer.")
    response = ResponseFactory(text=text)
    raw = stored("benchmark_response", response.pk)
    if SQLITE:
        assert type(raw) is bytes and len(raw) * 3 < len(text.encode())
    else:
        assert raw == text  # PostgreSQL compresses it itself (TOAST)
    assert stored("benchmark_response", short.pk) == "A short answer."
    assert Response.objects.get(pk=response.pk).text == text
    assert list(Response.objects.filter(pk=response.pk).values_list("text", flat=True)) == [text]
    # equality lookups compare the stored forms, which the same text always packs to
    assert Response.objects.filter(text=text).get().pk == response.pk
    assert Response.objects.filter(text__in=[text, "A short answer."]).count() == 2
    Response.objects.filter(pk=short.pk).update(text=text + " More.")
    assert Response.objects.get(pk=short.pk).text == text + " More."


@pytest.mark.django_db
def test_pattern_lookups_say_they_cannot_search_packed_text_on_sqlite() -> None:
    ResponseFactory(text=long_answer(2))
    query = Response.objects.filter(text__icontains="encoder")
    if SQLITE:
        with pytest.raises(NotSupportedError, match="PackedTextField on SQLite"):
            list(query)
    else:
        assert query.count() == 1


@pytest.mark.django_db
def test_rows_written_before_the_change_read_as_they_were_and_the_migration_packs_them() -> None:
    texts = [long_answer(2, seed=n) for n in range(5)]
    responses = [ResponseFactory(text="placeholder") for _ in texts]
    with connection.cursor() as cursor:  # as an older version stored them: plain text
        for response, text in zip(responses, texts, strict=True):
            cursor.execute(
                "UPDATE benchmark_response SET text = %s WHERE id = %s", [text, response.pk]
            )
    assert [Response.objects.get(pk=r.pk).text for r in responses] == texts
    assert pack_stored_text(connection, "benchmark_response", batch=2) == (5 if SQLITE else 0)
    assert pack_stored_text(connection, "benchmark_response") == 0  # nothing left to pack
    kinds = {type(stored("benchmark_response", r.pk)) for r in responses}
    assert kinds == ({bytes} if SQLITE else {str})
    assert [Response.objects.get(pk=r.pk).text for r in responses] == texts


# --------------------------------------------------------------------------- import and export


def _record(i: int) -> dict[str, Any]:
    return {
        "trace_id": f"p{i}",
        "query": f"How does part {i} work?",
        "image_query": None,
        "doc": [{"text": f"Document {i}.", "images": []}],
        "images": [],
        "gt": long_answer(3, seed=i),
        "category": "Academic",
        "intent": "Framework",
    }


@pytest.fixture
def imported(db: None, tmp_path: Path) -> tuple[Project, list[str]]:
    project = ProjectFactory(name="packed answers")
    lines = [json.dumps(_record(i), ensure_ascii=i % 2 == 0) for i in range(4)]
    import_lines(project, lines, tmp_path)
    return project, lines


def test_the_bulk_import_packs_long_answers_and_the_export_gives_the_same_bytes(
    imported: tuple[Project, list[str]], tmp_path: Path
) -> None:
    project, lines = imported
    gt = Response.objects.get(item__project=project, item__external_id="p1")
    assert gt.text == _record(1)["gt"]
    assert type(stored("benchmark_response", gt.pk)) is (bytes if SQLITE else str)
    assert export_lines(project, tmp_path) == lines


def test_a_saved_long_version_is_packed_and_counted_by_the_stats_and_the_scorer(
    imported: tuple[Project, list[str]], tmp_path: Path
) -> None:
    project, _ = imported
    reviewer = UserFactory()
    MembershipFactory(project=project, user=reviewer, role=Role.ADMIN)
    project.items.update(status=ItemStatus.VERIFIED)
    gt = Response.objects.get(item__project=project, item__external_id="p2")
    edited = long_answer(7, seed=99)
    version = response_save_version(
        response=gt, user=reviewer, text=edited, base_number=1, decisions=[]
    )
    assert type(stored("annotation_responseversion", version.pk)) is (bytes if SQLITE else str)
    assert ResponseVersion.objects.get(pk=version.pk).text == edited
    # the newest version through a subquery (Coalesce of two packed columns) ...
    stats = tag_selectors.dataset_stats(user=reviewer, project=project)
    assert stats["overall"]["tc_per_gt"] == pytest.approx((3 + 3 + 7 + 3) / 4)
    # ... and through a subquery read as its own column
    texts = ground_truth_texts(project=project)
    assert texts["p2"] == edited and texts["p0"] == _record(0)["gt"]
    assert json.loads(export_lines(project, tmp_path)[2])["gt"] == edited


@pytest.mark.django_db
def test_ground_truth_of_an_item_without_versions_is_its_imported_text() -> None:
    item = ItemFactory(status=ItemStatus.VERIFIED)
    text = long_answer(2)
    ResponseFactory(item=item, key="gt", origin=Origin.GROUND_TRUTH, text=text)
    assert ground_truth_texts(project=item.project) == {item.external_id: text}
