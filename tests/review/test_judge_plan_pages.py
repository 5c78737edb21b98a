"""The judge pages for m&m's plan projects (issue 10): "Judge plans" offers the plan validity
judge only and asks which plans (ground truth, or the plans models predicted), starts a run as a
job against the scripted server, and the run's page shows the share judged valid overall and
per source with every plan's verdict (the raw output of a judgment that failed); the job's
card shows the same figures; plan runs compare with plan runs only; the project page links
the judge page and the judge settings."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from benchmark.models import Item, JobStatus, Origin, Project
from review.judges import services as judge_services
from review.judges.models import JudgeRun, PlanJudgeCall
from tests.factories import PlanFactory
from tests.review import test_judge_sources as plans
from tests.review.test_judge_pages import figure, text

pytestmark = pytest.mark.django_db

# The m&m's project (the users/clients fixtures make one member per role of it), its four
# items with five ground-truth plans, and the plan judge's scripted server: VALID for an
# image captioning step, never parseable for "garbage tool", INVALID otherwise.
project = plans.project
items = plans.items
server = plans.server

HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "judge-start"}


def start(client: Client, project: Project, capture: Any, **data: Any) -> Any:
    with capture(execute=True):
        return client.post(reverse("review:judge_runs", args=[project.pk]), data, **HX)


@pytest.fixture
def predicted(items: list[Item]) -> list[Item]:
    """Plans three models predicted for i1 and i2: m1 both valid, m2 one, m3 none."""
    steps = {
        "m1": ("image captioning", "image captioning"),
        "m2": ("image captioning", "object detection"),
        "m3": ("image classification", "object detection"),
    }
    for model, tools in steps.items():
        for item, tool in zip(items[:2], tools, strict=True):
            PlanFactory(
                item=item,
                key=f"model:{model}",
                origin=Origin.MODEL,
                model_name=model,
                steps=[plans.step(tool)],
            )
    return items


def test_the_plan_page_offers_the_plan_judge_and_which_plans(
    project: Project, predicted: list[Item], clients: dict[str, Client]
) -> None:
    response = clients["reviewer"].get(reverse("review:judge_runs", args=[project.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "<h1>Judge plans</h1>" in page and 'id="judge-plans-intro"' in page
    assert page.count('name="judge"') == 1 and 'value="mms-plan"' in page
    assert 'value="llmi-rubric"' not in page and 'value="atp-mam"' not in page
    assert 'name="answers"' not in page  # no upload
    assert "Which plans" in page and "5 ground-truth plans" in page
    assert "m1 (2 plans)" in page and "m3 (2 plans)" in page
    assert (
        clients["annotator"].get(reverse("review:judge_runs", args=[project.pk])).status_code == 403
    )


def test_the_answer_page_does_not_offer_the_plan_judge(
    users: dict[str, Any], clients: dict[str, Client]
) -> None:
    other = plans.ProjectFactory(name="LLM-I", data_format="llmi")
    other.memberships.create(user=users["reviewer"], role="reviewer")
    page = clients["reviewer"].get(reverse("review:judge_runs", args=[other.pk])).content.decode()
    assert "<h1>Judge answers</h1>" in page
    assert 'value="mms-plan"' not in page and 'name="answers"' in page


def test_start_a_plan_run_from_the_page_and_read_its_figures(
    project: Project,
    items: list[Item],
    server: plans.PlanServer,
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
    django_assert_max_num_queries: Any,
) -> None:
    response = start(
        clients["reviewer"],
        project,
        django_capture_on_commit_callbacks,
        judge="mms-plan",
        workers=1,
    )
    assert response.status_code == 200, response.content.decode()[:2000]
    run = JudgeRun.objects.get(project=project)
    assert run.judge == "mms-plan" and run.selection == {"models": []}
    run.job.refresh_from_db()
    assert run.job.status == JobStatus.SUCCEEDED, run.job.error
    assert server.count == 6  # five plans, i4's asked twice

    # The job's card: the share judged valid, per source.
    card = clients["reviewer"].get(
        reverse("benchmark:job_detail", args=[run.job_id]), HTTP_HX_REQUEST="true"
    )
    body = card.content.decode()
    assert "data-judge-done" in body
    assert "50.00% of 4 plans judged valid, 1 plan excluded" in text(body)
    assert figure(body, "ground truth", "valid", "judge-job-figures") == "50.00%"
    assert figure(body, "ground truth", "n_valid", "judge-job-figures") == "2"
    assert "every plan's verdict" in body

    # The run's page: figures, definitions, every plan's verdict, the failed one's raw output.
    with django_assert_max_num_queries(20):
        page = clients["reviewer"].get(reverse("review:judge_run", args=[run.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Plans judged valid, per source" in html
    assert figure(html, "ground truth", "valid") == "50.00%"
    assert figure(html, "ground truth", "n") == "4"
    assert figure(html, "ground truth", "excluded") == "1"
    assert "Overall: 50.00% of 4 plans judged valid (2 valid)" in text(html)
    assert "1 plan excluded from the figures" in text(html)
    assert "The share of plans judged VALID" in html  # the definitions
    assert 'id="judge-compare-none"' in html  # no other plan run yet
    verdicts = re.findall(
        r'data-plan="(\w+)" data-model="ground truth">.*?data-verdict="(\w+)"', html, re.S
    )
    assert verdicts == [
        ("gt", "valid"),
        ("gt", "invalid"),
        ("alt", "valid"),
        ("gt", "invalid"),
        ("gt", "failed"),
    ]
    assert plans.VALID_WHY in html and plans.INVALID_WHY in html
    failed = re.search(r'data-item="i4".*?</article>', html, re.S)
    assert failed and failed.group(0).count(">Probably fine, I think.</pre>") == 2  # both tries
    assert 'data-failed-call="plan"' in failed.group(0)
    assert "garbage tool" in failed.group(0)  # the plan's steps


def test_a_run_over_predicted_plans_reports_per_model_and_filters(
    project: Project, predicted: list[Item], clients: dict[str, Client]
) -> None:
    run, job = judge_services.judge_run_create(
        project=project, user=None, judge="mms-plan", models=["m1", "m2", "m3"]
    )
    assert judge_services.judge_run_execute(job=job).status == JobStatus.SUCCEEDED
    html = clients["reviewer"].get(reverse("review:judge_run", args=[run.pk])).content.decode()
    assert [figure(html, m, "valid") for m in ("m1", "m2", "m3")] == ["100.00%", "50.00%", "0.00%"]
    assert "plans: predicted by m1, m2, m3" in text(html)
    assert "ground truth" not in re.search(r'id="judge-figures".*?</table>', html, re.S).group(0)
    fragment = (
        clients["reviewer"]
        .get(
            reverse("review:judge_run", args=[run.pk]) + "?model=m2",
            HTTP_HX_REQUEST="true",
            HTTP_HX_TARGET="judge-answers",
        )
        .content.decode()
    )
    assert fragment.count('class="card answer-report plan-report"') == 2
    assert 'data-model="m1"' not in fragment and 'data-model="m2"' in fragment


def test_bad_requests_on_the_plan_page_answer_400(
    project: Project, predicted: list[Item], clients: dict[str, Client]
) -> None:
    url = reverse("review:judge_runs", args=[project.pk])
    response = clients["reviewer"].post(url, {"judge": "llmi-rubric", "workers": 1}, **HX)
    assert response.status_code == 400
    assert "judged by m&amp;m" in response.content.decode()
    response = clients["reviewer"].post(
        url, {"judge": "mms-plan", "models": ["nobody"], "workers": 1}, **HX
    )
    assert response.status_code == 400
    assert "no plans predicted by nobody" in response.content.decode()
    assert not JudgeRun.objects.filter(project=project).exists()


def test_plan_runs_compare_with_plan_runs_only(
    project: Project, predicted: list[Item], clients: dict[str, Client]
) -> None:
    runs = []
    for model in ("judge-a", "judge-b"):
        run, job = judge_services.judge_run_create(
            project=project, user=None, judge="mms-plan", model=model, models=["m1", "m2", "m3"]
        )
        assert judge_services.judge_run_execute(job=job).status == JobStatus.SUCCEEDED
        runs.append(run)
    a, b = runs
    run_page = clients["reviewer"].get(reverse("review:judge_run", args=[a.pk])).content.decode()
    assert f'<option value="run:{b.pk}">' in run_page and 'value="f1"' not in run_page
    url = reverse("review:judge_compare", args=[project.pk])
    form = clients["reviewer"].get(url).content.decode()
    assert f'value="run:{a.pk}"' in form and "Tool-set F1 of the same answers" not in form
    html = clients["reviewer"].get(f"{url}?a=run:{a.pk}&b=run:{b.pk}").content.decode()
    rho = re.search(r'data-pair="valid-valid">.*?data-figure="rho">([^<]+)<', html, re.S)
    assert rho and rho.group(1).strip() == "1.000"
    bad = clients["reviewer"].get(f"{url}?a=run:{a.pk}&b=f1")
    assert bad.status_code == 400
    assert "judged plans, not answers" in bad.content.decode()
    assert PlanJudgeCall.objects.filter(run=b).count() == 6


def test_the_project_page_links_judge_plans_and_settings(
    project: Project, clients: dict[str, Client]
) -> None:
    page = clients["reviewer"].get(reverse("benchmark:project_detail", args=[project.pk]))
    html = page.content.decode()
    assert f'href="{reverse("review:judge_runs", args=[project.pk])}"' in html
    assert ">Judge plans</a>" in html
    assert f'href="{reverse("review:judge_settings", args=[project.pk])}"' in html
    annotator = clients["annotator"].get(reverse("benchmark:project_detail", args=[project.pk]))
    assert ">Judge plans</a>" not in annotator.content.decode()
    settings = clients["reviewer"].get(reverse("review:judge_settings", args=[project.pk]))
    assert settings.status_code == 200 and "mms-plan" in settings.content.decode()
