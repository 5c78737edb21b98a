"""A project's judge settings (issue 10): its own text of each judge template, every version
kept, with the checks a save makes (renders, keeps the placeholders, stale edits answer 409);
judge runs built with the project's templates and recording their versions; the LLM-I reward
weights, recorded on each run and used by its report; and the settings page."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from benchmark.exceptions import DomainError, Forbidden, ValidationFailed
from benchmark.judge_prompts import llmi as llmi_judge
from benchmark.judge_prompts import mam
from benchmark.judge_prompts import rubric as rubric_judge
from benchmark.models import Membership, Project, Role
from benchmark.versions import StaleVersion
from review.judge_settings import services
from review.judge_settings.presenters import text_diff
from review.judge_settings.selectors import WEIGHT_PRESETS, judge_settings_get
from review.judges import services as judge_services
from review.judges.models import JudgeCall, JudgeTemplateVersion, JudgeWeights
from review.judges.run_settings import judge_templates_for, judge_weights_for
from review.judges.selectors import judge_run_report
from tests.factories import ItemFactory, ProjectFactory
from tests.llm_server import point_at
from tests.review import test_judge_runs as base

pytestmark = pytest.mark.django_db

LLM = llmi_judge.LLM_TEMPLATE
MLLM = llmi_judge.MLLM_TEMPLATE
CUSTOM_SYSTEM = "CUSTOM: judge the text and the tags.\nReply with two lines:\nText: n\nImage: n"


@pytest.fixture
def server() -> Iterator[base.ScriptedServer]:
    s = base.ScriptedServer().start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def llmi(server: base.ScriptedServer, users: dict[str, Any], project: Project) -> Project:
    """``project`` (with a user in every role) holding LLM-I items and two models' answers."""
    point_at(project, server)
    for n in (1, 2):
        ItemFactory(
            project=project,
            external_id=f"q{n}",
            query=f"Explain topic {n}",
            rubric=[{"key": "r1", "text": "is correct"}],
            constraints={"image_num": 1},
        )
    judge_services.answers_import(
        project=project,
        files=base.files(
            {
                "alpha": [
                    {"trace_id": "q1", "answer": f"ALPHA one {base.IMGEN}"},
                    {"trace_id": "q2", "answer": f"ALPHA two {base.IMGEN}"},
                ],
                "beta": [
                    {"trace_id": "q1", "answer": "BETA one"},
                    {"trace_id": "q2", "answer": "BETA two"},
                ],
            }
        ),
    )
    return project


def save(project: Project, user: Any, **kw: Any) -> JudgeTemplateVersion:
    fields: dict[str, Any] = {
        "template_id": LLM.id,
        "system": CUSTOM_SYSTEM,
        "user_text": LLM.user,
        "base_number": 0,
    }
    fields.update(kw)
    return services.judge_template_save(project=project, user=user, **fields)


# --------------------------------------------------------------------------- templates


def test_an_edit_is_a_new_version_and_the_newest_is_used(
    project: Project, users: dict[str, Any]
) -> None:
    admin = users["admin"]
    assert judge_templates_for(project=project, judge="llmi-llm") == {LLM.id: LLM}
    first = save(project, admin, note="stricter")
    assert (first.number, first.base_number, first.is_default, first.note) == (
        1,
        0,
        False,
        "stricter",
    )
    second = save(project, admin, system=CUSTOM_SYSTEM + "\nBe brief.", base_number=1)
    assert second.number == 2
    current = judge_templates_for(project=project, judge="llmi-mllm")
    assert list(current) == [LLM.id, MLLM.id]
    assert current[LLM.id].system.endswith("Be brief.") and current[MLLM.id] is MLLM
    assert current[LLM.id].version == second.version != LLM.version
    # Nothing is overwritten.
    assert [(v.number, v.system) for v in JudgeTemplateVersion.objects.order_by("number")] == [
        (1, CUSTOM_SYSTEM),
        (2, CUSTOM_SYSTEM + "\nBe brief."),
    ]
    # Another project keeps the built-in text.
    assert judge_templates_for(project=ProjectFactory(), judge="llmi-llm")[LLM.id] is LLM


