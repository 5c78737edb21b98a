"""The judge-run pages (issue 10): "Judge answers" starts a run as a job against the scripted
model server, the run's page shows the figures of the papers' tables equal to hand-computed
ones, the released scores beside the judge's, each answer's report a page at a time (bounded
queries), resuming a failed run, comparing two sources with Spearman's rho, permissions, and
bad input answered with a clear 400."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from benchmark.models import ItemStatus, Job, JobStatus, Project, Response, Role
from review.judges import services as judge_services
from review.judges.models import JudgeRun
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory, ResponseFactory
from tests.judge_server import (
    GARBAGE,
    ScriptedServer,
    check,
    criterion_of,
    jsonl,
    rubric,
    tool,
)
from tests.llm_server import point_at

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "judge-start"}
IMGEN = '<imgen>{"source": "google_search", "description": "d", "params": {"query": "q"}}</imgen>'


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    s = ScriptedServer().start()
    try:
        yield s
    finally:
        s.stop()


def members(project: Project, users: dict[str, Any]) -> Project:
    for role in (Role.ADMIN, Role.REVIEWER, Role.ANNOTATOR):
        MembershipFactory(project=project, user=users[str(role)], role=role)
    return project


def upload(name: str, rows: list[dict[str, Any]]) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, jsonl(rows))


@pytest.fixture
def llmi(server: ScriptedServer, users: dict[str, Any]) -> Project:
    """An LLM-I project on the scripted server: q1, q2 with criteria r1, r2 and one image
    asked for; alpha answers with an image, beta without."""
    project = members(ProjectFactory(name="LLMI judged", data_format="llmi"), users)
    point_at(project, server)
    for n in (1, 2):
        ItemFactory(
            project=project,
            external_id=f"q{n}",
            query=f"Explain topic {n}",
            rubric=[{"key": "r1", "text": "is correct"}, {"key": "r2", "text": "has an image"}],
            constraints={"image_num": 1},
        )
    judge_services.answers_import(
        project=project,
        files=[
            (
                "alpha.jsonl",
                jsonl([{"trace_id": f"q{n}", "answer": f"ALPHA {n} {IMGEN}"} for n in (1, 2)]),
            ),
            ("beta.jsonl", jsonl([{"trace_id": f"q{n}", "answer": f"BETA {n}"} for n in (1, 2)])),
        ],
    )
    return project


def rubric_script(system: str, user: str, model: str) -> str:
    """alpha: r1 2, r2 1 (75 %). beta: q1 all 0; q2 r1 2, r2 unparseable (excluded): 50 %.
    gamma: 2 everywhere."""
    criterion = criterion_of(user)
    if "ALPHA" in user:
        return rubric(2 if criterion == "r1" else 1, f"alpha {criterion}")
    if "GAMMA" in user:
        return rubric(2, "gamma fine")
    if "BETA 2" in user and criterion == "r2":
        return GARBAGE
    return rubric(0 if "BETA 1" in user else 2)


def start(client: Client, project: Project, capture: Any, **data: Any) -> Any:
    """POST the start form (htmx) and run the job it enqueues."""
    with capture(execute=True):
        return client.post(reverse("review:judge_runs", args=[project.pk]), data, **HX)


def figure(html: str, model: str, name: str, table: str = "judge-figures") -> str:
    block = re.search(rf'<table[^>]*id="{re.escape(table)}".*?</table>', html, re.S)
    assert block, table
    row = re.search(rf'<tr data-model="{re.escape(model)}">.*?</tr>', block.group(0), re.S)
    assert row, model
    cell = re.search(rf'data-figure="{re.escape(name)}">(.*?)</td>', row.group(0), re.S)
    assert cell, name
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", cell.group(1))).strip()


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


# --------------------------------------------------------------------------- starting


def test_start_from_the_page_runs_the_rubric_judge_and_shows_the_figures(
    llmi: Project,
    server: ScriptedServer,
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    server.script = rubric_script
    page = clients["reviewer"].get(reverse("review:judge_runs", args=[llmi.pk]))
    assert page.status_code == 200
    body = page.content.decode()
    assert "alpha (2 answers)" in body and "beta (2 answers)" in body
    assert "fake-vl-7b" in body  # the project's model as the default

    response = start(
        clients["reviewer"],
        llmi,
        django_capture_on_commit_callbacks,
        judge="llmi-rubric",
        workers=2,
    )
    assert response.status_code == 200
    run = JudgeRun.objects.get(project=llmi)
    assert run.judge == "llmi-rubric" and run.model == "fake-vl-7b"
    assert f'id="job-{run.job_id}"' in response.content.decode()
    run.job.refresh_from_db()
    assert run.job.status == JobStatus.SUCCEEDED, run.job.error

    # The card the page polls: stops polling with the kind's event and shows the figures.
    card = clients["reviewer"].get(
        reverse("benchmark:job_detail", args=[run.job_id]),
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET=f"job-{run.job_id}",
    )
    assert card.status_code == 286 and card["HX-Trigger"] == "judge-run-done"
    html = card.content.decode()
    assert figure(html, "alpha", "rubric", "judge-job-figures") == "75.00%"
    assert figure(html, "beta", "rubric", "judge-job-figures") == "50.00%"

    # The run's page: LLM-I Table 2's Rubric per model, the exclusions and why.
    html = clients["reviewer"].get(reverse("review:judge_run", args=[run.pk])).content.decode()
    assert figure(html, "alpha", "rubric") == "75.00%"
    assert figure(html, "beta", "rubric") == "50.00%"
    assert figure(html, "beta", "criteria_excluded") == "1"
    assert figure(html, "alpha", "excluded") == "0"
    assert "1 judgment did not parse after a retry, 0 got no answer" in text(html)
    assert "not valid JSON" in html  # why, in the failures table and the answer's report
    assert html.count(GARBAGE) == 2  # the raw output of both attempts of the failed call
    assert "alpha r1" in html  # a justification
    assert f"llmi.rubric</code> v{run.templates['llmi.rubric']}" in html
    assert "Sum of the valid criterion scores / (2 × number of valid scores)" in html


def test_a_plain_post_redirects_to_the_run(
    llmi: Project,
    server: ScriptedServer,
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    server.script = rubric_script
    with django_capture_on_commit_callbacks(execute=True):
        response = clients["admin"].post(
            reverse("review:judge_runs", args=[llmi.pk]),
            {"judge": "llmi-rubric", "workers": 4, "models": ["beta"]},
        )
    run = JudgeRun.objects.get(project=llmi)
    assert response.status_code == 302 and response["Location"] == f"/judges/runs/{run.pk}/"
    assert run.selection == {"models": ["beta"]}
    html = clients["admin"].get(response["Location"]).content.decode()
    assert figure(html, "beta", "rubric") == "50.00%"
    assert 'data-model="alpha"' not in html
    listing = clients["admin"].get(reverse("review:judge_runs", args=[llmi.pk])).content.decode()
    assert f'data-run="{run.pk}"' in listing and 'data-status="succeeded"' in listing


def test_an_upload_is_imported_and_its_released_scores_shown_beside_the_judges(
    llmi: Project,
    server: ScriptedServer,
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    server.script = rubric_script
    rows = [
        {
            "trace_id": "q1",
            "answer": "GAMMA 1",
            "scores": {"r1": 2, "r2": 0},
            "justifications": {"r1": "released yes", "r2": "released no"},
        },
        {
            "trace_id": "q2",
            "answer": "GAMMA 2",
            "scores": {"r1": 1, "r2": -1},
            "justifications": {"r1": "half", "r2": "judge error"},
        },
    ]
    response = start(
        clients["reviewer"],
        llmi,
        django_capture_on_commit_callbacks,
        judge="llmi-rubric",
        workers=4,
        answers=[upload("gamma.jsonl", rows)],
    )
    assert response.status_code == 200, response.content.decode()[:500]
    stored = Response.objects.get(item__project=llmi, model_name="gamma", item__external_id="q1")
    assert stored.extra == {
        "scores": {"r1": 2, "r2": 0},
        "justifications": {"r1": "released yes", "r2": "released no"},
    }
    run = JudgeRun.objects.get(project=llmi)
    assert run.selection == {"models": ["gamma"]}  # the uploaded model only
    html = clients["reviewer"].get(reverse("review:judge_run", args=[run.pk])).content.decode()
    # Judge: 2 everywhere -> 100 %. Released: q1 (2 + 0) / 4 = .5; q2 r2 = -1 is left out,
    # 1 / 2 = .5 -> 50 %, one released score left out.
    assert figure(html, "gamma", "rubric") == "100.00%"
    assert figure(html, "gamma", "released") == "50.00% (2)"
    released = re.search(r'data-released-model="gamma".*?</table>', html, re.S)
    assert released
    block = released.group(0)
    assert "1 released score not 0–2 left out" in block
    r1 = re.search(r'<tr data-criterion="r1">.*?</tr>', block, re.S)
    r2 = re.search(r'<tr data-criterion="r2">.*?</tr>', block, re.S)
    assert r1 and r2
    # r1: judge 2, 2; released 2, 1; agree on q1 only. r2: judge 2, 2; released 0 (q2's -1
    # left out); no agreement on the one pair.
    assert text(r1.group(0)).split() == ["r1", "2.00", "(2)", "1.50", "(2)", "50.0%", "(2)"]
    assert text(r2.group(0)).split() == ["r2", "2.00", "(2)", "0.00", "(1)", "0.0%", "(1)"]
    # Per answer, the released score and justification beside the judge's.
    answer = re.search(r'data-item="q1" data-model="gamma".*?</article>', html, re.S)
    assert answer
    row = re.search(r'<tr data-criterion="r2">.*?</tr>', answer.group(0), re.S)
    assert row and "gamma fine" in row.group(0) and "released no" in row.group(0)
    assert re.search(r'data-score="released">0<', row.group(0))
    assert "released score" in html.lower()


def test_the_llmi_reward_figures_and_the_weights_used(
    llmi: Project,
    server: ScriptedServer,
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    def script(system: str, user: str, model: str) -> str:
        if system.startswith("You judge a finished answer"):
            return "Image quality: 5\nTask relevance: 5\nText-image relevance: 2"
        return "Text: 5\nImage: 3"

    server.script = script
    start(
        clients["reviewer"], llmi, django_capture_on_commit_callbacks, judge="llmi-mllm", workers=2
    )
    run = JudgeRun.objects.get(project=llmi)
    html = clients["reviewer"].get(reverse("review:judge_run", args=[run.pk])).content.decode()
    # R_llm = (1 + .5) / 2 = .75; R_mllm = (1 + 1 + .25) / 3 = .75. alpha has its image:
    # R_rule 1, R = (1 + .75 + .75) / 3 = .833; beta has none: R = (0 + .75 + 0) / 3 = .25.
    assert [figure(html, "alpha", n) for n in ("r", "r_rule", "r_llm", "r_mllm")] == [
        "0.833",
        "1.000",
        "0.750",
        "0.750",
    ]
    assert [figure(html, "beta", n) for n in ("r", "r_rule")] == ["0.250", "0.000"]
    assert "w_rule = 0.333, w_llm = 0.333, w_mllm = 0.333 — equal weights" in text(html)
    answer = re.search(r'data-item="q1" data-model="alpha".*?</article>', html, re.S)
    assert answer and "Text 5 · Image 3" in answer.group(0)


@pytest.fixture
def atp(server: ScriptedServer, users: dict[str, Any]) -> Project:
    project = members(ProjectFactory(name="ATP judged"), users)
    point_at(project, server)
    ItemFactory(project=project, external_id="atp_1", query="Show me a cat")
    ref, search = tool("Reference", {"img_index": 0}), tool("Search", {"query": "cat"})
    judge_services.answers_import(
        project=project,
        files=[
            (
                "alpha.jsonl",
                jsonl([{"trace_id": "atp_1", "answer": f"ALPHA\n\n{ref}\n\n{search}"}]),
            ),
            ("beta.jsonl", jsonl([{"trace_id": "atp_1", "answer": "BETA, text only."}])),
        ],
    )
    return project


def mam_script(system: str, user: str, model: str) -> str:
    alpha = "ALPHA" in user
    if system.startswith("You are the Precision"):
        return rubric_json({"calls": [check(1), check(2, parameters=1)]})
    if system.startswith("You are the Recall"):
        missed = [] if alpha else [{"after": "x", "tool": "Search", "why": "y"}] * 2
        return rubric_json({"missed": missed})
    if alpha:
        return rubric_json({"score": 85, "tier": "Excellent", "why": "good"})
    return rubric_json({"score": 30, "tier": "Poor", "why": "bad"})


def rubric_json(value: Any) -> str:
    import json

    return json.dumps(value)


def test_atp_mam_figures_sub_checks_and_definitions(
    atp: Project,
    server: ScriptedServer,
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    server.script = mam_script
    start(clients["reviewer"], atp, django_capture_on_commit_callbacks, judge="atp-mam", workers=1)
    run = JudgeRun.objects.get(project=atp)
    html = clients["reviewer"].get(reverse("review:judge_run", args=[run.pk])).content.decode()
    # alpha: Chief 85, nothing missed, 2 calls of which 1 all 2s; parameters 1 of 2.
    assert [figure(html, "alpha", n) for n in ("fs", "sr", "mi", "calls")] == [
        "85.00",
        "50.00%",
        "0.00",
        "2",
    ]
    # beta: no tool call (no Precision call), Chief 30, two missed images.
    assert [figure(html, "beta", n) for n in ("fs", "sr", "mi", "calls")] == [
        "30.00",
        "—",
        "2.00",
        "0",
    ]
    sub = "judge-figures-sub-checks"
    assert [figure(html, "alpha", c, sub) for c in ("1a", "1b", "1c", "2a", "2b", "2c")] == [
        "100.00%",
        "100.00%",
        "100.00%",
        "100.00%",
        "50.00%",
        "100.00%",
    ]
    page = text(html)
    assert "the paper leaves “successful” loose" in page
    assert "SR The share of tool calls scored 2 on all six sub-checks" in page
    assert "MI Mean number of missed images" in page
    assert "FS Mean Chief Judge score" in page
    # The three agents' reports of an answer.
    alpha = re.search(r'data-item="atp_1" data-model="alpha".*?</article>', html, re.S)
    assert alpha
    assert "data-chief-score>85<" in alpha.group(0) and 'data-missed="0"' in alpha.group(0)
    beta = re.search(r'data-item="atp_1" data-model="beta".*?</article>', html, re.S)
    assert beta and 'data-missed="2"' in beta.group(0) and "No tool call" in beta.group(0)
    for label in ("atp.mam.precision", "atp.mam.recall", "atp.mam.chief"):
        assert f"{label}</code> v{run.templates[label]}" in html


# --------------------------------------------------------------------------- answers, queries


def test_answers_are_paged_and_filtered_with_bounded_queries(
    server: ScriptedServer,
    users: dict[str, Any],
    clients: dict[str, Client],
    django_assert_max_num_queries: Any,
) -> None:
    project = members(ProjectFactory(name="Many answers", data_format="llmi"), users)
    point_at(project, server)
    for n in range(1, 26):
        ItemFactory(
            project=project, external_id=f"q{n}", position=n, rubric=[{"key": "r1", "text": "ok"}]
        )
    judge_services.answers_import(
        project=project,
        files=[
            (
                "alpha.jsonl",
                jsonl([{"trace_id": f"q{n}", "answer": f"A{n}"} for n in range(1, 26)]),
            ),
            ("beta.jsonl", jsonl([{"trace_id": f"q{n}", "answer": f"B{n}"} for n in (1, 2, 3)])),
        ],
    )
    server.script = lambda system, user, model: rubric(2)
    run, job = judge_services.judge_run_create(project=project, user=None, judge="llmi-rubric")
    assert judge_services.judge_run_execute(job=job).status == JobStatus.SUCCEEDED
    url = reverse("review:judge_run", args=[run.pk])
    client = clients["reviewer"]
    with django_assert_max_num_queries(12):
        first = client.get(url).content.decode()
    with django_assert_max_num_queries(12):
        second = client.get(url + "?page=2").content.decode()
    assert first.count('class="card answer-report"') == 20 and "Page 1 of 2" in first
    assert second.count('class="card answer-report"') == 8 and "Page 2 of 2" in second
    with django_assert_max_num_queries(12):
        only = client.get(
            url + "?model=beta", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="judge-answers"
        ).content.decode()
    assert only.count('class="card answer-report"') == 3
    assert 'data-model="alpha"' not in only and "<html" not in only
    with django_assert_max_num_queries(6):
        listing = client.get(reverse("review:judge_runs", args=[project.pk]))
    assert listing.status_code == 200


# --------------------------------------------------------------------------- resuming


def test_a_failed_run_shows_partial_figures_and_resumes(
    llmi: Project,
    server: ScriptedServer,
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    server.script = rubric_script
    run, job = judge_services.judge_run_create(project=llmi, user=None, judge="llmi-rubric")
    # A running job can't be resumed: 409 with the reason.
    refused = clients["reviewer"].post(reverse("review:judge_run_resume", args=[run.pk]))
    assert refused.status_code == 409 and "still queued" in refused.content.decode()
    Job.objects.filter(pk=job.pk).update(status=JobStatus.FAILED, error="the worker died")
    html = clients["reviewer"].get(reverse("review:judge_run", args=[run.pk])).content.decode()
    assert 'id="judge-partial"' in html and "data-resume" in html and "the worker died" in html
    with django_capture_on_commit_callbacks(execute=True):
        resumed = clients["reviewer"].post(
            reverse("review:judge_run_resume", args=[run.pk]),
            HTTP_HX_REQUEST="true",
            HTTP_HX_TARGET=f"job-{job.pk}",
        )
    assert resumed.status_code == 200
    run.refresh_from_db()
    assert run.job_id != job.pk and f'id="job-{run.job_id}"' in resumed.content.decode()
    assert run.job is not None and run.job.status == JobStatus.SUCCEEDED, run.job.error
    html = clients["reviewer"].get(reverse("review:judge_run", args=[run.pk])).content.decode()
    assert 'id="judge-partial"' not in html and figure(html, "alpha", "rubric") == "75.00%"


# --------------------------------------------------------------------------- comparing


@pytest.fixture
def three(server: ScriptedServer, users: dict[str, Any]) -> Project:
    """Three models answering one LLM-I item with one criterion."""
    project = members(ProjectFactory(name="Three models", data_format="llmi"), users)
    point_at(project, server)
    ItemFactory(project=project, external_id="q1", rubric=[{"key": "r1", "text": "ok"}])
    judge_services.answers_import(
        project=project,
        files=[
            (f"{m}.jsonl", jsonl([{"trace_id": "q1", "answer": m.upper()}]))
            for m in ("alpha", "beta", "gamma")
        ],
    )
    return project


def judged(project: Project, judge: str, **kw: Any) -> JudgeRun:
    run, job = judge_services.judge_run_create(project=project, user=None, judge=judge, **kw)
    job = judge_services.judge_run_execute(job=job)
    assert job.status == JobStatus.SUCCEEDED, job.error
    return run


def compare(client: Client, project: Project, **params: str) -> Any:
    return client.get(reverse("review:judge_compare", args=[project.pk]), params)


def test_compare_two_runs_gives_spearman_rho(
    three: Project,
    server: ScriptedServer,
    clients: dict[str, Client],
    django_assert_max_num_queries: Any,
) -> None:
    scores = {"judge-a": {"ALPHA": 2, "BETA": 1, "GAMMA": 0}, "judge-b": {"ALPHA": 1, "BETA": 2}}

    def script(system: str, user: str, model: str) -> str:
        name = next(n for n in ("ALPHA", "BETA", "GAMMA") if n in user)
        return rubric(scores[model].get(name, 0))

    server.script = script
    a = judged(three, "llmi-rubric", model="judge-a")
    b = judged(three, "llmi-rubric", model="judge-b")
    with django_assert_max_num_queries(8):
        response = compare(clients["reviewer"], three, a=f"run:{a.pk}", b=f"run:{b.pk}")
    assert response.status_code == 200
    html = response.content.decode()
    # Rubric: a ranks alpha (100) > beta (50) > gamma (0); b ranks beta > alpha > gamma.
    # rho = 1 - 6 * (1 + 1 + 0) / (3 * 8) = 0.5; p (t-test, 1 df) = 0.6667.
    row = re.search(r'<tr data-pair="rubric-rubric">.*?</tr>\s*</tbody>', html, re.S)
    assert row
    assert re.search(r'data-figure="rho">0\.500<', row.group(0))
    assert re.search(r'data-figure="p">0\.6667<', row.group(0))
    assert figure_cmp(html, "beta", "a-rubric") == "50.00%"
    assert figure_cmp(html, "beta", "b-rubric") == "100.00%"
    assert "data-compare-note" not in html  # same answers, same models

    # Two models in common only: rho undefined, and the page says why.
    c = judged(three, "llmi-rubric", model="judge-a", models=["alpha", "beta"])
    html = compare(clients["reviewer"], three, a=f"run:{a.pk}", b=f"run:{c.pk}").content.decode()
    assert 'data-figure="rho">undefined<' in html
    assert "rho is undefined for 2 model(s); it needs at least 3" in html
    assert "judged different answers: 2 shared, 1 only in" in html
    assert "gamma only in" in html

    # No answers in common.
    d = judged(three, "llmi-rubric", model="judge-b", models=["gamma"])
    e = judged(three, "llmi-rubric", model="judge-b", models=["alpha"])
    html = compare(clients["reviewer"], three, a=f"run:{d.pk}", b=f"run:{e.pk}").content.decode()
    assert "The two sources share no answers" in html


def figure_cmp(html: str, model: str, name: str) -> str:
    block = re.search(r'id="compare-figures".*?</table>', html, re.S)
    assert block
    row = re.search(rf'<tr data-model="{model}"[^>]*>.*?</tr>', block.group(0), re.S)
    assert row, model
    cell = re.search(rf'data-figure="{name}">(.*?)</td>', row.group(0), re.S)
    assert cell, name
    return re.sub(r"<[^>]+>", "", cell.group(1)).strip()


def test_compare_a_mam_run_with_the_tool_set_f1_of_the_same_answers(
    server: ScriptedServer, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    project = members(ProjectFactory(name="ATP F1"), users)
    point_at(project, server)
    ref, search = tool("Reference", {"img_index": 0}), tool("Search", {"query": "q"})
    item = ItemFactory(project=project, external_id="atp_1", status=ItemStatus.VERIFIED)
    ResponseFactory(item=item, key="gt", text=f"A.\n\n{ref}")
    answers = {
        "alpha": f"ALPHA\n\n{ref}",
        "beta": f"BETA\n\n{search}",
        "gamma": f"GAMMA {ref} {search}",
    }
    judge_services.answers_import(
        project=project,
        files=[
            (f"{m}.jsonl", jsonl([{"trace_id": "atp_1", "answer": t}])) for m, t in answers.items()
        ],
    )
    chief = {"ALPHA": (90, "Excellent"), "GAMMA": (70, "Good but Flawed"), "BETA": (10, "Fatal")}

    def script(system: str, user: str, model: str) -> str:
        if system.startswith("You are the Precision"):
            n = int(re.search(r"The answer's (\d+) tool call", user).group(1))  # type: ignore[union-attr]
            return rubric_json({"calls": [check(i) for i in range(1, n + 1)]})
        if system.startswith("You are the Recall"):
            return rubric_json({"missed": []})
        name = next(k for k in chief if k in user.split("Answer:", 1)[1])
        score, tier = chief[name]
        return rubric_json({"score": score, "tier": tier, "why": "w"})

    server.script = script
    run = judged(project, "atp-mam")
    html = compare(clients["reviewer"], project, a=f"run:{run.pk}", b="f1").content.decode()
    # F1 (one verified item, GT {reference}): alpha 100, gamma P .5 R 1 -> 66.67, beta 0.
    # FS: alpha 90, gamma 70, beta 10: the same ranking, rho = 1.
    assert figure_cmp(html, "gamma", "b-f1") == "66.67%"
    assert figure_cmp(html, "alpha", "a-fs") == "90.00"
    assert re.search(r'<tr data-pair="fs-f1">.*?data-figure="rho">1\.000<', html, re.S)
    assert "Over the answers of" in html
    # MI against F1, picked by hand: every model missed nothing, so rho is undefined.
    html = compare(
        clients["reviewer"], project, a=f"run:{run.pk}", b="f1", fa="mi", fb="f1"
    ).content.decode()
    assert re.search(r'<tr data-pair="mi-f1">.*?data-figure="rho">undefined<', html, re.S)
    assert "ranks every model equal" in html


def test_the_compare_link_of_a_run_opens_the_form_with_that_run_chosen(
    three: Project, server: ScriptedServer, clients: dict[str, Client]
) -> None:
    """The run list's "Compare" link names one run; it once answered 400 ("Second source: ''
    is not a source"). It opens the form with that run first and another source second."""
    server.script = lambda system, user, model: rubric(1)
    first = judged(three, "llmi-rubric", model="judge-a")
    other = judged(three, "llmi-rubric", model="judge-b")
    runs = clients["reviewer"].get(reverse("review:judge_runs", args=[three.pk])).content.decode()
    link = re.search(rf'href="([^"]*compare/\?a=run:{first.pk})"', runs)
    assert link, "the run list links each finished run to the compare form"
    response = clients["reviewer"].get(link.group(1))
    assert response.status_code == 200
    html = response.content.decode()
    assert "is not a source" not in html
    assert re.search(rf'id="compare-a">.*?<option value="run:{first.pk}" selected>', html, re.S)
    assert re.search(rf'id="compare-b">.*?<option value="run:{other.pk}" selected>', html, re.S)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"a": "f1", "b": "released"}, "choose at least one judge run to compare"),
        ({"a": "run:999999", "b": "f1"}, "this project has no judge run #999999"),
        ({"a": "bogus", "b": "f1"}, "is not a source"),
    ],
)
def test_compare_bad_requests_answer_400_with_the_reason(
    three: Project, clients: dict[str, Client], params: dict[str, str], message: str
) -> None:
    response = compare(clients["reviewer"], three, **params)
    assert response.status_code == 400
    assert message in response.content.decode().lower()


