"""Model calls as jobs: the service, the (eager) task and the ModelCall record, against a real
OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.jobs.tasks import job_task
from benchmark.llm import services as llm
from benchmark.models import Item, Job, JobStatus, ModelCall, Project
from tests.factories import ImageFactory, ItemFactory, JobFactory, image_ref
from tests.llm_server import MODEL, FakeModelServer, point_at

pytestmark = pytest.mark.django_db


@pytest.fixture
def item(model_project: Project) -> Item:
    image = ImageFactory(projects=[model_project])
    return ItemFactory(project=model_project, image_refs=[image_ref(image, position=0)])


def start(capture: Any, *, project: Project, user: Any, item: Item | None = None, **kw: Any) -> Job:
    kw.setdefault("prompt", "What does the image show?")
    kw.setdefault("purpose", "ask")
    with capture(execute=True):
        job = llm.model_call_start(project=project, user=user, item=item, **kw)
    job.refresh_from_db()
    return job


def test_a_call_job_succeeds_with_the_answer_and_records_the_call(
    model_project: Project,
    item: Item,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    sha = item.image_refs[0]["sha256"]
    job = start(
        django_capture_on_commit_callbacks,
        project=model_project,
        user=users["annotator"],
        item=item,
        images=[sha],
    )
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.kind == "model_call" and job.percent == 100
    assert job.result["answer"] == "The chart shows 42 apples."
    assert job.result["prompt_tokens"] == 17 and job.result["completion_tokens"] == 7
    call = ModelCall.objects.get(job=job)
    assert job.result["model_call_id"] == call.pk
    assert (call.project, call.item, call.purpose, call.model) == (
        model_project,
        item,
        "ask",
        MODEL,
    )
    assert call.prompt == "What does the image show?"
    assert call.image_sha256s == [sha]
    assert call.answer == "The chart shows 42 apples."
    assert (call.prompt_tokens, call.completion_tokens) == (17, 7)
    assert call.latency_ms is not None and not call.cached and call.error == ""
    assert call.created_by == users["annotator"]
    (req,) = model_server.requests
    assert req.body["model"] == MODEL
    stored = item.project.images.get(sha256=sha).file.open("rb").read()
    assert req.image_urls == ["data:image/png;base64," + base64.b64encode(stored).decode()]


def test_a_repeated_request_is_answered_from_the_recorded_calls(
    model_project: Project,
    item: Item,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    args = {"project": model_project, "user": users["admin"], "item": item}
    start(django_capture_on_commit_callbacks, **args)
    again = start(django_capture_on_commit_callbacks, **args)
    assert model_server.count == 1
    assert again.status == JobStatus.SUCCEEDED and again.result["cached"] is True
    assert again.result["answer"] == "The chart shows 42 apples."
    calls = ModelCall.objects.filter(item=item)
    assert calls.count() == 2
    assert calls.filter(cached=True).count() == 1
    assert len(set(calls.values_list("request_key", flat=True))) == 1
    fresh = start(django_capture_on_commit_callbacks, mode="off", **args)
    assert model_server.count == 2 and fresh.result["cached"] is False


def test_replay_mode_fails_clearly_on_a_miss_and_answers_a_hit(
    model_project: Project,
    item: Item,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    args = {"project": model_project, "user": users["admin"], "item": item}
    miss = start(django_capture_on_commit_callbacks, mode="replay", **args)
    assert miss.status == JobStatus.FAILED
    assert "replay mode: no recorded answer" in miss.error
    assert model_server.count == 0
    start(django_capture_on_commit_callbacks, **args)
    # The project itself may be set to replay only.
    point_at(model_project, model_server, cache="replay")
    hit = start(django_capture_on_commit_callbacks, **args)
    assert hit.status == JobStatus.SUCCEEDED and hit.result["cached"] is True
    assert model_server.count == 1


def test_a_failing_endpoint_fails_the_job_and_retry_makes_a_new_job(
    model_project: Project,
    item: Item,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    point_at(model_project, model_server, max_retries=1, backoff_base=0)
    model_server.fail_next(500, times=2)
    failed = start(
        django_capture_on_commit_callbacks, project=model_project, user=users["admin"], item=item
    )
    assert failed.status == JobStatus.FAILED
    assert "answered 500" in failed.error and "gave up after 2 attempts" in failed.error
    record = ModelCall.objects.get(job=failed)
    assert record.error == failed.error and record.answer == "" and record.attempts == 2

    with django_capture_on_commit_callbacks(execute=True):
        retried = llm.job_retry(job=failed, user=users["reviewer"])
    retried.refresh_from_db()
    assert retried.pk != failed.pk
    assert retried.params["retry_of"] == failed.pk
    assert retried.params["prompt"] == failed.params["prompt"]
    assert retried.status == JobStatus.SUCCEEDED
    assert retried.result["answer"] == "The chart shows 42 apples."
    failed.refresh_from_db()
    assert failed.status == JobStatus.FAILED  # the old job is kept as it was
    assert model_server.count == 3
    with pytest.raises(Conflict):
        llm.job_retry(job=retried, user=users["admin"])


def test_only_model_call_jobs_can_be_retried(project: Project, users: dict[str, Any]) -> None:
    job = JobFactory(project=project, kind="import", status=JobStatus.FAILED)
    with pytest.raises(ValidationFailed, match="cannot be retried"):
        llm.job_retry(job=job, user=users["admin"])


def test_the_task_runs_a_job_once(
    model_project: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    job = start(django_capture_on_commit_callbacks, project=model_project, user=users["admin"])
    job_task(job.pk)  # a repeated delivery
    assert model_server.count == 1
    assert ModelCall.objects.filter(job=job).count() == 1


def test_the_start_service_checks_its_input(
    model_project: Project,
    item: Item,
    other_project: Project,
    users: dict[str, Any],
) -> None:
    admin = users["admin"]
    with pytest.raises(Forbidden):
        llm.model_call_start(
            project=model_project, user=users["outsider"], purpose="ask", prompt="q"
        )
    with pytest.raises(ValidationFailed, match="prompt"):
        llm.model_call_start(project=model_project, user=admin, purpose="ask", prompt="  ")
    foreign = ImageFactory(projects=[other_project])
    with pytest.raises(ValidationFailed, match="not an image of this project"):
        llm.model_call_start(
            project=model_project, user=admin, purpose="ask", prompt="q", images=[foreign.sha256]
        )
    with pytest.raises(ValidationFailed, match="not in this project"):
        llm.model_call_start(
            project=model_project,
            user=admin,
            item=ItemFactory(project=other_project),
            purpose="ask",
            prompt="q",
        )
    assert not Job.objects.filter(kind="model_call").exists()


def test_without_a_model_the_service_says_how_to_configure_one(
    project: Project, users: dict[str, Any]
) -> None:
    with pytest.raises(ValidationFailed, match="BENCHWRIGHT_MODEL_BASE_URL"):
        llm.model_call_start(project=project, user=users["admin"], purpose="ask", prompt="q")


def test_the_environment_model_and_its_key(
    project: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.BENCHWRIGHT_MODEL_BASE_URL = model_server.url
    settings.BENCHWRIGHT_MODEL_NAME = "env-model"
    settings.BENCHWRIGHT_MODEL_API_KEY = "sk-env"
    resolved = llm.model_resolve(project=project)
    assert resolved is not None and resolved.source == "environment"
    job = start(django_capture_on_commit_callbacks, project=project, user=users["admin"])
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert model_server.requests[-1].body["model"] == "env-model"
    assert model_server.requests[-1].headers["authorization"] == "Bearer sk-env"

    # A project's own endpoint never gets the environment's key; it names its own.
    other = FakeModelServer().start()
    try:
        point_at(project, other)
        start(django_capture_on_commit_callbacks, project=project, user=users["admin"])
        assert other.requests[-1].headers["authorization"] != "Bearer sk-env"
        monkeypatch.setenv("PROJECT_MODEL_KEY", "sk-project")
        settings.MODEL_API_KEY_ENV_ALLOWLIST = ["PROJECT_MODEL_KEY"]
        point_at(project, other, api_key_env="PROJECT_MODEL_KEY")
        start(django_capture_on_commit_callbacks, project=project, user=users["admin"], mode="off")
        assert other.requests[-1].headers["authorization"] == "Bearer sk-project"
    finally:
        other.stop()