def test_reset_to_default_is_a_new_version_that_follows_the_built_in(
    project: Project, users: dict[str, Any]
) -> None:
    admin = users["admin"]
    with pytest.raises(ValidationFailed, match="already uses the built-in text"):
        services.judge_template_reset(
            project=project, user=admin, template_id=LLM.id, base_number=0
        )
    save(project, admin)
    reset = services.judge_template_reset(
        project=project, user=admin, template_id=LLM.id, base_number=1
    )
    assert (reset.number, reset.is_default, reset.version) == (2, True, LLM.version)
    assert reset.note == "reset to the built-in text"
    assert judge_templates_for(project=project, judge="llmi-llm")[LLM.id] is LLM
    assert JudgeTemplateVersion.objects.count() == 2
    with pytest.raises(ValidationFailed, match="already uses the built-in text"):
        services.judge_template_reset(
            project=project, user=admin, template_id=LLM.id, base_number=2
        )


def test_browser_line_ends_are_the_built_in_ones_and_no_change_saves_nothing(
    project: Project, users: dict[str, Any]
) -> None:
    crlf = LLM.system.replace("\n", "\r\n")
    with pytest.raises(ValidationFailed, match=r"same as the current one \(the built-in text\)"):
        save(project, users["admin"], system=crlf)
    save(project, users["admin"], system=CUSTOM_SYSTEM.replace("\n", "\r\n"))
    with pytest.raises(ValidationFailed, match=r"same as the current one \(version 1\)"):
        save(project, users["admin"], base_number=1)
    assert JudgeTemplateVersion.objects.get().system == CUSTOM_SYSTEM


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"user_text": "Answer:\n{answer}"}, r"keep the placeholder\(s\) \{prompt\}"),
        ({"user_text": "Nothing to fill in"}, r"keep the placeholder\(s\) \{answer\}, \{prompt\}"),
        (
            {"user_text": LLM.user + "\n{criterion}"},
            r"unknown placeholder\(s\) \{criterion\}; this template can use only \{answer\}, "
            r"\{prompt\}",
        ),
        (
            {"system": 'Reply {"text": 1}'},
            r"system text: placeholder .* must be a plain name .*write \{\{ and \}\}",
        ),
        ({"system": "Unclosed {brace"}, r"system text: malformed template text"),
        ({"user_text": "{answer!r} {prompt}"}, r"user text: placeholder \{answer\} must be"),
        ({"system": "   "}, r"system text: must not be empty"),
        ({"user_text": ""}, r"user text: must not be empty"),
        (
            {"system": "x" * (services.MAX_TEMPLATE_CHARS + 1)},
            r"system text: is 20,001 characters long; at most 20,000",
        ),
        (
            {"template_id": "llmi.nope"},
            r"unknown judge template 'llmi.nope'; one of agentic_mme.s_judge, agentic_mme.v_judge, atp.mam",
        ),
        ({"base_number": -1}, r"base version must be a number of 0 or more"),
        ({"note": "n" * 301}, r"the note is 301 characters long; at most 300"),
    ],
)
def test_text_the_judge_cannot_use_is_refused_saying_why(
    project: Project, users: dict[str, Any], fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationFailed, match=message):
        save(project, users["admin"], **fields)
    assert not JudgeTemplateVersion.objects.exists()


def test_literal_braces_are_doubled_and_every_problem_is_named_at_once(
    project: Project, users: dict[str, Any]
) -> None:
    row = save(project, users["admin"], system='Reply {{"text": n}}. ' + CUSTOM_SYSTEM)
    assert row.number == 1
    with pytest.raises(services.TemplateInvalid) as caught:
        save(project, users["admin"], system="", user_text="{bad-name}", base_number=1)
    assert set(caught.value.errors) == {"system", "user"}