def test_compare_refuses_a_figure_the_source_lacks_and_released_without_scores(
    three: Project, server: ScriptedServer, clients: dict[str, Client]
) -> None:
    server.script = lambda system, user, model: rubric(1)
    run = judged(three, "llmi-rubric")
    bad = compare(clients["reviewer"], three, a=f"run:{run.pk}", b="released")
    assert bad.status_code == 400 and "carries released rubric scores" in bad.content.decode()
    bad = compare(clients["reviewer"], three, a=f"run:{run.pk}", b=f"run:{run.pk}", fa="fs")
    assert bad.status_code == 400 and "has no figure &#x27;fs&#x27;" in bad.content.decode()


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"judge": "nope", "workers": 4}, "unknown judge nope; choose one of llmi-rubric"),
        ({"workers": 4}, "choose a judge"),
        ({"judge": "llmi-llm", "workers": 0}, "greater than or equal to 1"),
        ({"judge": "llmi-llm", "workers": 4, "models": ["gamma"]}, "no model answers of gamma"),
        ({"judge": "llmi-llm", "workers": 4, "base_url": "not a url"}, "Enter a valid URL"),
    ],
)
def test_bad_form_input_answers_400(
    llmi: Project, clients: dict[str, Client], data: dict[str, Any], message: str
) -> None:
    response = clients["reviewer"].post(reverse("review:judge_runs", args=[llmi.pk]), data, **HX)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not JudgeRun.objects.exists()


