"""The rendering job (review.answer_rendering): answers rendered through the one job pipeline, the
per-call cache, ``extra["rendered_images"]`` for the judges, progress, cancel and resume,
idempotence, and answers imported from files. Providers are a local fake server and a fake
sandbox; never the network."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from django.utils import timezone

from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.models import Image, Job, JobStatus, Origin, Project, Response
from benchmark.rendering import SandboxCodeRunner
from review.answer_rendering import services
from review.answer_rendering.models import RenderedAnswer, ToolCallCache
from review.judges import services as judge_services
from tests.factories import ImageFactory, ItemFactory, ProjectFactory, ResponseFactory, image_ref
from tests.image_server import FakeImageServer, fake_run_code, png_for
from tests.required import missing

CHART = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.savefig('chart.png')"


def atp(tool: str, **params: Any) -> str:
    return (
        "<tool>"
        + json.dumps({"tool_name": tool, "description": f"{tool} figure", "params": params})
        + "</tool>"
    )


def answer_text(n: int) -> str:
    return "\n\n".join(
        [
            f"Answer number {n}.",
            atp("Reference", img_index=0),
            atp("Code", code=CHART + f"\n# {n % 2}"),
            atp("Diffusion", prompt=f"an illustration {n}"),
            atp("Search", query="eiffel tower"),
            "The end.",
        ]
    )


class CountingSandbox:
    def __init__(self) -> None:
        self.programs: list[str] = []

    def __call__(self, code: str, *, limits: Any = None) -> SimpleNamespace:
        self.programs.append(code)
        return fake_run_code(code, limits=limits)


@pytest.fixture
def sandbox(monkeypatch: pytest.MonkeyPatch) -> CountingSandbox:
    fake = CountingSandbox()
    monkeypatch.setattr(services, "code_runner", lambda: SandboxCodeRunner(fake))
    return fake


@pytest.fixture
def image_server(settings: Any) -> Iterator[FakeImageServer]:
    server = FakeImageServer().start()
    try:
        yield server
    finally:
        server.stop()


def configure(
    settings: Any,
    server: FakeImageServer,
    *,
    generate: bool = True,
    edit: bool = True,
    search: bool = True,
) -> None:
    if generate:
        settings.BENCHWRIGHT_IMAGE_GEN_BASE_URL = f"{server.url}/v1"
        settings.BENCHWRIGHT_IMAGE_GEN_MODEL = "fake-image-1"
    if edit:
        settings.BENCHWRIGHT_IMAGE_EDIT_BASE_URL = f"{server.url}/v1"
        settings.BENCHWRIGHT_IMAGE_EDIT_MODEL = "fake-edit-1"
    if search:
        settings.BENCHWRIGHT_IMAGE_SEARCH_URL = f"{server.url}/search"
        settings.BENCHWRIGHT_IMAGE_SEARCH_ALLOW_PRIVATE = True
    settings.BENCHWRIGHT_RENDER_TIMEOUT = 10.0


@pytest.fixture
def world(project: Project, users: dict[str, Any]) -> SimpleNamespace:
    docs = [ImageFactory(projects=[project]) for _ in range(2)]
    items = [
        ItemFactory(
            project=project,
            external_id=f"q{i}",
            image_refs=[image_ref(docs[0], position=0), image_ref(docs[1], position=1)],
        )
        for i in range(3)
    ]
    answers = [
        ResponseFactory(
            item=item,
            origin=Origin.MODEL,
            model_name=model,
            key=f"model:{model}",
            text=answer_text(i),
        )
        for i, item in enumerate(items)
        for model in ("alpha", "beta")
    ]
    return SimpleNamespace(project=project, users=users, docs=docs, items=items, answers=answers)


def run(project: Project, **kw: Any) -> Job:
    job = services.rendering_start(project=project, user=None, enqueue=False, **kw)
    return services.rendering_execute(job=job)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- rendering


def test_a_job_renders_every_answer_and_gives_the_judges_its_images(
    world: SimpleNamespace, sandbox: CountingSandbox
) -> None:
    job = run(world.project)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert (job.progress, job.total) == (6, 6)
    result = job.result
    assert result["answers"] == 6 and result["rendered"] == 6
    assert result["calls"]["rendered"] == 12 and result["calls"]["placeholder"] == 12
    # Two distinct programs among six answers: each run once.
    assert len(sandbox.programs) == 2
    assert result["calls"]["executed"] == 2 and result["calls"]["cached"] == 4
    for response in Response.objects.filter(origin=Origin.MODEL):
        [rendering] = RenderedAnswer.objects.filter(response=response)
        code = png_for("code:" + CHART + f"\n# {int(response.item.external_id[1]) % 2}")
        assert response.extra["rendered_images"] == [world.docs[0].sha256, sha(code), None, None]
        assert [c["status"] for c in rendering.calls] == [
            "rendered",
            "rendered",
            "placeholder",
            "placeholder",
        ]
        assert [c["tool"] for c in rendering.calls] == ["reference", "code", "diffusion", "search"]
        assert [c["provider"] for c in rendering.calls] == ["document", "sandbox", "", ""]
        assert (rendering.n_rendered, rendering.n_placeholder, rendering.n_failed) == (2, 2, 0)
        assert rendering.job_id == job.pk and rendering.text == response.text
    produced = Image.objects.get(sha256=response.extra["rendered_images"][1])
    assert world.project in produced.projects.all()  # so judges may send it
    assert judge_services.rendered_images(response) == response.extra["rendered_images"]


def test_rendering_again_is_idempotent_and_answers_from_the_cache(
    world: SimpleNamespace, sandbox: CountingSandbox
) -> None:
    run(world.project)
    rows, images = RenderedAnswer.objects.count(), Image.objects.count()
    extras = {r.pk: r.extra for r in Response.objects.all()}
    again = run(world.project)
    assert again.result["rendered"] == 0 and again.result["unchanged"] == 6
    assert again.result["calls"]["executed"] == 0
    assert RenderedAnswer.objects.count() == rows and Image.objects.count() == images
    assert {r.pk: r.extra for r in Response.objects.all()} == extras
    assert len(sandbox.programs) == 2


def test_configuring_providers_renders_again_with_cached_code(
    world: SimpleNamespace, sandbox: CountingSandbox, image_server: FakeImageServer, settings: Any
) -> None:
    run(world.project)
    configure(settings, image_server)
    job = run(world.project)
    assert job.result["rendered"] == 6
    assert job.result["providers"]["diffusion"] == f"images:fake-image-1@{image_server.url}/v1"
    assert len(sandbox.programs) == 2  # the code calls came from the cache
    response = Response.objects.get(item=world.items[1], model_name="alpha")
    images = response.extra["rendered_images"]
    assert images[2] == sha(png_for("generate:an illustration 1"))
    assert images[3] == sha(png_for("search:eiffel tower"))
    # One search for the six answers: cached per query.
    assert len(image_server.paths("/search")) == 1
    assert RenderedAnswer.objects.filter(response=response).count() == 2  # history kept
    newest = RenderedAnswer.objects.filter(response=response).first()
    assert newest is not None and newest.n_rendered == 4
    assert [c["cached"] for c in newest.calls][:2] == [False, True]
    search = ToolCallCache.objects.get(tool="search")
    assert search.detail["title"] == "A picture of eiffel tower"


def test_a_failure_that_may_pass_is_tried_again_next_time(
    world: SimpleNamespace, sandbox: CountingSandbox, image_server: FakeImageServer, settings: Any
) -> None:
    configure(settings, image_server, generate=False, edit=False)
    image_server.fail_next(503, times=1)  # one search for the three answers
    job = run(world.project, models=["alpha"])
    response = Response.objects.get(item=world.items[0], model_name="alpha")
    call = RenderedAnswer.objects.filter(response=response).first().calls[3]  # type: ignore[union-attr]
    assert (call["status"], call["reason"], call["retry"]) == ("failed", "error", True)
    assert "HTTP 503" in call["message"]
    assert not ToolCallCache.objects.filter(tool="search").exists()
    assert job.result["calls"]["failed"] == 3
    again = run(world.project, models=["alpha"])
    assert again.result["rendered"] == 3
    response.refresh_from_db()
    assert response.extra["rendered_images"][3] == sha(png_for("search:eiffel tower"))


def test_a_provider_output_that_is_not_an_image_fails_the_call(
    world: SimpleNamespace, sandbox: CountingSandbox, image_server: FakeImageServer, settings: Any
) -> None:
    configure(settings, image_server, edit=False, search=False)
    image_server.answer_not_an_image(times=10)
    run(world.project, response_ids=[world.answers[0].pk])
    call = RenderedAnswer.objects.get(response=world.answers[0]).calls[2]
    assert (call["status"], call["reason"]) == ("failed", "error")
    assert "not a usable image" in call["message"]


def test_edit_with_an_endpoint_edits_the_document_image(
    project: Project,
    users: dict[str, Any],
    image_server: FakeImageServer,
    settings: Any,
    sandbox: CountingSandbox,
) -> None:
    configure(settings, image_server, generate=False, search=False)
    doc = ImageFactory(projects=[project])
    item = ItemFactory(project=project, image_refs=[image_ref(doc, position=0)])
    answer = ResponseFactory(
        item=item, origin=Origin.MODEL, model_name="m", key="model:m",
        text=atp("Edit", img_index=0, prompt="circle it") + "\n\n" + atp("Edit", img_index=3, prompt="x"),
    )  # fmt: skip
    run(project)
    answer.refresh_from_db()
    assert answer.extra["rendered_images"] == [sha(png_for("edit:circle it")), None]
    [seen] = [r for r in image_server.requests if r.path.endswith("/images/edits")]
    assert doc.file.open("rb").read() in seen.body
    cached = ToolCallCache.objects.get(tool="edit")
    assert cached.input_sha256 == doc.sha256


def test_llmi_project_renders_imgen_tags(users: dict[str, Any], sandbox: CountingSandbox) -> None:
    project = ProjectFactory(data_format="llmi")
    item = ItemFactory(project=project)
    answer = ResponseFactory(
        item=item, origin=Origin.MODEL, model_name="m", key="model:m",
        text="A chart <imgen>{'source': 'code', 'description': 'bars', 'params': {'code': 'plt.bar([1],[2])'}}</imgen>"
        " and <imgen>{'source': 'diffusion', 'description': 'd', 'params': {'prompt': 'p'}}</imgen>",
    )  # fmt: skip
    run(project)
    answer.refresh_from_db()
    assert answer.extra["rendered_images"] == [sha(png_for("code:plt.bar([1],[2])")), None]


# --------------------------------------------------------------------------- cancel and resume


def test_a_cancelled_job_stops_and_the_next_one_does_only_what_is_left(
    world: SimpleNamespace, sandbox: CountingSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(services, "CHUNK", 2)
    job = services.rendering_start(project=world.project, user=None, enqueue=False)
    original = services._record

    def record_then_cancel(**kw: Any) -> None:
        original(**kw)
        Job.objects.filter(pk=job.pk).update(cancel_requested_at=timezone.now())

    monkeypatch.setattr(services, "_record", record_then_cancel)
    job = services.rendering_execute(job=job)
    assert job.status == JobStatus.FAILED and job.cancelled
    assert job.result == {"cancelled": True, "cancelled_by": None}
    assert RenderedAnswer.objects.count() == 2  # the first chunk only
    monkeypatch.setattr(services, "_record", original)
    resumed = run(world.project)
    assert resumed.result["unchanged"] == 2 and resumed.result["rendered"] == 4
    assert RenderedAnswer.objects.count() == 6
    assert len(sandbox.programs) == 2


def test_a_second_job_while_one_runs_is_refused(world: SimpleNamespace) -> None:
    services.rendering_start(project=world.project, user=None, enqueue=False)
    with pytest.raises(Conflict, match="still queued"):
        services.rendering_start(project=world.project, user=None, enqueue=False)


# --------------------------------------------------------------------------- choosing answers


def test_upload_imports_the_answers_and_renders_those_models(
    world: SimpleNamespace, sandbox: CountingSandbox
) -> None:
    lines = [
        json.dumps({"id": "q0", "model": "gamma", "answer": atp("Reference", img_index=1)}),
        json.dumps({"id": "nope", "model": "gamma", "answer": "x"}),
    ]
    job = run(world.project, files=[("gamma.jsonl", "\n".join(lines).encode())])
    assert job.params["models"] == ["gamma"] and job.total == 1
    response = Response.objects.get(model_name="gamma")
    assert response.extra["rendered_images"] == [world.docs[1].sha256]


def test_changing_an_answers_text_drops_its_rendered_images(
    world: SimpleNamespace, sandbox: CountingSandbox
) -> None:
    lines = [json.dumps({"id": "q0", "model": "gamma", "answer": atp("Reference", img_index=1)})]
    run(world.project, files=[("gamma.jsonl", "\n".join(lines).encode())])
    changed = [json.dumps({"id": "q0", "model": "gamma", "answer": "No image now."})]
    judge_services.answers_import(
        project=world.project, files=[("gamma.jsonl", changed[0].encode())]
    )
    response = Response.objects.get(model_name="gamma")
    assert "rendered_images" not in response.extra
    assert judge_services.rendered_images(response) is None


def test_bad_choices_say_what_is_wrong(world: SimpleNamespace, users: dict[str, Any]) -> None:
    with pytest.raises(ValidationFailed, match="no model answers of nobody"):
        services.rendering_start(project=world.project, user=None, models=["nobody"])
    with pytest.raises(ValidationFailed, match="none of the 1 uploaded answers"):
        services.rendering_start(
            project=world.project,
            user=None,
            files=[("x.jsonl", b'{"id": "zzz", "model": "m", "answer": "a"}')],
        )
    with pytest.raises(Forbidden):
        services.rendering_start(project=world.project, user=users["annotator"])
    plans = ProjectFactory(kind="plan", data_format="mms")
    with pytest.raises(ValidationFailed, match="only interleaved projects"):
        services.rendering_start(project=plans, user=None)


def test_an_answer_over_the_text_limit_is_recorded_as_not_rendered(
    world: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmark.rendering import Limits

    monkeypatch.setattr(services, "Limits", lambda: Limits(max_text_chars=50))
    job = run(world.project, response_ids=[world.answers[0].pk])
    assert job.result["not_rendered"] == 1
    rendering = RenderedAnswer.objects.get(response=world.answers[0])
    assert "the renderer takes at most 50" in rendering.error and rendering.calls == []
    world.answers[0].refresh_from_db()
    assert "rendered_images" not in world.answers[0].extra


def test_the_real_sandbox_draws_the_figure(project: Project, users: dict[str, Any]) -> None:
    """With benchmark.sandbox installed: a matplotlib program's figure is the call's image and a
    program that reads /etc/passwd is a failure card (skipped without the sandbox, failed where
    it is required: tests/required.py)."""
    pytest.importorskip("benchmark.sandbox")
    item = ItemFactory(project=project)
    answer = ResponseFactory(
        item=item, origin=Origin.MODEL, model_name="m", key="model:m",
        text=atp("Code", code=CHART) + "\n\n" + atp("Code", code="print(open('/etc/passwd').read())"),
    )  # fmt: skip
    job = run(project)
    rendering = RenderedAnswer.objects.get(response=answer)
    chart, passwd = rendering.calls
    if chart["reason"] == "not_available":
        missing(f"the sandbox cannot run on this machine: {chart['message']}")
    assert chart["status"] == "rendered" and chart["provider"] == "sandbox", chart
    assert Image.objects.get(sha256=chart["image"]).format == "PNG"
    assert (passwd["status"], passwd["reason"]) == ("failed", "error")
    assert "root:" not in json.dumps(rendering.calls)
    assert job.result["calls"]["executed"] == 2