def test_a_mam_agent_keeps_its_name(project: Project, users: dict[str, Any]) -> None:
    with pytest.raises(ValidationFailed, match="must name the agent, 'Chief Judge'"):
        save(
            project,
            users["admin"],
            template_id=mam.CHIEF_TEMPLATE.id,
            system="You are the judge.",
            user_text=mam.CHIEF_TEMPLATE.user,
        )


def test_a_stale_edit_is_a_conflict_carrying_the_other_persons_version(
    project: Project, users: dict[str, Any]
) -> None:
    other_admin = users["admin"]
    me = Membership.objects.create(project=project, user=users["outsider"], role=Role.ADMIN).user
    save(project, other_admin)  # version 1, while I still look at the built-in text
    with pytest.raises(StaleVersion) as caught:
        save(project, me, system=CUSTOM_SYSTEM + " mine", base_number=0)
    conflict = caught.value
    assert conflict.status_code == 409
    assert conflict.current.number == 1 and conflict.current.system == CUSTOM_SYSTEM
    assert "admin-user saved version 1 of llmi.llm_judge after you opened the built-in text" in (
        conflict.message
    )
    with pytest.raises(StaleVersion):
        services.judge_template_reset(project=project, user=me, template_id=LLM.id, base_number=0)
    assert JudgeTemplateVersion.objects.count() == 1


def test_only_admins_edit(project: Project, users: dict[str, Any]) -> None:
    for role in ("reviewer", "annotator", "outsider"):
        with pytest.raises(Forbidden):
            save(project, users[role])
        with pytest.raises(Forbidden):
            services.judge_weights_save(
                project=project, user=users[role], base_number=0, preset="paper"
            )
    assert not JudgeTemplateVersion.objects.exists() and not JudgeWeights.objects.exists()


# --------------------------------------------------------------------------- runs


def test_a_run_uses_the_projects_text_and_records_its_version(
    llmi: Project, server: base.ScriptedServer, users: dict[str, Any]
) -> None:
    row = save(llmi, users["admin"])
    server.script = base.llm_script
    run, summary = base.judge(llmi, "llmi-llm")
    assert run.templates == {LLM.id: row.version} == summary["templates"]
    systems = {r.body["messages"][0]["content"] for r in server.requests}
    assert systems == {CUSTOM_SYSTEM}
    assert set(JudgeCall.objects.filter(run=run).values_list("template_version", flat=True)) == {
        row.version
    }
    assert summary["models"]["alpha"]["r_llm"] == 0.5


def test_a_changed_template_is_not_served_from_the_cache_of_the_old_text(
    llmi: Project, server: base.ScriptedServer, users: dict[str, Any]
) -> None:
    server.script = base.llm_script
    base.judge(llmi, "llmi-llm")
    before = server.count
    save(llmi, users["admin"])
    _, summary = base.judge(llmi, "llmi-llm")
    assert summary["calls"]["cached"] == 0 and server.count > before


def test_a_resumed_run_keeps_the_versions_it_recorded(
    llmi: Project, server: base.ScriptedServer, users: dict[str, Any]
) -> None:
    server.script = base.llm_script
    run, first = base.judge(llmi, "llmi-llm")
    JudgeCall.objects.filter(run=run).order_by("id").last().delete()  # type: ignore[union-attr]
    save(llmi, users["admin"])  # the project's text changes meanwhile
    before = server.count
    job = judge_services.judge_run_execute(job=judge_services.judge_run_resume(run=run, user=None))
    assert job.status == "succeeded", job.error
    assert job.result["summary"]["calls"]["reused"] == 3
    new_requests = server.requests[before:]
    built_in = LLM.system.replace("{{", "{").replace("}}", "}")
    assert new_requests
    assert [r.body["messages"][0]["content"] for r in new_requests] == [built_in] * len(
        new_requests
    )
    run.refresh_from_db()
    assert run.templates == {LLM.id: LLM.version}
    assert set(JudgeCall.objects.filter(run=run).values_list("template_version", flat=True)) == {
        LLM.version
    }