def test_bad_uploads_and_missing_answers_answer_400_and_store_nothing(
    llmi: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    url = reverse("review:judge_runs", args=[llmi.pk])
    client = clients["reviewer"]
    before = Response.objects.count()
    broken = SimpleUploadedFile("broken.jsonl", b'{"trace_id": "q1"}\n')
    response = client.post(url, {"judge": "llmi-rubric", "workers": 4, "answers": [broken]}, **HX)
    assert response.status_code == 400
    assert (
        "broken.jsonl" in response.content.decode()
        and "no answer text" in response.content.decode()
    )
    unknown = upload("delta.jsonl", [{"trace_id": "nope", "answer": "x"}])
    response = client.post(url, {"judge": "llmi-rubric", "workers": 4, "answers": [unknown]}, **HX)
    assert response.status_code == 400
    assert "none of the 1 uploaded answers names an item of this project (nope)" in (
        response.content.decode()
    )
    # An upload that imports fine, with no judge model to call: nothing is kept.
    llmi.settings = {}
    llmi.save()
    fine = upload("delta.jsonl", [{"trace_id": "q1", "answer": "x"}])
    response = client.post(url, {"judge": "llmi-rubric", "workers": 4, "answers": [fine]}, **HX)
    assert response.status_code == 400 and "No judge model" in response.content.decode()
    assert Response.objects.count() == before and not JudgeRun.objects.exists()

    empty = members(ProjectFactory(name="Nothing to judge"), users)
    response = client.post(
        reverse("review:judge_runs", args=[empty.pk]),
        {"judge": "atp-mam", "workers": 4, "base_url": "http://127.0.0.1:9/v1", "model": "m"},
        **HX,
    )
    assert response.status_code == 400
    assert "the project has no model answers to judge" in response.content.decode()


def test_api_keys_are_never_shown(llmi: Project, clients: dict[str, Client]) -> None:
    llmi.settings = {"model": {**llmi.settings["model"], "api_key": "sk-secret-judge-key"}}
    llmi.save()
    html = clients["reviewer"].get(reverse("review:judge_runs", args=[llmi.pk])).content.decode()
    assert "fake-vl-7b" in html and "sk-secret-judge-key" not in html


# --------------------------------------------------------------------------- permissions


@pytest.mark.parametrize(
    ("role", "expected"),
    [("admin", 200), ("reviewer", 200), ("annotator", 403), ("outsider", 404), ("anonymous", 302)],
)
def test_who_may_see_the_judge_pages(
    llmi: Project, clients: dict[str, Client], role: str, expected: int
) -> None:
    run, _ = judge_services.judge_run_create(project=llmi, user=None, judge="llmi-llm")
    client = clients[role]
    for url in (
        reverse("review:judge_runs", args=[llmi.pk]),
        reverse("review:judge_run", args=[run.pk]),
        reverse("review:judge_compare", args=[llmi.pk]),
    ):
        response = client.get(url)
        assert response.status_code == expected, url
        if expected == 302:
            assert response["Location"].startswith("/accounts/login/")
    resume = client.post(reverse("review:judge_run_resume", args=[run.pk]))
    assert resume.status_code == (409 if expected == 200 else expected)
    started = client.post(reverse("review:judge_runs", args=[llmi.pk]), {"judge": "llmi-llm"})
    assert started.status_code == (400 if expected == 200 else expected)
    assert JudgeRun.objects.count() == 1


def test_the_project_page_links_the_judge_page(llmi: Project, clients: dict[str, Client]) -> None:
    url = reverse("review:judge_runs", args=[llmi.pk])
    project_page = reverse("benchmark:project_detail", args=[llmi.pk])
    assert url in clients["reviewer"].get(project_page).content.decode()
    assert url not in clients["annotator"].get(project_page).content.decode()
