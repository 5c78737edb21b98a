"""Cost so far: a price per million input and output tokens on the run (the evaluation form,
else the project's model settings when the run calls that model), the cost shown on the run
page, the job card and the command line; "unknown" when no price is set; bad prices named."""

from __future__ import annotations

import re
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from benchmark.exceptions import ValidationFailed
from benchmark.models import Job, Project
from benchmark.projects.services import project_model_set
from review.evaluation import services
from review.evaluation.models import EvaluationRun
from tests.llm_server import MODEL, FakeModelServer

pytestmark = pytest.mark.django_db

#: The scripted model's usage per call (tests/llm_server.py), and the calls of the three
#: items (a lookup and an answer each).
PROMPT, COMPLETION, CALLS = 17, 7, 6


def _expected(price_in: float, price_out: float) -> float:
    return CALLS * (PROMPT * price_in + COMPLETION * price_out) / 1_000_000


def _start(
    client: Client, project: Project, server: FakeModelServer, capture: Any, **extra: str
) -> Any:
    url = reverse("review:evaluation", args=[project.pk])
    with capture(execute=True):
        return client.post(
            url,
            {"base_url": server.url, "model": MODEL, "items": "verified", "max_rounds": "5",
             "max_tool_calls": "5", "workers": "2", **extra},
        )  # fmt: skip


def test_the_prices_of_the_form_give_the_cost_on_the_run_page_and_job_card(
    eval_project: Project, eval_server: FakeModelServer, clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    response = _start(
        clients["reviewer"], eval_project, eval_server, django_capture_on_commit_callbacks,
        price_in="1000", price_out="2000",
    )  # fmt: skip
    assert response.status_code == 302
    run = EvaluationRun.objects.get(project=eval_project)
    assert run.settings["price"] == {"input": 1000.0, "output": 2000.0}
    cost = _expected(1000, 2000)
    assert cost == pytest.approx(0.186)
    page = clients["reviewer"].get(response.url).content.decode()
    assert f"{CALLS * (PROMPT + COMPLETION)} tokens · " in page
    assert re.search(r"<span data-cost [^>]*>cost 0\.1860</span>", page)
    assert "price per million tokens: 1000.0 input, 2000.0 output" in page
    job = Job.objects.get(pk=run.job_ids[0])
    assert job.message.endswith("· cost 0.1860")  # what the card shows while it runs
    assert job.result["cost"] == pytest.approx(cost)
    card = clients["reviewer"].get(reverse("benchmark:job_detail", args=[job.pk]))
    assert "cost 0.1860" in card.content.decode()


def test_without_a_price_the_cost_is_unknown(
    eval_project: Project, eval_server: FakeModelServer, clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    response = _start(
        clients["reviewer"], eval_project, eval_server, django_capture_on_commit_callbacks
    )
    run = EvaluationRun.objects.get(project=eval_project)
    assert "price" not in run.settings and run.price is None
    page = clients["reviewer"].get(response.url).content.decode()
    assert re.search(r"<span data-cost [^>]*>cost unknown</span>", page)
    assert "none set (cost unknown)" in page
    job = Job.objects.get(pk=run.job_ids[0])
    assert job.message.endswith("· cost unknown") and job.result["cost"] is None
    card = clients["reviewer"].get(reverse("benchmark:job_detail", args=[job.pk]))
    assert "cost unknown" in card.content.decode()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"price_in": "3"}, "Give both prices per million tokens (input and output), or neither."),
        ({"price_out": "3"}, "Give both prices per million tokens (input and output), or neither."),
        ({"price_in": "-1", "price_out": "3"}, "greater than or equal to 0"),
        ({"price_in": "cheap", "price_out": "3"}, "Enter a number."),
    ],
)
def test_a_bad_price_on_the_form_is_named_and_starts_nothing(
    eval_project: Project, eval_server: FakeModelServer, clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any, extra: dict[str, str], message: str,
) -> None:  # fmt: skip
    response = _start(
        clients["reviewer"], eval_project, eval_server, django_capture_on_commit_callbacks,
        **extra,
    )  # fmt: skip
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not EvaluationRun.objects.filter(project=eval_project).exists()


def test_the_project_model_settings_price_applies_to_runs_of_that_model(
    eval_project: Project, eval_server: FakeModelServer, users: dict[str, Any]
) -> None:
    model = dict(eval_project.settings["model"])
    project_model_set(
        project=eval_project, user=users["admin"],
        values={**model, "price_per_m_input": "5", "price_per_m_output": "15"},
    )  # fmt: skip
    eval_project.refresh_from_db()
    assert eval_project.settings["model"]["price_per_m_input"] == 5.0
    # The project's model (by default, or named as it is configured): its price.
    run, _ = services.evaluation_run_create(project=eval_project, user=None)
    assert run.price == (5.0, 15.0)
    run, _ = services.evaluation_run_create(
        project=eval_project, user=None, base_url=eval_server.url + "/", model=MODEL
    )
    assert run.price == (5.0, 15.0)
    # The form's prices win; another model or endpoint has none.
    run, _ = services.evaluation_run_create(
        project=eval_project, user=None, price_in=1, price_out=2
    )
    assert run.price == (1.0, 2.0)
    run, _ = services.evaluation_run_create(project=eval_project, user=None, model="other")
    assert run.price is None
    run, _ = services.evaluation_run_create(
        project=eval_project, user=None, base_url="http://127.0.0.1:9/v1", model=MODEL
    )
    assert run.price is None


def test_the_command_line_says_the_cost(
    eval_project: Project, eval_server: FakeModelServer
) -> None:
    args = ["--project", eval_project.name, "--model", MODEL, "--base-url", eval_server.url]
    err = StringIO()
    call_command("evaluate", *args, stdout=StringIO(), stderr=err)
    assert (
        f"{CALLS * PROMPT} input and {CALLS * COMPLETION} output tokens · cost unknown (no price "
        "per million tokens in the project's model settings)" in err.getvalue()
    )
    settings = dict(eval_project.settings)
    settings["model"] = {**settings["model"], "price_per_m_input": 1000,
                         "price_per_m_output": 2000}  # fmt: skip
    eval_project.settings = settings
    eval_project.save()
    err = StringIO()
    call_command("evaluate", *args, stdout=StringIO(), stderr=err)
    # The second run is answered from the record: the tokens are counted all the same.
    assert "· cost 0.1860" in err.getvalue()


@pytest.mark.parametrize(
    ("price_in", "price_out", "message"),
    [
        (1, None, "price: give both the price per million input tokens and"),
        (-1, 2, "price per million input tokens: must be between 0 and 100000"),
        (1, float("nan"), "price per million output tokens: must be between 0 and 100000"),
        (1, "x", "price per million output tokens: 'x' is not a number"),
    ],
)
def test_the_service_names_a_bad_price(
    eval_project: Project, price_in: Any, price_out: Any, message: str
) -> None:
    with pytest.raises(ValidationFailed, match=re.escape(message)):
        services.evaluation_run_create(
            project=eval_project, user=None, price_in=price_in, price_out=price_out
        )