def test_a_run_of_a_version_no_longer_stored_fails_with_a_message(
    llmi: Project, users: dict[str, Any]
) -> None:
    row = save(llmi, users["admin"])
    with pytest.raises(DomainError, match=f"template llmi.llm_judge version {row.version} is no"):
        judge_templates_for(
            project=ProjectFactory(), judge="llmi-llm", versions={LLM.id: row.version}
        )
    found = judge_templates_for(project=llmi, judge="llmi-llm", versions={LLM.id: row.version})
    assert found[LLM.id].system == CUSTOM_SYSTEM


def test_mam_agents_use_the_projects_templates(
    server: base.ScriptedServer, project: Project, users: dict[str, Any]
) -> None:
    point_at(project, server)
    ItemFactory(project=project, external_id="atp_1", query="Show me a cat")
    ref = base.tool("Reference", {"img_index": 0})
    judge_services.answers_import(
        project=project,
        files=base.files({"alpha": [{"trace_id": "atp_1", "answer": f"ALPHA\n\n{ref}"}]}),
    )
    chief = save(
        project,
        users["admin"],
        template_id=mam.CHIEF_TEMPLATE.id,
        system="PROJECT CHIEF. You are the Chief Judge. " + mam.CHIEF_TEMPLATE.system,
        user_text=mam.CHIEF_TEMPLATE.user,
    )
    recall = save(
        project,
        users["admin"],
        template_id=mam.RECALL_TEMPLATE.id,
        system=mam.RECALL_TEMPLATE.system + " PROJECT RECALL.",
        user_text=mam.RECALL_TEMPLATE.user,
    )

    def script(system: str, user: str) -> str:
        if system.startswith("You are the Precision"):
            return json.dumps({"calls": [base.check(1)]})
        if system.startswith("You are the Recall"):
            return json.dumps({"missed": []})
        return json.dumps({"score": 90, "tier": "Excellent", "why": "good"})

    server.script = script
    run, summary = base.judge(project, "atp-mam")
    assert summary["models"]["alpha"]["fs"] == 90.0
    assert run.templates == {
        mam.PRECISION_TEMPLATE.id: mam.PRECISION_TEMPLATE.version,
        mam.RECALL_TEMPLATE.id: recall.version,
        mam.CHIEF_TEMPLATE.id: chief.version,
    }
    systems = [r.body["messages"][0]["content"] for r in server.requests]
    assert sum(s.startswith("PROJECT CHIEF.") for s in systems) == 1
    assert sum(s.endswith("PROJECT RECALL.") for s in systems) == 1


def test_first_calls_default_to_the_built_in_templates(llmi: Project) -> None:
    response = judge_services.answers_for(project=llmi)[0]
    calls = judge_services.first_calls("llmi-rubric", response, "m")
    assert {c.template_version for c in calls} == {rubric_judge.RUBRIC_TEMPLATE.version}


# --------------------------------------------------------------------------- weights


def test_weights_are_normalised_and_versioned(project: Project, users: dict[str, Any]) -> None:
    admin = users["admin"]
    assert judge_weights_for(project=project).weights == llmi_judge.Weights()
    row = services.judge_weights_save(
        project=project, user=admin, base_number=0, rule=2, llm=5, mllm=3
    )
    assert (row.number, row.rule, row.llm, row.mllm) == (1, 0.2, 0.5, 0.3)
    row = services.judge_weights_save(
        project=project, user=admin, base_number=1, rule=1, llm=0, mllm=0
    )
    assert (row.number, row.rule, row.llm, row.mllm) == (2, 1.0, 0.0, 0.0)
    row = services.judge_weights_save(project=project, user=admin, base_number=2, preset="paper")
    assert (row.rule, row.llm, row.mllm, row.preset) == (0.2, 0.5, 0.3, "paper")
    current = judge_weights_for(project=project)
    assert current.number == 3 and current.as_record() == {
        "rule": 0.2,
        "llm": 0.5,
        "mllm": 0.3,
        "version": 3,
        "preset": "paper",
    }
    assert JudgeWeights.objects.count() == 3


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"rule": -1, "llm": 1, "mllm": 1}, "w_rule must be 0 or more, got -1"),
        ({"rule": 0, "llm": 0, "mllm": 0}, "at least one weight must be above 0"),
        ({"rule": 1, "llm": float("nan"), "mllm": 1}, "w_llm must be a finite number"),
        ({"rule": 1, "llm": 1, "mllm": float("inf")}, "w_mllm must be a finite number"),
        ({"rule": "a", "llm": 1, "mllm": 1}, "w_rule must be a number, got 'a'"),
        ({"rule": None, "llm": 1, "mllm": 1}, "w_rule must be a number, got None"),
        ({"preset": "paper2"}, "unknown preset 'paper2'; one of equal, paper"),
        ({"preset": "equal"}, "these are the weights in use already"),
    ],
)
def test_bad_weights_are_refused_saying_why(
    project: Project, users: dict[str, Any], values: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationFailed, match=message):
        services.judge_weights_save(project=project, user=users["admin"], base_number=0, **values)
    assert not JudgeWeights.objects.exists()


