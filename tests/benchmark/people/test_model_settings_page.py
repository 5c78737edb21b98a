"""The project's model on its settings page: the service that checks and stores it, the page
(admins and staff only), and what the project page says about it."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from benchmark.exceptions import Forbidden, ValidationFailed
from benchmark.llm.services import model_resolve
from benchmark.models import AuditAction, AuditEvent
from benchmark.projects.services import project_model_set

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:9/v1"


def events() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=AuditAction.MODEL_SETTINGS_CHANGED))


def test_valid_settings_are_stored_keeping_other_keys_and_recorded(
    project: Any, users: dict[str, Any], settings: Any
) -> None:
    settings.MODEL_API_KEY_ENV_ALLOWLIST = ["BENCHWRIGHT_MODEL_API_KEY", "TEAM_KEY"]
    project.settings = {
        "judge": {"x": 1},
        "model": {"params": {"temperature": 0}, "api_key": "sk-secret-1"},
    }
    project.save()
    values = {
        "base_url": f" {URL} ",
        "model": "qwen",
        "api_key_env": "TEAM_KEY",
        "cache": "off",
        "concurrency": 2,
        "rpm": 30,
        "timeout": 15.0,
        "price_per_1k_tokens": 0.5,
    }
    project_model_set(project=project, user=users["admin"], values=values)
    project.refresh_from_db()
    assert project.settings == {
        "judge": {"x": 1},
        "model": {
            "params": {"temperature": 0},
            "base_url": URL,
            "model": "qwen",
            "api_key_env": "TEAM_KEY",
            "cache": "off",
            "concurrency": 2,
            "rpm": 30,
            "timeout": 15.0,
            "price_per_1k_tokens": 0.5,
        },
    }  # the stored key went with the old endpoint
    resolved = model_resolve(project=project)
    assert resolved is not None and resolved.config.model == "qwen"
    assert resolved.config.concurrency == 2 and resolved.cache_mode == "off"
    (event,) = events()
    assert event.actor == users["admin"]
    assert event.details == {
        "changed": sorted([*values, "api_key"]),
    }
    assert "sk-secret-1" not in str(event.details) and "TEAM_KEY" not in str(event.details)
    # Saving the same again records nothing; emptying everything is the server's default.
    project_model_set(project=project, user=users["admin"], values=values)
    assert len(events()) == 1
    project_model_set(project=project, user=users["admin"], values={})
    project.refresh_from_db()
    assert project.settings == {"judge": {"x": 1}, "model": {"params": {"temperature": 0}}}
    assert len(events()) == 2


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"base_url": "ftp://host/v1"}, "Base URL"),
        ({"base_url": "localhost:11434"}, "Base URL"),
        ({"api_key_env": "SECRET_KEY"}, "API key variable"),
        ({"cache": "sometimes"}, "Cache mode"),
        ({"concurrency": 0}, "Concurrency"),
        ({"concurrency": 1000}, "Concurrency"),
        ({"rpm": -1}, "Requests per minute"),
        ({"timeout": 0}, "Timeout"),
        ({"price_per_1k_tokens": -0.1}, "Price per 1k tokens"),
        ({"model": "m" * 201}, "Model name"),
    ],
)
def test_bad_values_name_the_field_and_change_nothing(
    project: Any, users: dict[str, Any], values: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationFailed, match=message):
        project_model_set(project=project, user=users["admin"], values={"model": "m", **values})
    project.refresh_from_db()
    assert "model" not in (project.settings or {}) and events() == []


def test_the_default_key_goes_only_to_the_default_endpoint(
    project: Any, users: dict[str, Any], settings: Any
) -> None:
    settings.BENCHWRIGHT_MODEL_BASE_URL = "http://127.0.0.1:8/v1"
    values = {"base_url": URL, "model": "m", "api_key_env": "BENCHWRIGHT_MODEL_API_KEY"}
    with pytest.raises(ValidationFailed, match="API key variable"):
        project_model_set(project=project, user=users["admin"], values=values)


@pytest.mark.parametrize("role", ["reviewer", "annotator"])
def test_only_admins_set_the_model(project: Any, users: dict[str, Any], role: str) -> None:
    with pytest.raises(Forbidden):
        project_model_set(project=project, user=users[role], values={"model": "m"})


def post(client: Any, project: Any, **fields: Any) -> Any:
    data = {"section": "model", "model-cache": "use"}
    data.update({f"model-{k}": v for k, v in fields.items()})
    return client.post(reverse("benchmark:project_edit", args=[project.pk]), data)


def test_admins_save_the_model_and_the_project_page_shows_it(
    client_for: Any, project: Any, users: dict[str, Any]
) -> None:
    project.guidelines = "Keep me."
    project.save()
    client = client_for(users["admin"])
    detail = reverse("benchmark:project_detail", args=[project.pk])
    assert "No model configured" in client.get(detail).content.decode()
    page = client.get(reverse("benchmark:project_edit", args=[project.pk])).content.decode()
    assert 'name="model-base_url"' in page and "model-api_key_env" in page
    response = post(client, project, base_url=URL, model="qwen", concurrency="3")
    assert response.status_code == 302 and response["Location"] == detail
    project.refresh_from_db()
    assert project.settings["model"] == {"base_url": URL, "model": "qwen", "concurrency": 3}
    assert project.guidelines == "Keep me."
    html = client.get(detail).content.decode()
    assert "<strong>qwen</strong> at 127.0.0.1:9" in html
    edit = client.get(reverse("benchmark:project_edit", args=[project.pk])).content.decode()
    assert f'value="{URL}"' in edit
    # The recorded change reads in words on the members page, not as a Python list.
    members = client.get(reverse("benchmark:members", args=[project.pk])).content.decode()
    assert "Changed: Base URL, Concurrency, Model name" in members
    assert "[&#x27;base_url&#x27;" not in members


def test_bad_input_re_renders_the_form_naming_the_field(
    client_for: Any, project: Any, users: dict[str, Any]
) -> None:
    client = client_for(users["admin"])
    response = post(client, project, base_url="ftp://x/v1", model="qwen")
    assert response.status_code == 200
    assert "Base URL: &#x27;ftp://x/v1&#x27; is not an http://" in response.content.decode()
    response = post(client, project, model="qwen", rpm="many")
    assert response.status_code == 200 and "Requests per minute:" in response.content.decode()
    response = post(client, project, model="qwen", api_key_env="HOME")
    assert response.status_code == 200 and "API key variable:" in response.content.decode()
    project.refresh_from_db()
    assert "model" not in (project.settings or {})


def test_members_who_are_not_admins_and_outsiders_are_refused(
    client_for: Any, project: Any, users: dict[str, Any]
) -> None:
    for role in ("reviewer", "annotator"):
        assert post(client_for(users[role]), project, model="m").status_code == 403
        html = (
            client_for(users[role])
            .get(reverse("benchmark:project_detail", args=[project.pk]))
            .content.decode()
        )
        assert "model settings" not in html
    assert post(client_for(users["outsider"]), project, model="m").status_code == 404
    project.refresh_from_db()
    assert "model" not in (project.settings or {}) and events() == []
