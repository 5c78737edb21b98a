"""Unpacking an upload holds no database transaction: while one person's upload is being
written to disk, another person's write (a judgment submit) succeeds. On SQLite every
transaction takes the write lock at BEGIN (transaction_mode IMMEDIATE), so an upload unpacked
inside one made everybody else's writes fail with "database is locked".

The write runs in its own thread (its own connection) at the moment the upload's bytes are
being read, for each of the three upload paths: dataset import, agent runs, model answers."""

from __future__ import annotations

import io
import threading
import zipfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, connections

from annotation.judgment_tasks import services as judging
from annotation.judgment_tasks.models import Judgment, JudgmentTask
from benchmark.datasets import services as dataset_services
from benchmark.models import Item, Job, Membership, Project, ProjectKind, Toolset
from review.answers import services as answer_services
from review.runs import services as run_services
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db(transaction=True)


class _Probe:
    """Runs ``write`` in another thread (another connection) once, the first time the upload's
    bytes are read, and records what happened there and whether this thread was inside a
    transaction at that moment."""

    def __init__(self, write: Callable[[], None]) -> None:
        self.write = write
        self.fired = False
        self.in_transaction: bool | None = None
        self.error: BaseException | None = None

    def fire(self) -> None:
        if self.fired:
            return
        self.fired = True
        self.in_transaction = connection.in_atomic_block

        def other() -> None:
            try:
                if connections["default"].vendor == "sqlite":  # fail fast, not after 20 s
                    with connections["default"].cursor() as cursor:
                        cursor.execute("PRAGMA busy_timeout = 300")
                self.write()
            except BaseException as exc:  # noqa: BLE001 - the test reports it
                self.error = exc
            finally:
                connections.close_all()

        thread = threading.Thread(target=other)
        thread.start()
        thread.join(timeout=30)


class _ProbedUpload(SimpleUploadedFile):
    """An uploaded file that fires the probe when its bytes are read in chunks (how plain
    files are written to disk)."""

    probe: _Probe

    def chunks(self, chunk_size: int | None = None) -> Iterator[bytes]:
        self.probe.fire()
        yield from super().chunks(chunk_size)


@pytest.fixture
def judging_world() -> dict[str, Any]:
    """An annotator holding a lease on an item of a plan project, ready to submit."""
    toolset = Toolset.objects.create(name="mms-lock")
    project = Project.objects.create(name="j", kind="plan", data_format="mms", toolset=toolset)
    Item.objects.create(project=project, external_id="i0", position=0, query="q0")
    task = JudgmentTask.objects.create(
        project=project,
        name="valid plan",
        question="Does this plan solve the query?",
        scheme="binary",
        overlap=1,
        consensus="all_required",
        required_value=1,
    )
    annotator = get_user_model().objects.create_user("annotator-lock", password="x")
    Membership.objects.create(project=project, user=annotator, role="annotator")
    lease = judging.assignment_next_for_user(task=task, user=annotator)
    assert lease is not None
    return {"task": task, "item": lease.item, "user": annotator}


@pytest.fixture
def probe(judging_world: dict[str, Any]) -> _Probe:
    def submit() -> None:
        judging.judgment_submit(
            task=judging_world["task"],
            item=judging_world["item"],
            user=judging_world["user"],
            value=1,
        )

    return _Probe(submit)


def _member(project: Project, role: str, name: str) -> Any:
    user = get_user_model().objects.create_user(name, password="x")
    Membership.objects.create(project=project, user=user, role=role)
    return user


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


@pytest.fixture
def probed_zip_reads(monkeypatch: pytest.MonkeyPatch, probe: _Probe) -> None:
    """Fire the probe when a zip member is opened for extraction."""
    real_open = zipfile.ZipFile.open

    def open_member(self: zipfile.ZipFile, name: Any, mode: str = "r", *a: Any, **k: Any) -> Any:
        if mode == "r":
            probe.fire()
        return real_open(self, name, mode, *a, **k)

    monkeypatch.setattr(zipfile.ZipFile, "open", open_member)


def _assert_the_other_write_went_through(probe: _Probe) -> None:
    assert probe.fired, "the upload was never read"
    assert probe.error is None, f"another user's judgment failed during the upload: {probe.error!r}"
    assert probe.in_transaction is False, "the upload was unpacked inside a transaction"
    assert Judgment.objects.count() == 1


def test_a_judgment_goes_through_while_a_dataset_zip_is_unpacked(
    probe: _Probe, probed_zip_reads: None
) -> None:
    project = ProjectFactory(name="atp")
    admin = _member(project, "admin", "admin-lock")
    data = _zip({"data.jsonl": b"{}\n", "images/a.png": b"x"})
    job = dataset_services.import_upload_start(
        project=project, user=admin, upload=SimpleUploadedFile("d.zip", data)
    )
    _assert_the_other_write_went_through(probe)
    assert Job.objects.filter(pk=job.pk).exists()


def test_a_judgment_goes_through_while_a_dataset_file_is_written(probe: _Probe) -> None:
    project = ProjectFactory(name="atp")
    admin = _member(project, "admin", "admin-lock")
    upload = _ProbedUpload("data.jsonl", b"{}\n")
    upload.probe = probe
    dataset_services.import_upload_start(project=project, user=admin, upload=upload)
    _assert_the_other_write_went_through(probe)


def test_a_judgment_goes_through_while_agent_runs_are_unpacked(
    probe: _Probe, probed_zip_reads: None
) -> None:
    project = ProjectFactory(name="mme", kind=ProjectKind.TRAJECTORY, data_format="agentic-mme")
    reviewer = _member(project, "reviewer", "reviewer-lock")
    data = _zip({"0001/tool_use_list.json": b"[]", "0001/model_answer.txt": b"x"})
    run_services.run_upload_start(
        project=project, user=reviewer, files=[SimpleUploadedFile("runs.zip", data)]
    )
    _assert_the_other_write_went_through(probe)


def test_a_judgment_goes_through_while_answer_files_are_written(probe: _Probe) -> None:
    project = ProjectFactory(name="atp")
    reviewer = _member(project, "reviewer", "reviewer-lock")
    upload = _ProbedUpload("m.jsonl", b'{"trace_id": "x", "answer": "y"}\n')
    upload.probe = probe
    answer_services.answers_score_start(project=project, user=reviewer, uploads=[upload])
    _assert_the_other_write_went_through(probe)
