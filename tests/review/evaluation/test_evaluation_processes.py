"""A command-line run with more workers than one process keeps busy: its items are split
into chunk jobs, each with its share of the workers and of the endpoint's limits, run side by
side in forked processes through the one job pipeline; a chunk whose process died is failed,
naming it. (The test database lives in memory, so the processes themselves are exercised
with children that touch no database; tests/perf/bench_evaluate.py runs the whole path.)"""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.db import connection, connections

from benchmark.llm.client import tls_context
from benchmark.models import Job, JobStatus, Project
from review.evaluation import services
from review.evaluation.models import EvaluationResult, EvaluationRun
from tests.llm_server import FakeModelServer

pytestmark = pytest.mark.django_db


def test_processes_are_one_per_process_workers_at_most_one_a_cpu(monkeypatch: Any) -> None:
    if connection.vendor == "sqlite":
        # An in-memory SQLite database (the tests'): other processes could not see it.
        assert connection.is_in_memory_db()
        assert services.processes_for(32) == 1
    monkeypatch.setattr(connections["default"], "is_in_memory_db", lambda: False, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert services.PROCESS_WORKERS == 4
    assert [services.processes_for(w) for w in (1, 4, 5, 8, 32)] == [1, 1, 2, 2, 2]
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    assert [services.processes_for(w) for w in (8, 9, 32)] == [2, 3, 8]


def _results(run: EvaluationRun) -> dict[str, tuple[str, Any]]:
    return {
        r.item.external_id: (r.status, r.output)
        for r in EvaluationResult.objects.filter(run=run).select_related("item")
    }


def test_a_run_for_two_processes_is_two_chunks_with_half_the_workers_and_limits(
    eval_project: Project, eval_server: FakeModelServer, monkeypatch: Any
) -> None:
    monkeypatch.setattr(services, "PROCESS_MIN_ITEMS", 1)
    run, jobs = services.evaluation_run_create(
        project=eval_project, user=None, workers=8, processes=2
    )
    assert [len(job.params["items"]) for job in jobs] == [2, 1]
    assert all(job.params["workers"] == 4 and job.params["processes"] == 2 for job in jobs)
    assert run.settings["workers"] == 8
    runner = services._Runner(run=run, job=jobs[0], progress=lambda **kw: None)
    alone = services._Runner(run=run, job=Job(params={"workers": 8}), progress=lambda **kw: None)
    # The project's endpoint allows 4 calls at once: each of the two processes 2.
    assert (alone.config.concurrency, runner.config.concurrency) == (4, 2)
    # Run here one after the other (the pipeline is the same): every item once, the summary
    # once all chunks are done.
    run = services.evaluation_run_execute(run=run, jobs=jobs)
    assert _results(run) == {
        "apple": ("ok", "a fruit"),
        "pear": ("ok", "unknown"),
        "kiwi": ("ok", "a fruit"),
    }
    assert run.finished_at is not None
    assert run.summary["accuracy"] == pytest.approx(200 / 3)
    assert eval_server.count == 6


def test_a_small_run_is_not_split_for_processes(eval_project: Project) -> None:
    # Three items, under PROCESS_MIN_ITEMS a chunk: one job with every worker.
    run, jobs = services.evaluation_run_create(
        project=eval_project, user=None, workers=8, processes=2
    )
    assert len(jobs) == 1
    assert jobs[0].params["workers"] == 8 and "processes" not in jobs[0].params


@pytest.mark.django_db(transaction=True)  # the jobs are committed, as the command's are
def test_a_chunk_whose_process_dies_is_failed_naming_it(
    eval_project: Project, monkeypatch: Any
) -> None:
    monkeypatch.setattr(services, "PROCESS_MIN_ITEMS", 1)
    run, jobs = services.evaluation_run_create(
        project=eval_project, user=None, workers=8, processes=2
    )

    def child(job_id: int) -> None:  # in the forked process: no database, just an exit
        os._exit(0 if job_id == jobs[0].pk else 3)

    monkeypatch.setattr(services, "_job_in_child", child)
    services.evaluation_run_execute(run=run, jobs=jobs, processes=2)
    first, second = (Job.objects.get(pk=job.pk) for job in jobs)
    # The first child ended well (its job is as it left it); the second died.
    assert first.status == JobStatus.QUEUED
    assert second.status == JobStatus.FAILED
    assert f"job #{second.pk} stopped (exit status 3)" in second.error
    assert "resume the run" in services.job_failed_messages(jobs)[0]


@pytest.mark.django_db(transaction=True)  # the jobs are committed, as the command's are
@pytest.mark.parametrize("replay", [False, True])
def test_the_chunks_processes_find_the_sdk_imported_before_they_were_forked(
    eval_project: Project, monkeypatch: Any, replay: bool
) -> None:
    import sys

    monkeypatch.setattr(services, "PROCESS_MIN_ITEMS", 1)
    run, jobs = services.evaluation_run_create(
        project=eval_project, user=None, workers=8, processes=2, replay=replay
    )
    numpy_parts = {"numpy", "numpy.random", "numpy.ma"}  # the bootstrap's, loaded lazily by NumPy
    names = {"openai", *numpy_parts}
    for name in names:  # as in a fresh command: not imported yet
        monkeypatch.delitem(sys.modules, name, raising=False)
    # A replay calls no model: its processes are not given the SDK (nor its TLS context).
    given = numpy_parts if replay else names
    tls_context.cache_clear()

    def child(job_id: int) -> None:  # in the forked process: what it was given
        built = tls_context.cache_info().currsize == 1
        os._exit(0 if given == names & set(sys.modules) and built is not replay else 4)

    monkeypatch.setattr(services, "_job_in_child", child)
    services.evaluation_run_execute(run=run, jobs=jobs, processes=2)
    # A child that had to import them itself would have exited 4 (its job failed).
    assert services.job_failed_messages(jobs) == []
    assert {job.status for job in Job.objects.filter(pk__in=[j.pk for j in jobs])} == {
        JobStatus.QUEUED
    }


def test_jobs_not_committed_yet_run_in_this_process(
    eval_project: Project, monkeypatch: Any
) -> None:
    # Inside a transaction (this test's), another process could not see the jobs: they run
    # here, one after the other, whatever the processes asked.
    monkeypatch.setattr(services, "PROCESS_MIN_ITEMS", 1)
    run, jobs = services.evaluation_run_create(
        project=eval_project, user=None, workers=8, processes=2
    )
    monkeypatch.setattr(services, "_jobs_in_processes", None)  # would fail if called
    run = services.evaluation_run_execute(run=run, jobs=jobs, processes=2)
    assert run.finished_at is not None
    assert EvaluationResult.objects.filter(run=run, status="ok").count() == 3


@pytest.mark.django_db(transaction=True)  # the jobs are committed, as the command's are
def test_the_chunks_processes_find_what_the_parent_made_frozen_and_the_parent_gets_it_back(
    eval_project: Project, monkeypatch: Any
) -> None:
    import gc

    monkeypatch.setattr(services, "PROCESS_MIN_ITEMS", 1)
    run, jobs = services.evaluation_run_create(
        project=eval_project, user=None, workers=8, processes=2
    )
    assert gc.isenabled() and gc.get_freeze_count() == 0

    def child(job_id: int) -> None:  # in the forked process: the parent's objects are frozen
        os._exit(0 if gc.get_freeze_count() > 100_000 and gc.isenabled() else 5)

    monkeypatch.setattr(services, "_job_in_child", child)
    services.evaluation_run_execute(run=run, jobs=jobs, processes=2)
    assert services.job_failed_messages(jobs) == []
    # This process collects as before: nothing left frozen, the collector on.
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()  # a caller that had the collector off keeps it off
    try:
        services._preload_for_chunks(sdk=False)
        assert not gc.isenabled()
    finally:
        gc.enable()
