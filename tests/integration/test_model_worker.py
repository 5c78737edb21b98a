"""A real Celery worker, with Redis as the broker, runs a model-call job against PostgreSQL
and a real OpenAI-compatible server (in this test process, reached over 127.0.0.1)."""

from __future__ import annotations

import pytest

from benchmark.jobs import services
from benchmark.jobs.tasks import job_task
from benchmark.llm import services as llm
from benchmark.models import JobStatus, ModelCall, Project, Toolset
from tests.llm_server import FakeModelServer

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_model_call_job_runs_on_a_real_worker(celery_worker_process) -> None:  # type: ignore[no-untyped-def]
    worker = celery_worker_process()

    server = FakeModelServer(answer="A worker answered.").start()
    toolset = Toolset.objects.create(name="model-worker-test")
    project = Project.objects.create(
        name="model worker",
        kind="interleaved",
        tag_syntax="atp",
        data_format="atp",
        toolset=toolset,
        # The worker reads the endpoint from the project, not from its environment.
        settings={"model": {"base_url": server.url, "model": "worker-vl", "backoff_base": 0}},
    )
    server.fail_next(500)  # the worker retries it
    # Created without its on-commit enqueue (eager here); the test enqueues on the real broker.
    job = services.job_create(
        kind=llm.MODEL_CALL_KIND,
        project=project,
        total=1,
        params={"project_id": project.pk, "item_id": None, "purpose": "ask", "prompt": "Hi?"},
    )

    try:
        job = worker.run(job_task, job)
    finally:
        worker.stop()
        server.stop()

    assert job.status == JobStatus.SUCCEEDED, (job.status, job.error, worker.output[-2000:])
    assert job.result["answer"] == "A worker answered."
    assert job.result["attempts"] == 2
    call = ModelCall.objects.get(job=job)
    assert (call.model, call.answer, call.prompt_tokens) == ("worker-vl", "A worker answered.", 17)
    assert [r.body["model"] for r in server.requests] == ["worker-vl", "worker-vl"]