def test_stale_weights_are_a_conflict(project: Project, users: dict[str, Any]) -> None:
    services.judge_weights_save(project=project, user=users["admin"], base_number=0, preset="paper")
    with pytest.raises(StaleVersion, match="admin-user saved weights version 1"):
        services.judge_weights_save(
            project=project, user=users["admin"], base_number=0, rule=1, llm=1, mllm=2
        )


def test_a_run_records_the_weights_and_its_report_uses_them(
    llmi: Project, server: base.ScriptedServer, users: dict[str, Any]
) -> None:
    services.judge_weights_save(project=llmi, user=users["admin"], base_number=0, preset="paper")
    server.script = base.mllm_script
    run, summary = base.judge(llmi, "llmi-mllm")
    assert run.weights == {"rule": 0.2, "llm": 0.5, "mllm": 0.3, "version": 1, "preset": "paper"}
    assert summary["weights"] == {"rule": 0.2, "llm": 0.5, "mllm": 0.3}
    # R_llm 0.75, R_mllm 0.75. alpha: R_rule 1 -> 0.2 + 0.5 * 0.75 + 0.3 * 0.75 = 0.8;
    # beta: R_rule 0 -> 0.5 * 0.75 = 0.375.
    assert summary["models"]["alpha"]["r"] == pytest.approx(0.8)
    assert summary["models"]["beta"]["r"] == pytest.approx(0.375)
    # Changing the project's weights later does not change this run's report.
    services.judge_weights_save(
        project=llmi, user=users["admin"], base_number=1, rule=1, llm=0, mllm=0
    )
    report = judge_run_report(run=run)
    assert report["summary"]["models"]["alpha"]["r"] == pytest.approx(0.8)
    assert report["summary"]["weights"] == {"rule": 0.2, "llm": 0.5, "mllm": 0.3}


def test_a_run_without_recorded_weights_reports_with_equal_weights(
    llmi: Project, server: base.ScriptedServer
) -> None:
    server.script = base.mllm_script
    run, summary = base.judge(llmi, "llmi-mllm")
    assert run.weights["version"] == 0 and run.weights["preset"] == "equal"
    run.weights = {}
    run.save(update_fields=["weights"])
    report = judge_run_report(run=run)
    assert report["summary"]["weights"] == {"rule": 1 / 3, "llm": 1 / 3, "mllm": 1 / 3}
    assert report["summary"]["models"]["alpha"]["r"] == pytest.approx(2.5 / 3)
    other, other_summary = base.judge(llmi, "llmi-llm")
    assert other.weights == {} and "weights" not in other_summary


# --------------------------------------------------------------------------- the page


def page_url(project: Project) -> str:
    return reverse("review:judge_settings", kwargs={"project_id": project.pk})


def save_url(project: Project) -> str:
    return reverse("review:judge_template_save", kwargs={"project_id": project.pk})


def weights_url(project: Project) -> str:
    return reverse("review:judge_weights_save", kwargs={"project_id": project.pk})


