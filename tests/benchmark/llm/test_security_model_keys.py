"""Issue 9, defect 10: a project's model settings may name only the environment variables the
operator allow-lists (MODEL_API_KEY_ENV_ALLOWLIST) as its API key, a key goes only to the
endpoint it is meant for, and the recorded-answer cache is per endpoint and per project.
Against the fake OpenAI-compatible server (tests/llm_server.py)."""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from benchmark.exceptions import ValidationFailed
from benchmark.llm import services as llm
from benchmark.models import Item, Job, JobStatus, Project
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory, UserFactory
from tests.llm_server import FakeModelServer, point_at

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[3]
DEAD_URL = "http://127.0.0.1:9/v1"  # the discard port: nothing answers there


def start(capture: Any, *, project: Project, user: Any, **kw: Any) -> Job:
    kw.setdefault("prompt", "What does the image show?")
    with capture(execute=True):
        job = llm.model_call_start(project=project, user=user, purpose="ask", **kw)
    job.refresh_from_db()
    return job


# --------------------------------------------------------------------------- the allowlist


def test_an_unlisted_variable_is_refused_and_nothing_is_sent(
    project: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.MODEL_API_KEY_ENV_ALLOWLIST = []
    point_at(project, model_server, api_key_env="HOME")
    with pytest.raises(ValidationFailed) as refused:
        start(django_capture_on_commit_callbacks, project=project, user=users["admin"])
    message = refused.value.message
    assert "api_key_env" in message and "HOME" in message
    assert "MODEL_API_KEY_ENV_ALLOWLIST" in message
    assert model_server.count == 0
    assert not Job.objects.exists()


def test_a_job_queued_before_the_setting_changed_does_not_send_the_variable(
    project: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """The check runs again when the job runs, so a stale job cannot leak the variable."""
    monkeypatch.setenv("PROJECT_MODEL_KEY", "sk-project")
    settings.MODEL_API_KEY_ENV_ALLOWLIST = ["PROJECT_MODEL_KEY"]
    point_at(project, model_server, api_key_env="PROJECT_MODEL_KEY")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job = llm.model_call_start(project=project, user=users["admin"], purpose="ask", prompt="q")
    point_at(project, model_server, api_key_env="HOME")
    for callback in callbacks:
        callback()
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "api_key_env" in job.error and "HOME" in job.error
    assert model_server.count == 0


def test_the_ask_page_names_the_setting_and_starts_nothing(
    project: Project,
    clients: dict[str, Client],
    model_server: FakeModelServer,
    settings: Any,
) -> None:
    settings.MODEL_API_KEY_ENV_ALLOWLIST = []
    point_at(project, model_server, api_key_env="HOME")
    item = ItemFactory(project=project)
    url = f"/projects/{project.pk}/llm/items/{item.pk}/"
    response = clients["annotator"].post(url, {"prompt": "What is in the picture?"})
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert "api_key_env" in page and "HOME" in page and "MODEL_API_KEY_ENV_ALLOWLIST" in page
    assert model_server.count == 0
    assert not Job.objects.exists()


def _admin_form(project: Project, model: dict[str, Any]) -> Any:
    from benchmark.admin import ProjectAdminForm

    data = {
        "name": project.name,
        "kind": project.kind,
        "tag_syntax": project.tag_syntax,
        "data_format": project.data_format,
        "toolset": project.toolset_id,
        "taxonomy": "",
        "description": project.description,
        "settings": json.dumps({"model": model}),
    }
    return ProjectAdminForm(data=data, instance=project)


def test_saving_project_settings_with_an_unlisted_variable_is_a_form_error(
    project: Project, settings: Any
) -> None:
    """The admin's project form validates the model settings: the error is on "settings"."""
    settings.MODEL_API_KEY_ENV_ALLOWLIST = ["PROJECT_MODEL_KEY"]
    model = {"base_url": DEAD_URL, "model": "m", "api_key_env": "HOME"}
    form = _admin_form(project, model)
    assert not form.is_valid()
    assert list(form.errors) == ["settings"]
    assert "api_key_env" in form.errors["settings"][0] and "HOME" in form.errors["settings"][0]
    assert _admin_form(project, {**model, "api_key_env": "PROJECT_MODEL_KEY"}).is_valid()


def test_the_admin_change_form_refuses_an_unlisted_variable(
    project: Project, settings: Any
) -> None:
    settings.MODEL_API_KEY_ENV_ALLOWLIST = []
    staff = UserFactory(username="root-admin", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    settings_json = (
        f'{{"model": {{"base_url": "{DEAD_URL}", "model": "m", "api_key_env": "HOME"}}}}'
    )
    response = client.post(
        f"/admin/benchmark/project/{project.pk}/change/",
        {
            "name": project.name,
            "kind": project.kind,
            "tag_syntax": project.tag_syntax,
            "data_format": project.data_format,
            "toolset": project.toolset_id,
            "taxonomy": "",
            "description": project.description,
            "settings": settings_json,
            "memberships-TOTAL_FORMS": "0",
            "memberships-INITIAL_FORMS": "0",
            "memberships-MIN_NUM_FORMS": "0",
            "memberships-MAX_NUM_FORMS": "1000",
        },
    )
    assert response.status_code == 200  # the form again, with the error
    page = html.unescape(response.content.decode())
    assert "api_key_env" in page and "HOME" in page
    project.refresh_from_db()
    assert "model" not in project.settings


def test_an_allow_listed_variable_is_sent_to_the_project_endpoint(
    project: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    monkeypatch.setenv("PROJECT_MODEL_KEY", "sk-project")
    settings.MODEL_API_KEY_ENV_ALLOWLIST = ["OTHER_KEY", "PROJECT_MODEL_KEY"]
    point_at(project, model_server, api_key_env="PROJECT_MODEL_KEY")
    job = start(django_capture_on_commit_callbacks, project=project, user=users["admin"])
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert model_server.requests[-1].headers["authorization"] == "Bearer sk-project"


def test_a_variable_bound_to_an_endpoint_goes_to_that_endpoint_only(
    project: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """``NAME=URL`` in the allowlist: the key is for that base URL and no other."""
    monkeypatch.setenv("VENDOR_KEY", "sk-vendor")
    settings.MODEL_API_KEY_ENV_ALLOWLIST = [f"VENDOR_KEY={model_server.url}/"]
    point_at(project, model_server, api_key_env="VENDOR_KEY")
    job = start(django_capture_on_commit_callbacks, project=project, user=users["admin"])
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert model_server.requests[-1].headers["authorization"] == "Bearer sk-vendor"

    elsewhere = FakeModelServer().start()
    try:
        point_at(project, elsewhere, api_key_env="VENDOR_KEY")
        with pytest.raises(ValidationFailed) as refused:
            start(django_capture_on_commit_callbacks, project=project, user=users["admin"])
        assert "VENDOR_KEY" in refused.value.message
        assert "sk-vendor" not in refused.value.message
        assert elsewhere.count == 0
    finally:
        elsewhere.stop()


def test_the_default_key_never_goes_to_a_project_endpoint(
    project: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """BENCHWRIGHT_MODEL_API_KEY is allowed by default, for BENCHWRIGHT_MODEL_BASE_URL only:
    naming it in a project's api_key_env does not send it to the project's own URL."""
    monkeypatch.setenv("BENCHWRIGHT_MODEL_API_KEY", "sk-operator")
    settings.BENCHWRIGHT_MODEL_BASE_URL = "https://models.example.org/v1"
    settings.BENCHWRIGHT_MODEL_API_KEY = "sk-operator"
    settings.MODEL_API_KEY_ENV_ALLOWLIST = ["BENCHWRIGHT_MODEL_API_KEY"]
    point_at(project, model_server, api_key_env="BENCHWRIGHT_MODEL_API_KEY")
    with pytest.raises(ValidationFailed) as refused:
        start(django_capture_on_commit_callbacks, project=project, user=users["admin"])
    assert "BENCHWRIGHT_MODEL_API_KEY" in refused.value.message
    assert model_server.count == 0


def _allowlist_in_a_fresh_process(**extra: str) -> str:
    code = (
        "import django; django.setup(); from django.conf import settings as s;"
        "print(s.MODEL_API_KEY_ENV_ALLOWLIST)"
    )
    env = {k: v for k, v in os.environ.items() if k != "MODEL_API_KEY_ENV_ALLOWLIST"}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "benchmark.settings", **extra},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_the_allowlist_setting_reads_a_comma_separated_environment_variable() -> None:
    assert _allowlist_in_a_fresh_process() == "['BENCHWRIGHT_MODEL_API_KEY']"
    listed = _allowlist_in_a_fresh_process(MODEL_API_KEY_ENV_ALLOWLIST="OPENAI_API_KEY,VLLM_KEY")
    assert listed == "['OPENAI_API_KEY', 'VLLM_KEY']"


# --------------------------------------------------------------------------- the cache


@pytest.fixture
def item(project: Project) -> Item:
    return ItemFactory(project=project)


def test_a_dead_endpoint_does_not_answer_with_another_endpoints_recorded_answer(
    project: Project,
    item: Item,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    args = {"project": project, "user": users["admin"], "item": item}
    point_at(project, model_server)
    first = start(django_capture_on_commit_callbacks, **args)
    assert first.status == JobStatus.SUCCEEDED and first.result["cached"] is False
    # The same question, same model name, but another (dead) endpoint.
    project.settings["model"].update(base_url=DEAD_URL, max_retries=0)
    project.save(update_fields=["settings"])
    dead = start(django_capture_on_commit_callbacks, **args)
    assert dead.status == JobStatus.FAILED, dead.result
    assert "could not reach the model endpoint" in dead.error
    # Back on the first endpoint, its recorded answer still answers.
    point_at(project, model_server)
    again = start(django_capture_on_commit_callbacks, **args)
    assert again.status == JobStatus.SUCCEEDED and again.result["cached"] is True
    assert model_server.count == 1


def test_recorded_answers_are_not_shared_between_projects(
    project: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    other = ProjectFactory(name="another project on the same endpoint")
    MembershipFactory(project=other, user=users["admin"], role="admin")
    point_at(project, model_server)
    point_at(other, model_server)
    mine = start(django_capture_on_commit_callbacks, project=project, user=users["admin"])
    theirs = start(django_capture_on_commit_callbacks, project=other, user=users["admin"])
    assert mine.result["cached"] is False and theirs.result["cached"] is False
    assert model_server.count == 2
    again = start(django_capture_on_commit_callbacks, project=other, user=users["admin"])
    assert again.result["cached"] is True and model_server.count == 2


def test_request_keys_name_the_endpoint_and_the_scope() -> None:
    from benchmark.llm.client import ChatRequest

    request = ChatRequest(prompt="q")
    a = request.key("m", endpoint="http://a.example/v1", scope="project:1")
    assert a == request.key("m", endpoint="http://a.example/v1/", scope="project:1")
    assert a != request.key("m", endpoint="http://b.example/v1", scope="project:1")
    assert a != request.key("m", endpoint="http://a.example/v1", scope="project:2")
