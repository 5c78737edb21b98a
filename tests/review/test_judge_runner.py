"""The judge runner (issue 10): images sent to the judges (as references in the stored
calls, data URLs on the wire), rate limits shared by every thread (a 429's Retry-After, a
requests-per-minute cap) with an injected clock, stopping cleanly when progress raises (a
cancelled job), and a cached re-run that costs a few queries, not one per call."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from benchmark.llm import client as llm_client
from benchmark.llm.client import ChatClient, ChatRequest, ModelCallFailed, ModelConfig, RateGate
from benchmark.llm.services import model_resolve
from benchmark.models import Image, Item, Job, JobStatus, Project, Response
from review.judges import services as judge_services
from review.judges.models import JudgeCall, JudgeRun
from tests.factories import ImageFactory, ItemFactory, ProjectFactory, png_bytes
from tests.llm_server import FakeModelServer, point_at
from tests.review.test_judge_runs import (
    IMGEN,
    ScriptedServer,
    files,
    judge,
    mam_script,
    rubric,
    tool,
)

pytestmark = pytest.mark.django_db


class ImageAwareServer(ScriptedServer):
    """Hands the script the user message's text also when the message carries images."""

    def _reply(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict]:
        messages = [
            {**m, "content": "\n".join(p["text"] for p in m["content"] if p["type"] == "text")}
            if isinstance(m.get("content"), list)
            else m
            for m in body.get("messages", [])
        ]
        return super()._reply(path, {**body, "messages": messages})


