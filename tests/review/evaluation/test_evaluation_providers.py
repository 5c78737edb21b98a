"""The retrieval provider a project configures for its evaluation runs: none without the
setting, the key only from an allow-listed variable and only to its own URL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from benchmark.exceptions import ValidationFailed
from review.evaluation import providers, services
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@dataclass
class Stand:
    base_url: str
    api_key: str = ""
    concurrency: int = 4
    rpm: int = 0
    max_retries: int = 3


@pytest.fixture(autouse=True)
def _stand_in(monkeypatch: Any) -> None:
    monkeypatch.setattr(providers, "RETRIEVAL_CLASS", f"{__name__}.Stand")


def _project(retrieval: Any) -> Any:
    return ProjectFactory(settings={"evaluation": {"retrieval": retrieval}})


def test_no_setting_no_provider() -> None:
    assert providers.retrieval_provider(ProjectFactory()) is None


def test_an_allow_listed_key_goes_to_its_own_url_only(settings: Any, monkeypatch: Any) -> None:
    settings.MODEL_API_KEY_ENV_ALLOWLIST = ["SEARCH_KEY=https://search.example.org/v1"]
    monkeypatch.setenv("SEARCH_KEY", "sk-search")
    made = providers.retrieval_provider(
        _project({"base_url": "https://search.example.org/v1", "api_key_env": "SEARCH_KEY"})
    )
    assert made == Stand(base_url="https://search.example.org/v1", api_key="sk-search")
    with pytest.raises(ValidationFailed, match="the key of another endpoint"):
        providers.retrieval_provider(
            _project({"base_url": "https://evil.example.com/v1", "api_key_env": "SEARCH_KEY"})
        )
    with pytest.raises(ValidationFailed, match="HOME, which is not an allowed key variable"):
        providers.retrieval_provider(
            _project({"base_url": "https://search.example.org/v1", "api_key_env": "HOME"})
        )


def test_a_wrong_setting_refuses_the_run_naming_it(settings: Any, monkeypatch: Any) -> None:
    from tests import evaluation_protocol

    evaluation_protocol.install(monkeypatch, "atp")
    settings.EVALUATION_TOOL_PROVIDERS = ["review.evaluation.providers.retrieval_provider"]
    with pytest.raises(ValidationFailed, match='"evaluation.retrieval" needs an http'):
        services.evaluation_run_create(project=_project({"base_url": "ftp://x"}), user=None)


def test_the_providers_limits_come_from_the_setting_and_wrong_ones_are_named() -> None:
    made = providers.retrieval_provider(
        _project({"base_url": "https://search.example.org/v1", "concurrency": 2, "rpm": 30,
                  "max_retries": 5})
    )  # fmt: skip
    assert made == Stand(
        base_url="https://search.example.org/v1", concurrency=2, rpm=30, max_retries=5
    )
    with pytest.raises(ValidationFailed, match="concurrency must be a whole number from 1 to 64"):
        providers.retrieval_provider(
            _project({"base_url": "https://search.example.org/v1", "concurrency": 0})
        )
    with pytest.raises(ValidationFailed, match="rpm must be a whole number from 0 to 100000"):
        providers.retrieval_provider(
            _project({"base_url": "https://search.example.org/v1", "rpm": "fast"})
        )


def test_the_real_provider_takes_the_limits(monkeypatch: Any) -> None:
    monkeypatch.setattr(
        providers, "RETRIEVAL_CLASS", "benchmark.evaluation.mme_retrieval.HttpRetrievalProvider"
    )
    made = providers.retrieval_provider(
        _project({"base_url": "https://search.example.org/v1", "concurrency": 2, "rpm": 30})
    )
    assert (made.concurrency, made.rpm, made.max_retries) == (2, 30, 3)
