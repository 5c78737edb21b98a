"""Answer texts (Response.text, ResponseVersion.text) are plain text columns on every database:
the compressed field SQLite once used (PackedTextField) is gone. The migrations
benchmark 0019 and annotation 0018 turn the rows it stored compressed (bytes: the tag "Z" and a
zstd frame, written here as the old code wrote them) back into text; text searches work on
SQLite (the ORM's ``contains`` and the admin's search); the bulk import and the export give the
same bytes; subqueries over versions read the texts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from annotation.tag_review import selectors as tag_selectors
from annotation.tag_review.services import response_save_version
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
# The last migrations before the unpacking, and the unpacking itself.
BEFORE = [
    ("benchmark", "0017_long_answer_text_packed_on_sqlite"),
    ("annotation", "0017_answer_versions_packed_on_sqlite"),
]
UNPACK = [
    ("benchmark", "0019_unpack_response_text"),
    ("annotation", "0018_unpack_response_version_text"),
]


def call(n: int) -> str:
    return f'<tool>{{"tool_name": "Reference", "description": "d{n}", "params": {{"img_index": {n}}}}}</tool>'


def long_answer(calls: int, seed: int = 0) -> str:
    """An interleaved answer of about 700 characters per call, with some non-ASCII text."""
    para = f"Part {seed}: the encoder turns the image into patch features, Grüße 東京. " * 9
    return "\n\n".join(f"{para}\n\n{call(n)}" for n in range(calls))


def packed_the_old_way(text: str) -> bytes:
    """What PackedTextField stored on SQLite for a long text: b"Z", then a zstd frame."""
    import zstandard

    return b"Z" + zstandard.ZstdCompressor(level=3).compress(text.encode())


def stored(table: str, pk: int) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT text FROM {table} WHERE id = %s", [pk])
        return cursor.fetchone()[0]


def migrate(targets: list[tuple[str, str]]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.fixture
def before_unpacking(transactional_db: None) -> Iterator[Any]:
    """The database as it stood before the unpacking migrations, and its models as they stood
    then (rows are written with those: today's models have columns added since);
    afterwards, the newest."""
    migrate(BEFORE)
    try:
        executor = MigrationExecutor(connection)
        yield executor.loader.project_state(BEFORE).apps
    finally:
        executor = MigrationExecutor(connection)
        migrate(executor.loader.graph.leaf_nodes())


# --------------------------------------------------------------------------- the migrations


def test_the_migrations_unpack_what_was_stored_compressed(before_unpacking: Any) -> None:
    apps = before_unpacking
    toolset = apps.get_model("benchmark", "Toolset").objects.create(name="unpacking")
    project = apps.get_model("benchmark", "Project").objects.create(
        name="unpacking", kind="interleaved", data_format="atp", tag_syntax="atp", toolset=toolset
    )
    item = apps.get_model("benchmark", "Item").objects.create(project=project, external_id="i1")
    answer_model = apps.get_model("benchmark", "Response")
    keys = iter(range(100))

    def answer(text: str) -> Any:
        n = next(keys)
        return answer_model.objects.create(
            item=item, key=f"k{n}", origin="ground_truth", position=n, text=text
        )

    texts = [long_answer(2, seed=n) for n in range(5)]
    answers = [answer(text) for text in texts]
    short = answer("A short answer.")
    plain = answer(long_answer(1, seed=9))  # a long text stored as text
    reviewer = apps.get_model("auth", "User").objects.create(username="reviewer")
    version_model = apps.get_model("annotation", "ResponseVersion")
    versions = [
        version_model.objects.create(response=answers[0], number=n, author=reviewer, text=text)
        for n, text in ((1, "x"), (2, texts[4] + " edited"))
    ]
    if SQLITE:  # as the old code stored them; PostgreSQL always kept text
        with connection.cursor() as cursor:
            for answer, text in zip(answers, texts, strict=True):
                cursor.execute(
                    "UPDATE benchmark_response SET text = %s WHERE id = %s",
                    [packed_the_old_way(text), answer.pk],
                )
            cursor.execute(
                "UPDATE annotation_responseversion SET text = %s WHERE id = %s",
                [packed_the_old_way(texts[4] + " edited"), versions[1].pk],
            )
        assert type(stored("benchmark_response", answers[0].pk)) is bytes

    migrate(UNPACK)

    assert [stored("benchmark_response", a.pk) for a in answers] == texts
    assert stored("benchmark_response", short.pk) == "A short answer."
    assert stored("benchmark_response", plain.pk) == long_answer(1, seed=9)
    assert stored("annotation_responseversion", versions[0].pk) == "x"
    assert stored("annotation_responseversion", versions[1].pk) == texts[4] + " edited"
    assert Response.objects.get(pk=answers[3].pk).text == texts[3]
    assert Response.objects.filter(text__contains="Part 3:").get().pk == answers[3].pk
    if SQLITE:  # nothing left that is not text
        with connection.cursor() as cursor:
            for table in ("benchmark_response", "annotation_responseversion"):
                cursor.execute(f"SELECT count(*) FROM {table} WHERE typeof(text) <> 'text'")
                assert cursor.fetchone()[0] == 0, table


# --------------------------------------------------------------------------- searching the text


@pytest.mark.django_db
def test_text_lookups_find_long_answers_on_every_database() -> None:
    long = ResponseFactory(text=long_answer(3))
    ResponseFactory(text="A short answer.")
    assert stored("benchmark_response", long.pk) == long_answer(3)
    assert list(Response.objects.filter(text__icontains="ENCODER")) == [long]
    assert Response.objects.filter(text__startswith="Part 0:").get() == long
    assert Response.objects.filter(text__regex=r"Grüße 東京").count() == 1
    assert Response.objects.filter(text=long_answer(3)).get() == long


@pytest.mark.django_db
def test_the_admin_searches_the_text_of_answers(client_for: Any) -> None:
    long = ResponseFactory(text=long_answer(2), key="the-long-one")
    ResponseFactory(text="Nothing of that kind.", key="the-other-one")
    root = get_user_model().objects.create_superuser("root", "root@example.org", "pw")
    client: Client = client_for(root)
    page = client.get("/admin/benchmark/response/?q=patch+features")
    assert page.status_code == 200
    html = page.content.decode()
    assert f"/admin/benchmark/response/{long.pk}/change/" in html
    assert "the-other-one" not in html


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
    project = ProjectFactory(name="long answers")
    lines = [json.dumps(_record(i), ensure_ascii=i % 2 == 0) for i in range(4)]
    import_lines(project, lines, tmp_path)
    return project, lines


def test_the_bulk_import_stores_text_and_the_export_gives_the_same_bytes(
    imported: tuple[Project, list[str]], tmp_path: Path
) -> None:
    project, lines = imported
    gt = Response.objects.get(item__project=project, item__external_id="p1")
    assert gt.text == _record(1)["gt"]
    assert stored("benchmark_response", gt.pk) == _record(1)["gt"]
    assert export_lines(project, tmp_path) == lines


def test_a_saved_long_version_is_counted_by_the_stats_and_the_scorer(
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
    assert stored("annotation_responseversion", version.pk) == edited
    # the newest version through a subquery (Coalesce of two text columns) ...
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