class FakeTime:
    """A clock that moves only when someone sleeps on it; records every sleep."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def clock(self) -> float:
        with self._lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self.now += seconds


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    s = ImageAwareServer().start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def fake_time(server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    """The server's endpoint gets a gate on a fake clock (every client of the process
    shares it, as it would the real one)."""
    t = FakeTime()
    monkeypatch.setitem(
        llm_client._gates, server.url.rstrip("/"), RateGate(clock=t.clock, sleep=t.sleep)
    )
    return t


def store_image(project: Project, seed: int) -> Image:
    image = ImageFactory(data=png_bytes(seed))
    image.projects.add(project)
    return image


def data_url(image: Image) -> str:
    with image.file.open("rb") as handle:
        return "data:image/png;base64," + base64.b64encode(handle.read()).decode()


def llmi_project(server: ScriptedServer, answer: str, *, rendered: Any = None) -> Project:
    project = ProjectFactory(name="LLMI images", data_format="llmi")
    point_at(project, server)
    ItemFactory(
        project=project,
        external_id="q1",
        query="Draw two things",
        rubric=[{"key": "r1", "text": "shows a cat"}],
        constraints={"image_num": 2},
    )
    judge_services.answers_import(
        project=project, files=files({"alpha": [{"trace_id": "q1", "answer": answer}]})
    )
    if rendered is not None:
        Response.objects.filter(item__project=project).update(
            extra={judge_services.RENDERED_IMAGES: rendered}
        )
    return project


TWO_TAGS = f"A cat {IMGEN} and a dog {IMGEN} done."


# --------------------------------------------------------------------------- images


def test_rendered_answer_images_go_to_the_rubric_and_mllm_judges(server: ScriptedServer) -> None:
    llmi = llmi_project(server, TWO_TAGS)
    cat = store_image(llmi, 1)
    Response.objects.filter(item__project=llmi).update(
        extra={"rendered_images": [cat.sha256, None]}
    )

    server.script = lambda system, user: rubric(2)
    run, _ = judge(llmi, "llmi-rubric")
    (request,) = server.requests
    assert request.image_urls == [data_url(cat)]
    text = request.user_content[0]["text"]
    assert "A cat [image 1] and a dog [image not produced] done." in text
    (row,) = JudgeCall.objects.filter(run=run)
    # The stored call names the image by its hash; its data is never stored.
    assert judge_services.IMAGE_REF_PREFIX + cat.sha256 in json.dumps(row.messages)
    assert "base64" not in json.dumps(row.messages)

    def mllm(system: str, user: str) -> str:
        if system.startswith("You judge a finished answer"):
            return "Image quality: 4\nTask relevance: 4\nText-image relevance: 4"
        return "Text: 5\nImage: 5"

    server.script = mllm
    judge(llmi, "llmi-mllm")
    mllm_request = next(
        r for r in server.requests if "finished answer" in r.body["messages"][0]["content"]
    )
    assert mllm_request.image_urls == [data_url(cat)]
    assert "A cat [image 1] and a dog [image not produced]" in mllm_request.user_content[0]["text"]


def test_an_answer_not_rendered_sends_no_image(server: ScriptedServer) -> None:
    project = llmi_project(server, TWO_TAGS)
    server.script = lambda system, user: rubric(1)
    judge(project, "llmi-rubric")
    (request,) = server.requests
    assert request.image_urls == [] and IMGEN in request.user_content


def test_the_images_are_part_of_the_cache_key(server: ScriptedServer) -> None:
    project = llmi_project(server, TWO_TAGS)
    cat, dog = store_image(project, 1), store_image(project, 2)
    Response.objects.filter(item__project=project).update(extra={"rendered_images": [cat.sha256]})
    server.script = lambda system, user: rubric(2)
    judge(project, "llmi-rubric")
    _, again = judge(project, "llmi-rubric")
    assert again["calls"]["cached"] == 1 and server.count == 1
    Response.objects.filter(item__project=project).update(extra={"rendered_images": [dog.sha256]})
    _, other = judge(project, "llmi-rubric")
    assert other["calls"]["made"] == 1 and other["calls"]["cached"] == 0
    assert server.requests[-1].image_urls == [data_url(dog)]


def test_mam_agents_get_the_items_images_in_img_index_order(server: ScriptedServer) -> None:
    project = ProjectFactory(name="ATP images")
    point_at(project, server)
    doc0, doc1, query_image = (store_image(project, n) for n in (11, 12, 13))
    ItemFactory(
        project=project,
        external_id="atp_1",
        query="What is on the chart?",
        image_refs=[
            {"sha256": doc1.sha256, "role": "document", "path": "b.png", "position": 1},
            {"sha256": doc0.sha256, "role": "document", "path": "a.png", "position": 0},
            {"sha256": query_image.sha256, "role": "query", "path": "q.png", "position": 0},
        ],
    )
    answer = f"ALPHA\n\n{tool('Reference', {'img_index': 0})}\n\nMore.\n\n{tool('Search', {'query': 'x'})}"
    judge_services.answers_import(
        project=project, files=files({"alpha": [{"trace_id": "atp_1", "answer": answer}]})
    )
    server.script = mam_script
    run, summary = judge(project, "atp-mam")
    assert summary["models"]["alpha"]["fs"] == 85.0
    assert server.count == 3  # Precision, Recall, Chief
    expected = [data_url(doc0), data_url(doc1), data_url(query_image)]
    for request in server.requests:
        assert request.image_urls == expected
        assert (
            "(Images attached, in order: 1 = img_index 0; 2 = img_index 1; "
            "3 = the query's image.)" in request.user_content[0]["text"]
        )
    stored = json.dumps(list(JudgeCall.objects.filter(run=run).values_list("messages", flat=True)))
    assert "base64" not in stored and stored.count(f"sha256:{doc0.sha256}") == 3


def test_a_missing_image_fails_that_call_and_not_the_run(server: ScriptedServer) -> None:
    project = llmi_project(server, TWO_TAGS)
    ItemFactory(project=project, external_id="q2", query="q2", rubric=[{"key": "r1", "text": "t"}])
    judge_services.answers_import(
        project=project, files=files({"beta": [{"trace_id": "q2", "answer": "BETA"}]})
    )
    Response.objects.filter(model_name="alpha").update(extra={"rendered_images": ["ab" * 32]})
    server.script = lambda system, user: rubric(2)
    run, summary = judge(project, "llmi-rubric")
    assert server.count == 1  # beta's call; alpha's could not be sent
    failed = JudgeCall.objects.get(run=run, transport_error=True)
    assert failed.response.model_name == "alpha"
    assert "image abababababab is not stored" in failed.error
    assert summary["models"]["alpha"]["excluded"] == 1
    assert summary["models"]["beta"]["rubric"] == 100.0


def test_an_image_whose_file_is_gone_fails_with_a_clear_error(server: ScriptedServer) -> None:
    project = llmi_project(server, TWO_TAGS)
    cat = store_image(project, 3)
    Response.objects.filter(item__project=project).update(extra={"rendered_images": [cat.sha256]})
    cat.file.storage.delete(cat.file.name)
    run, _ = judge(project, "llmi-rubric")
    assert server.count == 0
    (row,) = JudgeCall.objects.filter(run=run)
    assert row.transport_error and f"the file of image {cat.sha256[:12]} is missing" in row.error


def test_images_of_another_project_are_not_sent(server: ScriptedServer) -> None:
    project = llmi_project(server, TWO_TAGS)
    elsewhere = store_image(ProjectFactory(name="Other"), 4)
    Response.objects.filter(item__project=project).update(
        extra={"rendered_images": [elsewhere.sha256]}
    )
    run, _ = judge(project, "llmi-rubric")
    assert server.count == 0
    assert "not an image of this project" in JudgeCall.objects.get(run=run).error


def test_more_images_than_the_cap_fail_with_the_setting_named(
    server: ScriptedServer, settings: Any
) -> None:
    settings.JUDGE_MAX_IMAGES = 1
    project = llmi_project(server, TWO_TAGS)
    cat, dog = store_image(project, 5), store_image(project, 6)
    Response.objects.filter(item__project=project).update(
        extra={"rendered_images": [cat.sha256, dog.sha256]}
    )
    run, _ = judge(project, "llmi-rubric")
    assert server.count == 0
    error = JudgeCall.objects.get(run=run).error
    assert "would send 2 images, more than JUDGE_MAX_IMAGES = 1" in error


def test_rendered_answer_numbers_produced_images_only() -> None:
    assert judge_services.rendered_answer(TWO_TAGS) == "A cat [image 1] and a dog [image 2] done."
    assert (
        judge_services.rendered_answer(TWO_TAGS, [None, "f" * 64])
        == "A cat [image not produced] and a dog [image 1] done."
    )
    response = Response(extra={"rendered_images": ["a" * 64, None, 3]})
    assert judge_services.rendered_images(response) == ["a" * 64, None, None]
    assert judge_services.rendered_images(Response(extra={})) is None


def test_a_request_is_built_from_a_judges_messages() -> None:
    messages = [
        {"role": "system", "content": "Judge."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look"},
                {"type": "image_url", "image_url": {"url": "sha256:" + "c" * 64}},
            ],
        },
    ]
    request = ChatRequest.from_messages(messages, params={"temperature": 0})
    assert (request.system, request.prompt, request.images) == ("Judge.", "Look", ())
    assert request.params == {"temperature": 0}


# --------------------------------------------------------------------------- rate limits


def test_a_429_pauses_every_client_of_the_endpoint(model_server: FakeModelServer) -> None:
    t = FakeTime()
    gate = RateGate(clock=t.clock, sleep=t.sleep)
    config = ModelConfig(base_url=model_server.url, model="m", max_retries=0)
    model_server.fail_next(429, headers={"Retry-After": "15"})
    with pytest.raises(ModelCallFailed, match="429"):
        ChatClient(config, gate=gate).complete(ChatRequest(prompt="first"))
    assert t.sleeps == []  # no retry left for that call, but the endpoint stays paused
    other = ChatClient(config, gate=gate).complete(ChatRequest(prompt="second"))
    assert other.text == "The chart shows 42 apples."
    assert t.sleeps == [15.0]  # the other client waited the Retry-After out before sending
    assert model_server.count == 2


def test_the_client_that_got_the_429_waits_once(model_server: FakeModelServer) -> None:
    t = FakeTime()
    gate = RateGate(clock=t.clock, sleep=t.sleep)
    config = ModelConfig(base_url=model_server.url, model="m")
    model_server.fail_next(429, headers={"Retry-After": "12"})
    ChatClient(config, gate=gate).complete(ChatRequest(prompt="q"))
    assert t.sleeps == [12.0] and model_server.count == 2


def test_requests_per_minute_space_the_requests() -> None:
    t = FakeTime()
    gate = RateGate(rpm=120, clock=t.clock, sleep=t.sleep)
    for _ in range(3):
        gate.passage()
    assert t.sleeps == [0.5, 0.5]
    gate.rpm = 0
    gate.passage()
    assert t.sleeps == [0.5, 0.5]


def test_a_pause_set_while_waiting_is_waited_out_too() -> None:
    t = FakeTime()
    gate = RateGate(clock=t.clock, sleep=t.sleep)
    gate.pause(5)
    real_sleep = t.sleep

    def sleep_then_pause_again(seconds: float) -> None:
        real_sleep(seconds)
        if len(t.sleeps) == 1:
            gate.pause(7)  # another thread's 429 while this one slept

    gate.sleep = sleep_then_pause_again
    gate.passage()
    assert t.sleeps == [5.0, 7.0]


def test_a_thread_skips_only_the_pause_it_slept_through_itself() -> None:
    t = FakeTime()
    gate = RateGate(clock=t.clock, sleep=t.sleep)
    mine = gate.pause(5)  # this thread's 429; it sleeps the 5 s through its own backoff
    assert gate.passage(waited_out=mine) == 0.0
    gate.pause(9)  # then another thread's longer one
    assert gate.passage(waited_out=mine) == 9.0


def test_rpm_comes_from_the_projects_model_settings_or_the_environment(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmark import pacing

    monkeypatch.setattr(pacing, "_gates", {})  # this test's gates only (the client's are these)
    project = ProjectFactory(
        settings={"model": {"base_url": "http://127.0.0.1:9/v1", "model": "m", "rpm": 90}}
    )
    resolved = model_resolve(project=project)
    assert resolved is not None and resolved.config.rpm == 90
    settings.BENCHWRIGHT_MODEL_RPM = 30
    project.settings = {"model": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}
    resolved = model_resolve(project=project)
    assert resolved is not None and resolved.config.rpm == 30
    gate = ChatClient(resolved.config).gate
    assert gate.rpm == 30 and gate is llm_client.endpoint_gate("http://127.0.0.1:9/v1/", 30)


def test_a_judge_run_waits_out_a_429_on_the_shared_gate(
    server: ScriptedServer, fake_time: FakeTime
) -> None:
    project = llmi_project(server, "ALPHA")
    ItemFactory(project=project, external_id="q2", query="q2", rubric=[{"key": "r1", "text": "t"}])
    judge_services.answers_import(
        project=project, files=files({"alpha": [{"trace_id": "q2", "answer": "ALPHA two"}]})
    )
    server.script = lambda system, user: rubric(2)
    server.fail_next(429, headers={"Retry-After": "15"})
    run, summary = judge(project, "llmi-rubric", workers=2)
    assert summary["models"]["alpha"]["rubric"] == 100.0
    assert server.count == 3  # two calls, one of them asked again after the 429
    assert 15.0 in fake_time.sleeps and fake_time.now >= 15.0
    assert not JudgeCall.objects.filter(run=run, ok=False).exists()


def test_a_rate_limited_run_records_the_429_when_retries_run_out(
    server: ScriptedServer, fake_time: FakeTime
) -> None:
    project = llmi_project(server, "ALPHA")
    point_at(project, server, max_retries=1)
    server.fail_next(429, times=2, headers={"Retry-After": "4"})
    run, _ = judge(project, "llmi-rubric", workers=1)
    row = JudgeCall.objects.get(run=run)
    assert row.transport_error and "429" in row.error and "gave up after 2 attempts" in row.error
    assert fake_time.sleeps == [4.0]


# --------------------------------------------------------------------------- stopping


class Stop(Exception):
    pass


def many_answers(server: ScriptedServer, n: int, criteria: int = 1) -> Project:
    project = ProjectFactory(name=f"LLMI {n}", data_format="llmi")
    point_at(project, server)
    rubric_items = [{"key": f"r{k}", "text": f"criterion {k}"} for k in range(1, criteria + 1)]
    for i in range(n):
        ItemFactory(project=project, external_id=f"q{i}", query=f"Q{i}", rubric=rubric_items)
    judge_services.answers_import(
        project=project,
        files=files({"alpha": [{"trace_id": f"q{i}", "answer": f"A{i}"} for i in range(n)]}),
    )
    return project


def test_an_exception_from_progress_stops_the_run_and_keeps_what_finished(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(judge_services, "FLUSH_ROWS", 1)  # store and report after each call
    project = many_answers(server, 12)
    server.script = lambda system, user: rubric(2)
    run, job = judge_services.judge_run_create(
        project=project, user=None, judge="llmi-rubric", workers=1
    )
    reports: list[int] = []

    def progress(*, progress: int, total: int | None = None, message: str = "") -> None:
        reports.append(progress)
        if len(reports) == 2:
            raise Stop("cancel requested")

    with pytest.raises(Stop):
        judge_services.judge_run_job(job=job, progress=progress)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.FAILED)  # as the pipeline does
    # One worker, four calls handed out ahead of it: after the stop the queued ones are
    # dropped, so at most the call in flight is asked besides the two stored.
    stored = JudgeCall.objects.filter(run=run).count()
    assert stored >= 2
    assert server.count <= stored + 1 < 12
    # A resume makes only the calls that were not stored.
    before = server.count
    resumed = judge_services.judge_run_execute(
        job=judge_services.judge_run_resume(run=run, user=None)
    )
    assert resumed.status == "succeeded", resumed.error
    calls = resumed.result["summary"]["calls"]
    assert (calls["reused"], calls["made"]) == (stored, 12 - stored)
    # The call that was in flight at the stop was not kept, so it is asked once more.
    assert 12 - stored <= server.count - before <= 12 - stored + 1
    assert JudgeCall.objects.filter(run=run).count() == 12


def test_a_cached_rerun_takes_a_few_queries_whatever_its_size(
    server: ScriptedServer, django_assert_max_num_queries: Any
) -> None:
    project = many_answers(server, 30, criteria=3)
    server.script = lambda system, user: rubric(1)
    judge(project, "llmi-rubric")
    run, job = judge_services.judge_run_create(project=project, user=None, judge="llmi-rubric")
    reports: list[str] = []

    def progress(*, progress: int, total: int | None = None, message: str = "") -> None:
        reports.append(message)

    with django_assert_max_num_queries(12):
        result = judge_services.judge_run_job(job=Job.objects.get(pk=job.pk), progress=progress)
    assert result["summary"]["calls"]["cached"] == 90 and server.count == 90
    assert reports[-1] == "90 of 90 calls" and len(reports) <= 3
    assert JudgeCall.objects.filter(run=run, cached=True).count() == 90
    assert JudgeRun.objects.get(pk=run.pk).calls.filter(ok=True).count() == 90
    assert Item.objects.filter(project=project).count() == 30
