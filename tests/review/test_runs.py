"""Scoring agent runs on the web: upload run folders, the scoring job, the results per model
and level, a person's visual verdicts (V_true), failure-mode labels, bad uploads, queries."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from benchmark.datasets import services as benchmark_services
from benchmark.models import Image, Item, Job, JobStatus, Project, ProjectKind, Role
from review.runs.models import AgentRun, FailureLabel, RunSet, VisualVerdict
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.shared_data import SHARED_DATA, needs_data

pytestmark = pytest.mark.django_db

MME = SHARED_DATA / "agentic-mme"
needs_samples = needs_data("agentic-mme")


def zip_folder(folder: Path, prefix: str = "") -> bytes:
    """A zip of every file under ``folder``, named relative to it (under ``prefix``)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, arcname=f"{prefix}{path.relative_to(folder).as_posix()}")
    return buf.getvalue()


def zip_files(files: dict[str, bytes | str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def run_files(folder: str, events: Any, answer: str = "x", **extra: bytes | str) -> dict[str, Any]:
    files: dict[str, Any] = {
        f"{folder}/tool_use_list.json": events if isinstance(events, str) else json.dumps(events),
        f"{folder}/model_answer.txt": answer,
    }
    files.update({f"{folder}/{name}": data for name, data in extra.items()})
    return files


@pytest.fixture
def mme_project(db: None) -> Project:
    """A trajectory project holding the six Agentic-MME sample tasks (not their runs)."""
    project = ProjectFactory(
        name="Agentic-MME sample", kind=ProjectKind.TRAJECTORY, data_format="agentic-mme"
    )
    if MME.is_dir():
        benchmark_services.dataset_import(project=project, path=MME / "json")
    return project


@pytest.fixture
def people(mme_project: Project) -> dict[str, Any]:
    out = {}
    for role in (Role.ADMIN, Role.REVIEWER, Role.ANNOTATOR):
        user = UserFactory(username=f"mme-{role}")
        MembershipFactory(project=mme_project, user=user, role=role)
        out[str(role)] = user
    out["reviewer2"] = UserFactory(username="mme-reviewer2")
    MembershipFactory(project=mme_project, user=out["reviewer2"], role=Role.REVIEWER)
    return out


@pytest.fixture
def reviewer(people: dict[str, Any], client_for: Any) -> Client:
    return client_for(people["reviewer"])


def upload(
    client: Client,
    project: Project,
    capture: Any,
    files: list[SimpleUploadedFile],
    paths: list[str] | None = None,
    name: str = "",
    **headers: Any,
) -> Any:
    """POST run folders; the scoring job runs eagerly once the transaction commits."""
    data: dict[str, Any] = {"files": files, "name": name}
    if paths is not None:
        data["paths"] = paths
    with capture(execute=True):
        return client.post(f"/projects/{project.pk}/runs/", data, **headers)


def zip_upload(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/zip")


def last_job() -> Job:
    job = Job.objects.filter(kind="score_runs").order_by("-id").first()
    assert job is not None
    return job


# --------------------------------------------------------------------------- the samples


@needs_samples
def test_sample_runs_score_as_their_traces_imply(
    mme_project: Project, reviewer: Client, django_capture_on_commit_callbacks: Any
) -> None:
    response = upload(
        reviewer,
        mme_project,
        django_capture_on_commit_callbacks,
        [zip_upload("runs.zip", zip_folder(MME / "runs"))],
        name="sample agent",
    )
    job = last_job()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.result["runs"] == 2
    run_set = RunSet.objects.get(pk=job.result["run_set_id"])
    assert run_set.name == "sample agent"
    runs = {r.item.external_id: r for r in run_set.runs.select_related("item")}
    assert set(runs) == {"0001", "0003"}
    # 0001: one crop against a reference of one call; "Willow St" answered.
    s1 = runs["0001"].score
    assert (s1["acc"], s1["calls"], s1["reference_calls"]) == (True, 1, 1)
    assert (s1["penalty"], s1["overthink"], s1["overthink_ratio"]) == (0.0, 0.0, 1.0)
    assert (s1["V"], s1["V_tool"], s1["V_true"], s1["S"]) == (1.0, 1.0, 1.0, None)
    # 0003: nine logged calls against two; (9-2)/(2+1) = 2.33; 9/2 = 4.5; min(1, 7*0.1).
    s3 = runs["0003"].score
    assert (s3["acc"], s3["calls"], s3["reference_calls"]) == (True, 9, 2)
    assert s3["overthink"] == pytest.approx(7 / 3) and s3["overthink_ratio"] == 4.5
    assert s3["penalty"] == pytest.approx(0.7) and s3["overthink_category"] == "overthink"
    # The run's produced images were stored once each and belong to the project.
    assert len(runs["0003"].images) == 8
    assert Image.objects.filter(projects=mme_project).count() == 6 + 9

    page = reviewer.get(f"/runs/{run_set.pk}/")
    html = page.content.decode()
    assert page.status_code == 200
    # Overall: Acc 100%, penalty (0 + 0.7)/2, Overthink per run (0 + 2.33)/2 = 1.17,
    # on the means (5 - 1.5)/(1.5 + 1) = 1.40, released ratio (1 + 4.5)/2 = 2.75.
    overall = html.split('data-row="Overall"')[1].split("</tr>")[0]
    for figure, value in [
        ("acc", "100.0%"),
        ("penalty", "0.350"),
        ("overthink", "1.17"),
        ("overthink_of_means", "1.40"),
        ("overthink_ratio", "2.75"),
        ("calls", "5.00"),
        ("reference_calls", "1.50"),
        ("shares", "50.0% / 0.0% / 50.0%"),
    ]:
        assert f'data-figure="{figure}">{value}<' in overall, figure
    assert 'data-row="L1"' in html and 'data-row="L2"' in html and 'data-row="L3"' not in html
    l2 = html.split('data-row="L2"')[1].split("</tr>")[0]
    assert 'data-figure="overthink">2.33<' in l2 and 'data-figure="overthink_ratio">4.50<' in l2
    assert f"/runs/agent-runs/{runs['0003'].pk}/" in html
    # The project's runs page lists the upload with the same overall Acc.
    overview = reviewer.get(f"/projects/{mme_project.pk}/runs/").content.decode()
    row = overview.split('id="run-sets"')[1].split("</tr>")[1]
    assert 'data-figure="acc">100.0%<' in row


@needs_samples
def test_upload_through_htmx_polls_a_progress_bar_until_done(
    mme_project: Project, reviewer: Client, django_capture_on_commit_callbacks: Any
) -> None:
    response = upload(
        reviewer,
        mme_project,
        django_capture_on_commit_callbacks,
        [zip_upload("gpt-x.zip", zip_folder(MME / "runs"))],
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="runs-upload",
    )
    html = response.content.decode()
    job = last_job()
    assert response.status_code == 200 and f'id="job-{job.pk}"' in html
    assert 'role="progressbar"' in html
    polled = reviewer.get(
        f"/jobs/{job.pk}/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET=f"job-{job.pk}"
    )
    assert polled.status_code == 286  # done: htmx stops polling
    assert "2 runs scored" in polled.content.decode()
    # With no name given, the upload is named after the zip.
    assert RunSet.objects.get().name == "gpt-x.zip"


@needs_samples
def test_folder_upload_keeps_paths_and_groups_runs_by_model(
    mme_project: Project, reviewer: Client, django_capture_on_commit_callbacks: Any
) -> None:
    files, paths = [], []
    for model in ("model-a", "model-b"):
        for path in sorted((MME / "runs" / "0001").rglob("*")):
            if path.is_file():
                rel = f"runs/{model}/0001/{path.relative_to(MME / 'runs' / '0001').as_posix()}"
                files.append(SimpleUploadedFile(path.name, path.read_bytes()))
                paths.append(rel)
    upload(reviewer, mme_project, django_capture_on_commit_callbacks, files, paths)
    job = last_job()
    assert job.status == JobStatus.SUCCEEDED, job.error
    run_set = RunSet.objects.get()
    assert sorted(run_set.runs.values_list("model_name", "folder")) == [
        ("model-a", "runs/model-a/0001"),
        ("model-b", "runs/model-b/0001"),
    ]
    html = reviewer.get(f"/runs/{run_set.pk}/").content.decode()
    assert 'data-model="model-a"' in html and 'data-model="model-b"' in html


# --------------------------------------------------------------------------- bad uploads


def bad_upload(client: Client, project: Project, capture: Any, files: dict[str, Any]) -> Job:
    upload(client, project, capture, [zip_upload("bad.zip", zip_files(files))])
    job = last_job()
    assert job.status == JobStatus.FAILED
    assert not RunSet.objects.exists() and not AgentRun.objects.exists()
    return job


@needs_samples
@pytest.mark.parametrize(
    ("files", "message"),
    [
        (run_files("9999", []), "'9999' (task '9999')"),
        ({"0001/tool_use_list.json": "[]"}, "run folder '0001': model_answer.txt is missing"),
        ({"0001/model_answer.txt": "x"}, "run folder '0001': tool_use_list.json is missing"),
        (
            run_files("0001", '[{"index": 0,'),
            "run folder '0001', file tool_use_list.json: not valid JSON",
        ),
        (
            run_files("0001", {"events": []}),
            "file tool_use_list.json: expected a JSON list of tool events",
        ),
        (run_files("0001", [1, 2]), "file tool_use_list.json: event 0 is not a JSON object"),
        (
            run_files("0001", [], **{"run_meta.json": "{nope"}),
            "run folder '0001', file run_meta.json: not valid JSON",
        ),
        ({"notes/readme.txt": "hello"}, "no run folders found"),
    ],
)
def test_bad_run_folders_are_named_and_nothing_is_stored(
    mme_project: Project,
    reviewer: Client,
    django_capture_on_commit_callbacks: Any,
    files: dict[str, Any],
    message: str,
) -> None:
    job = bad_upload(reviewer, mme_project, django_capture_on_commit_callbacks, files)
    assert message in job.error
    page = reviewer.get(f"/jobs/{job.pk}/").content.decode()
    assert "Nothing was stored" in page


@needs_samples
def test_one_bad_run_among_good_ones_stores_nothing(
    mme_project: Project, reviewer: Client, django_capture_on_commit_callbacks: Any
) -> None:
    before = Image.objects.count()
    good = {
        f"runs/0001/{p.relative_to(MME / 'runs' / '0001').as_posix()}": p.read_bytes()
        for p in (MME / "runs" / "0001").rglob("*")
        if p.is_file()
    }
    job = bad_upload(
        reviewer,
        mme_project,
        django_capture_on_commit_callbacks,
        {**good, **run_files("runs/0003", "[", "317")},
    )
    assert "run folder '0003', file tool_use_list.json: not valid JSON" in job.error
    assert Image.objects.count() == before  # the good run's image was not kept either


@needs_samples
def test_an_image_outside_the_run_folder_is_not_read(
    mme_project: Project, reviewer: Client, django_capture_on_commit_callbacks: Any, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.png"
    shutil.copy(MME / "images" / "image_0002.png", secret)
    events = [
        {
            "index": 0,
            "tool_name": "crop",
            "arguments": {"image_index": 0, "bbox_2d": [0, 0, 500, 500]},
            "output": {"ok": "true", "new_image_index": 1, "output_path": str(secret)},
        }
    ]
    upload(
        reviewer,
        mme_project,
        django_capture_on_commit_callbacks,
        [zip_upload("r.zip", zip_files(run_files("0001", events, "Willow St")))],
    )
    assert last_job().status == JobStatus.SUCCEEDED
    assert AgentRun.objects.get().images == []


def test_upload_without_files_or_in_a_non_trajectory_project_says_why(
    project: Project, users: dict[str, Any], clients: dict[str, Client], mme_project: Project
) -> None:
    page = clients["reviewer"].post(f"/projects/{project.pk}/runs/", {"name": "x"})
    assert page.status_code == 200
    assert "trajectory (Agentic-MME) projects" in page.content.decode()
    user = UserFactory(username="mme-only")
    MembershipFactory(project=mme_project, user=user, role=Role.REVIEWER)
    client = Client()
    client.force_login(user)
    page = client.post(f"/projects/{mme_project.pk}/runs/", {"name": "x"})
    assert "Choose a .zip of run folders" in page.content.decode()
    page = client.post(
        f"/projects/{mme_project.pk}/runs/",
        {"files": [SimpleUploadedFile("a.json", b"[]")], "name": "x"},
    )
    assert "lost its file paths" in page.content.decode()
    assert not Job.objects.filter(kind="score_runs").exists()


# --------------------------------------------------------------------------- V_true by a person


def wrong_crop_run() -> dict[str, Any]:
    """Task 0001 answered wrongly after a crop of the wrong corner: V_tool passes, the
    geometric proxy says the artifact does not show the sign."""
    events = [
        {
            "index": 0,
            "tool_name": "crop",
            "raw_tool_name": "crop",
            "arguments": {"image_index": 0, "bbox_2d": [0, 0, 200, 200]},
            "output": {"ok": "true", "op": "crop", "new_image_index": 1},
        },
        {
            "index": 1,
            "tool_name": "crop",
            "raw_tool_name": "crop",
            "arguments": {"image_index": 0, "bbox_2d": [0, 800, 200, 1000]},
            "output": {"ok": "true", "op": "crop", "new_image_index": 2},
        },
    ]
    return run_files("0001", events, "Maple Ave")


@pytest.fixture
def failed_run(
    mme_project: Project, reviewer: Client, django_capture_on_commit_callbacks: Any
) -> AgentRun:
    upload(
        reviewer,
        mme_project,
        django_capture_on_commit_callbacks,
        [zip_upload("wrong.zip", zip_files(wrong_crop_run()))],
    )
    assert last_job().status == JobStatus.SUCCEEDED, last_job().error
    return AgentRun.objects.get()


@needs_samples
def test_a_person_answers_the_visual_check_and_the_figures_follow(
    failed_run: AgentRun, reviewer: Client, people: dict[str, Any], client_for: Any
) -> None:
    score = failed_run.score
    assert (score["acc"], score["V_tool"], score["V_true"], score["V"]) == (False, 1.0, 0.0, 0.0)
    page = reviewer.get(f"/runs/agent-runs/{failed_run.pk}/").content.decode()
    assert "What street name is written on the blue sign?" in page
    assert "Not answered by a person yet." in page
    assert "region 769, 403, 850, 452 (0–1000)" in page  # the reference region is drawn

    response = reviewer.post(
        f"/runs/agent-runs/{failed_run.pk}/visual/",
        {"checkpoint": "C1", "passed": "yes", "seen": 0},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="run-checks",
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert 'data-figure="V_true">1.00<' in html and 'data-figure="V">1.00<' in html
    failed_run.refresh_from_db()
    assert failed_run.score["V_true"] == 1.0 and failed_run.score["visual_by_person"] == 1
    first = VisualVerdict.objects.get()

    # Someone else, who saw the page before that answer, is told and nothing is written.
    other = client_for(people["reviewer2"])
    stale = other.post(
        f"/runs/agent-runs/{failed_run.pk}/visual/",
        {"checkpoint": "C1", "passed": "no", "seen": 0},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="run-checks",
    )
    assert stale.status_code == 409
    assert "mme-reviewer answered C1 with &#x27;yes&#x27;" in stale.content.decode()
    assert VisualVerdict.objects.count() == 1
    # Having seen it, they may change it; the newest answer counts, both are kept.
    other.post(
        f"/runs/agent-runs/{failed_run.pk}/visual/",
        {"checkpoint": "C1", "passed": "no", "seen": first.pk},
    )
    failed_run.refresh_from_db()
    assert failed_run.score["V_true"] == 0.0 and VisualVerdict.objects.count() == 2
    results = reviewer.get(f"/runs/{failed_run.run_set_id}/").content.decode()
    assert 'data-figure="person">1 of 1<' in results

    # A checkpoint without a visual check cannot be answered.
    bad = reviewer.post(
        f"/runs/agent-runs/{failed_run.pk}/visual/",
        {"checkpoint": "C2", "passed": "yes", "seen": 0},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="run-checks",
    )
    assert bad.status_code == 400 and "has no visual check" in bad.content.decode()


# --------------------------------------------------------------------------- failure modes


@needs_samples
def test_failure_label_with_suggestion_rule_and_distribution(
    failed_run: AgentRun, reviewer: Client, people: dict[str, Any], client_for: Any
) -> None:
    page = reviewer.get(f"/runs/agent-runs/{failed_run.pk}/").content.decode()
    # The seven modes with descriptions, the scores' suggestion pre-selected, and the rule.
    assert page.count('name="mode"') == 7
    assert 'value="unfaithful_visual_tool_use" checked' in page
    assert "earliest or most consequential bottleneck" in page
    assert "labeled as Unfaithful visual tool use rather than Bad search query" in page
    assert "wrong crop region" in page  # a description

    saved = reviewer.post(
        f"/runs/agent-runs/{failed_run.pk}/label/",
        {"mode": "postvisual_perception_deficit", "note": "sign visible but misread"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="run-label",
    )
    assert saved.status_code == 200 and "Label saved." in saved.content.decode()
    client_for(people["admin"]).post(
        f"/runs/agent-runs/{failed_run.pk}/label/", {"mode": "unfaithful_visual_tool_use"}
    )
    # A reviewer's new label replaces their own old one in the counts; all are kept.
    reviewer.post(
        f"/runs/agent-runs/{failed_run.pk}/label/", {"mode": "unfaithful_visual_tool_use"}
    )
    assert FailureLabel.objects.count() == 3
    page = reviewer.get(f"/runs/agent-runs/{failed_run.pk}/").content.decode()
    assert "mme-admin: Unfaithful visual tool use" in page
    assert "mme-reviewer: Post-visual perception deficit — sign visible but misread" in page
    assert "Your label: Unfaithful visual tool use" in page
    html = reviewer.get(f"/runs/{failed_run.run_set_id}/").content.decode()
    dist = html.split('id="failure-labels"')[1].split("</section>")[0]
    assert "1 of 1 failed run labelled" in dist
    row = dist.split('data-mode="unfaithful_visual_tool_use"')[1].split("</div>")[0]
    assert '<span class="bar-n num">2</span>' in row
    row = dist.split('data-mode="postvisual_perception_deficit"')[1].split("</div>")[0]
    assert '<span class="bar-n num">0</span>' in row

    bad = reviewer.post(
        f"/runs/agent-runs/{failed_run.pk}/label/",
        {"mode": "sleepy"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="run-label",
    )
    assert bad.status_code == 200 and "Select a valid choice" in bad.content.decode()
    assert FailureLabel.objects.count() == 3


@needs_samples
def test_a_correct_run_is_not_labelled(
    mme_project: Project, reviewer: Client, django_capture_on_commit_callbacks: Any
) -> None:
    upload(
        reviewer,
        mme_project,
        django_capture_on_commit_callbacks,
        [zip_upload("ok.zip", zip_folder(MME / "runs" / "0001", "0001/"))],
    )
    run = AgentRun.objects.get()
    assert run.acc
    assert 'id="run-label"' not in reviewer.get(f"/runs/agent-runs/{run.pk}/").content.decode()
    response = reviewer.post(f"/runs/agent-runs/{run.pk}/label/", {"mode": "overthinking_collapse"})
    assert "only failed runs are labelled" in response.content.decode()
    assert not FailureLabel.objects.exists()


# --------------------------------------------------------------------------- queries


@needs_samples
@pytest.mark.parametrize("copies", [1, 6])
def test_results_and_run_pages_take_a_bounded_number_of_queries(
    copies: int,
    mme_project: Project,
    reviewer: Client,
    people: dict[str, Any],
    django_capture_on_commit_callbacks: Any,
    django_assert_max_num_queries: Any,
) -> None:
    files: dict[str, Any] = {}
    for n in range(copies):
        files.update(
            {
                f"model-{n}/{p.relative_to(MME / 'runs').as_posix()}": p.read_bytes()
                for p in (MME / "runs").rglob("*")
                if p.is_file()
            }
        )
        files.update({f"model-{n}-wrong/{k}": v for k, v in wrong_crop_run().items()})
    upload(
        reviewer,
        mme_project,
        django_capture_on_commit_callbacks,
        [zip_upload("m.zip", zip_files(files))],
    )
    job = last_job()
    assert job.status == JobStatus.SUCCEEDED, job.error
    run_set = RunSet.objects.get()
    assert run_set.runs.count() == 3 * copies
    wrong = run_set.runs.filter(acc=False).first()
    assert wrong is not None
    FailureLabel.objects.create(run=wrong, reviewer=people["reviewer"], mode="tool_misexecution")
    # 7 (two pages): the answer-hiding rule first asks, in one small query, whether it can
    # hide anything from the user
    with django_assert_max_num_queries(7):
        assert reviewer.get(f"/runs/{run_set.pk}/").status_code == 200
    with django_assert_max_num_queries(10):
        assert reviewer.get(f"/runs/agent-runs/{wrong.pk}/").status_code == 200
    with django_assert_max_num_queries(7):
        assert reviewer.get(f"/projects/{mme_project.pk}/runs/").status_code == 200


@needs_samples
def test_another_projects_runs_answer_404(
    failed_run: AgentRun, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    outsider = clients["outsider"]
    for path in (
        f"/runs/{failed_run.run_set_id}/",
        f"/runs/agent-runs/{failed_run.pk}/",
        f"/projects/{failed_run.run_set.project_id}/runs/",
    ):
        assert outsider.get(path).status_code == 404
    assert (
        outsider.post(f"/runs/agent-runs/{failed_run.pk}/label/", {"mode": "x"}).status_code == 404
    )
    assert Item.objects.filter(project=failed_run.run_set.project).count() == 6