def test_reviewers_see_the_templates_and_admins_edit_them(
    project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    save(project, users["admin"])
    reviewer = clients["reviewer"].get(page_url(project))
    assert reviewer.status_code == 200
    body = reviewer.content.decode()
    assert "CUSTOM: judge the text and the tags." in body and "Version 1 by admin-user" in body
    assert 'name="system"' not in body and "Use these" not in body
    assert "LLM-I §4.1 Setup" in body and "the default: equal weights, 1/3 each" in body
    admin = clients["admin"].get(page_url(project)).content.decode()
    assert 'name="system"' in admin and "Reset to default" in admin and "Use these" in admin
    assert clients["annotator"].get(page_url(project)).status_code == 403
    assert clients["outsider"].get(page_url(project)).status_code == 404


def test_the_page_shows_history_with_the_change(
    project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    save(project, users["admin"])
    services.judge_template_reset(
        project=project, user=users["admin"], template_id=LLM.id, base_number=1
    )
    body = clients["reviewer"].get(page_url(project)).content.decode()
    assert "History (2 versions)" in body and "reset to default" in body
    assert "Change from the built-in text" in body and "Change from version 1" in body
    assert '<span class="diff-add">+ CUSTOM: judge the text and the tags.</span>' in body


def test_the_page_costs_a_fixed_number_of_queries(
    project: Project, users: dict[str, Any], client_for: Any, django_assert_max_num_queries: Any
) -> None:
    client = client_for(users["reviewer"])
    client.get(page_url(project))
    for n in range(1, 6):
        save(project, users["admin"], system=CUSTOM_SYSTEM + f" {n}", base_number=n - 1)
    with django_assert_max_num_queries(8):
        assert client.get(page_url(project)).status_code == 200


def test_saving_from_the_page(
    project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    data = {
        "template": LLM.id,
        "base": "0",
        "op": "save",
        "system": CUSTOM_SYSTEM,
        "user": LLM.user,
    }
    response = clients["admin"].post(save_url(project), data)
    assert response.status_code == 302
    assert response["Location"].endswith("?saved=llmi.llm_judge%20version%201#tpl-llmi-llm_judge")
    assert JudgeTemplateVersion.objects.get().author == users["admin"]
    page = clients["admin"].get(response["Location"]).content.decode()
    assert "Saved llmi.llm_judge version 1." in page
    reset = clients["admin"].post(save_url(project), {**data, "base": "1", "op": "reset"})
    assert reset.status_code == 302
    assert JudgeTemplateVersion.objects.order_by("number").last().is_default  # type: ignore[union-attr]


def test_the_page_keeps_the_typed_text_with_the_message(
    project: Project, clients: dict[str, Client]
) -> None:
    data = {"template": LLM.id, "base": "0", "op": "save", "system": "Mine {oops}", "user": "x"}
    response = clients["admin"].post(save_url(project), data)
    assert response.status_code == 400
    body = response.content.decode()
    assert "Mine {oops}</textarea>" in body
    assert "keep the placeholder(s) {answer}, {prompt}" in body
    assert "unknown placeholder(s) {oops}" in body
    assert not JudgeTemplateVersion.objects.exists()


def test_a_stale_save_from_the_page_answers_409_with_their_text(
    project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    save(project, users["admin"], system=CUSTOM_SYSTEM + " THEIRS")
    data = {
        "template": LLM.id,
        "base": "0",
        "op": "save",
        "system": "MINE " + CUSTOM_SYSTEM,
        "user": LLM.user,
    }
    response = clients["admin"].post(save_url(project), data)
    assert response.status_code == 409
    body = response.content.decode()
    assert "data-conflict" in body and "Their version 1" in body and "THEIRS" in body
    assert "MINE CUSTOM" in body  # my text is kept in the form
    assert 'name="base" value="1"' in body  # saving again means: on top of theirs
    assert JudgeTemplateVersion.objects.count() == 1


@pytest.mark.parametrize(
    ("data", "status", "message"),
    [
        ({}, 400, "template: This field is required."),
        ({"template": LLM.id, "base": "x", "op": "save"}, 400, "base: Enter a whole number."),
        ({"template": LLM.id, "base": "0", "op": "drop"}, 400, "op: Select a valid choice."),
        (
            {"template": "nope", "base": "0", "op": "save", "system": "a", "user": "b"},
            400,
            "unknown judge template &#x27;nope&#x27;",
        ),
    ],
)
def test_bad_posts_say_what_is_wrong(
    project: Project, clients: dict[str, Client], data: dict[str, str], status: int, message: str
) -> None:
    response = clients["admin"].post(save_url(project), data)
    assert response.status_code == status
    assert message in response.content.decode()


def test_only_admins_post(project: Project, clients: dict[str, Client]) -> None:
    data = {
        "template": LLM.id,
        "base": "0",
        "op": "save",
        "system": CUSTOM_SYSTEM,
        "user": LLM.user,
    }
    assert clients["reviewer"].post(save_url(project), data).status_code == 403
    assert (
        clients["annotator"]
        .post(weights_url(project), {"base": "0", "preset": "paper"})
        .status_code
        == 403
    )
    assert clients["outsider"].post(save_url(project), data).status_code == 404
    assert clients["admin"].get(save_url(project)).status_code == 405
    assert not JudgeTemplateVersion.objects.exists() and not JudgeWeights.objects.exists()


def test_weights_from_the_page(project: Project, clients: dict[str, Client]) -> None:
    response = clients["admin"].post(weights_url(project), {"base": "0", "preset": "paper"})
    assert response.status_code == 302 and response["Location"].endswith("#weights")
    body = clients["reviewer"].get(page_url(project)).content.decode()
    assert "w_rule = 0.200, w_llm = 0.500, w_mllm = 0.300" in body and "preset “paper”" in body
    typed = {"base": "1", "rule": "1", "llm": "1", "mllm": "2"}
    assert clients["admin"].post(weights_url(project), typed).status_code == 302
    assert judge_weights_for(project=project).weights == llmi_judge.Weights(0.25, 0.25, 0.5)
    bad = clients["admin"].post(
        weights_url(project), {"base": "2", "rule": "-1", "llm": "1", "mllm": "1"}
    )
    assert bad.status_code == 400 and "w_rule must be 0 or more" in bad.content.decode()
    assert 'value="-1"' in bad.content.decode()
    missing = clients["admin"].post(weights_url(project), {"base": "2", "rule": "1"})
    assert (
        missing.status_code == 400 and "give a number for w_llm, w_mllm" in missing.content.decode()
    )
    stale = clients["admin"].post(weights_url(project), {"base": "0", "preset": "equal"})
    assert stale.status_code == 409 and "saved weights version 2" in stale.content.decode()
    assert JudgeWeights.objects.count() == 2


def test_settings_selector_checks_the_role(project: Project, users: dict[str, Any]) -> None:
    with pytest.raises(Forbidden):
        judge_settings_get(user=users["annotator"], project=project)
    settings = judge_settings_get(user=users["reviewer"], project=project)
    assert not settings.can_edit
    assert [j["name"] for j in settings.judges] == [
        "llmi-rubric",
        "llmi-llm",
        "llmi-mllm",
        "atp-mam",
        "mms-plan",
        # Run scoring reads the project's newest S and V templates (worked examples, issue 26).
        "agentic-mme-s",
        "agentic-mme-v",
        "pairwise",
        "pairwise-models",
    ]
    shared = settings.template(LLM.id)
    assert shared is not None and len(shared.judges) == 2
    assert set(WEIGHT_PRESETS) == {"equal", "paper"}


def test_text_diff() -> None:
    assert text_diff("a\nb\nc", "a\nb\nc") == []
    assert text_diff("a\nb\nc", "a\nB\nc") == [
        ("meta", "@@ -1,3 +1,3 @@"),
        ("ctx", "a"),
        ("del", "b"),
        ("add", "B"),
        ("ctx", "c"),
    ]
    assert ("del", "--- x") in text_diff("--- x\nkeep", "keep")
