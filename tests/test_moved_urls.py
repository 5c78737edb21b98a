"""Every page route's path before issue 23 (each feature's URLconf was mounted at "") and its
path now (under the prefix naming its feature): an old path answers 301 (GET, HEAD) or 308 (any
other method, so a re-sent form stays a POST) to the new one with the same query string, and the
redirect lets through nothing the new route would refuse.

:data:`PATHS` is written out by hand, not computed from ``benchmark/old_urls.py``: it is what
people have bookmarked and been sent. A row whose two paths are equal is a route that kept its
path (or was added later); it must still answer there itself. A new page route gets a row, so a
path that changes without a redirect fails here.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse

from benchmark.models import ApiToken, Membership, Role
from benchmark.old_urls import MOVED
from tests.factories import UserFactory

#: (old path, new path, route name) for every named page route; sample arguments: project 3,
#: item 5, task/run/other object 7, response 11, version 2.
PATHS: list[tuple[str, str, str]] = [
    ("/accounts/login/", "/accounts/login/", "login"),
    ("/accounts/logout/", "/accounts/logout/", "logout"),
    ("/", "/", "benchmark:project_list"),
    ("/projects/new/", "/projects/new/", "benchmark:project_create"),
    ("/projects/3/", "/projects/3/", "benchmark:project_detail"),
    ("/projects/3/edit/", "/projects/3/edit/", "benchmark:project_edit"),
    (
        "/projects/3/first-run/dismiss/",
        "/projects/3/first-run/dismiss/",
        "benchmark:project_first_run_dismiss",
    ),
    ("/projects/3/items/5/", "/projects/3/items/5/", "benchmark:item_detail"),
    ("/projects/3/items/5/restore/", "/projects/3/items/5/restore/", "benchmark:item_restore"),
    ("/projects/3/import/", "/projects/3/datasets/import/", "benchmark:project_import"),
    ("/projects/3/export/", "/projects/3/datasets/export/", "benchmark:project_export"),
    ("/jobs/7/", "/jobs/7/", "benchmark:job_detail"),
    ("/jobs/7/cancel/", "/jobs/7/cancel/", "benchmark:job_cancel"),
    ("/jobs/7/retry/", "/llm/jobs/7/retry/", "benchmark:job_retry"),
    ("/projects/3/items/5/model/", "/projects/3/llm/items/5/", "benchmark:item_model"),
    ("/projects/3/toolset/", "/projects/3/toolsets/", "benchmark:toolset"),
    ("/projects/3/images/", "/projects/3/images/", "benchmark:images"),
    ("/projects/3/images/preview/", "/projects/3/images/preview/", "benchmark:image_preview"),
    ("/projects/3/images/derive/", "/projects/3/images/derive/", "benchmark:image_derive"),
    (
        "/projects/3/images/abababababababababababababababababababababababababababababababab/edit/",
        "/projects/3/images/abababababababababababababababababababababababababababababababab/edit/",
        "benchmark:image_edit",
    ),
    (
        "/images/abababababababababababababababababababababababababababababababab/",
        "/images/abababababababababababababababababababababababababababababababab/",
        "benchmark:image",
    ),
    (
        "/images/abababababababababababababababababababababababababababababababab/thumb/",
        "/images/abababababababababababababababababababababababababababababababab/thumb/",
        "benchmark:image_thumb",
    ),
    ("/projects/3/items/new/", "/projects/3/items/new/", "benchmark:item_new"),
    ("/projects/3/saved-filters/", "/projects/3/saved-filters/", "benchmark:saved_filters"),
    (
        "/projects/3/saved-filters/7/delete/",
        "/projects/3/saved-filters/7/delete/",
        "benchmark:saved_filter_delete",
    ),
    ("/projects/3/items/5/edit/", "/projects/3/items/5/edit/", "benchmark:item_edit"),
    ("/projects/3/items/5/history/", "/projects/3/items/5/history/", "benchmark:item_history"),
    (
        "/projects/3/items/5/history/2/revert/",
        "/projects/3/items/5/history/2/revert/",
        "benchmark:item_revert",
    ),
    ("/projects/3/members/", "/projects/3/people/members/", "benchmark:members"),
    (
        "/projects/3/members/13/role/",
        "/projects/3/people/members/13/role/",
        "benchmark:member_role",
    ),
    (
        "/projects/3/members/13/remove/",
        "/projects/3/people/members/13/remove/",
        "benchmark:member_remove",
    ),
    ("/projects/3/invitations/", "/projects/3/people/invitations/", "benchmark:invitation_create"),
    (
        "/projects/3/invitations/17/revoke/",
        "/projects/3/people/invitations/17/revoke/",
        "benchmark:invitation_revoke",
    ),
    ("/invitations/tok-en/", "/people/invitations/tok-en/", "benchmark:invitation_open"),
    ("/people/", "/people/", "benchmark:people"),
    ("/people/19/password-link/", "/people/19/password-link/", "benchmark:user_password_link"),
    ("/people/19/active/", "/people/19/active/", "benchmark:user_active"),
    (
        "/password-link/MQ/tok-en/",
        "/people/password-link/MQ/tok-en/",
        "benchmark:password_link_open",
    ),
    ("/account/tokens/", "/api-tokens/", "benchmark:api_tokens"),
    ("/account/tokens/23/revoke/", "/api-tokens/23/revoke/", "benchmark:api_token_revoke"),
    (
        "/input-drafts/tag-review:project:3:item:5:response:11/",
        "/input-drafts/tag-review:project:3:item:5:response:11/",
        "benchmark:input_draft",
    ),
    ("/projects/3/judge/", "/projects/3/judgment-tasks/", "annotation:task_list"),
    ("/projects/3/judge/new/", "/projects/3/judgment-tasks/new/", "annotation:task_new"),
    (
        "/projects/3/judge/defaults/",
        "/projects/3/judgment-tasks/defaults/",
        "annotation:task_defaults",
    ),
    ("/projects/3/judge/7/edit/", "/projects/3/judgment-tasks/7/edit/", "annotation:task_edit"),
    ("/judge/7/next/", "/judgment-tasks/7/next/", "annotation:task_next"),
    ("/judge/7/items/5/", "/judgment-tasks/7/items/5/", "annotation:judge"),
    ("/judge/7/units/u-1/", "/judgment-tasks/7/units/u-1/", "annotation:judge_unit"),
    ("/judge/7/items/5/audit/", "/verification/7/items/5/audit/", "annotation:verification_audit"),
    ("/judge/7/audits/", "/verification/7/audits/", "annotation:verification_audits"),
    (
        "/projects/3/items/5/responses/11/review/",
        "/projects/3/tag-review/items/5/responses/11/review/",
        "annotation:tag_review",
    ),
    (
        "/projects/3/items/5/responses/11/discard/",
        "/projects/3/tag-review/items/5/responses/11/discard/",
        "annotation:tag_discard",
    ),
    (
        "/projects/3/items/5/responses/11/versions/",
        "/projects/3/tag-review/items/5/responses/11/versions/",
        "annotation:tag_versions",
    ),
    (
        "/projects/3/items/5/responses/11/versions/2/",
        "/projects/3/tag-review/items/5/responses/11/versions/2/",
        "annotation:tag_version",
    ),
    (
        "/projects/3/items/5/responses/11/versions/2/revert/",
        "/projects/3/tag-review/items/5/responses/11/versions/2/revert/",
        "annotation:tag_version_revert",
    ),
    ("/projects/3/tag-decisions/", "/projects/3/tag-review/decisions/", "annotation:tag_stats"),
    (
        "/projects/3/items/5/drafting/",
        "/projects/3/backward-drafting/items/5/",
        "annotation:drafting_list",
    ),
    (
        "/projects/3/items/5/drafting/7/",
        "/projects/3/backward-drafting/items/5/7/",
        "annotation:drafting_session",
    ),
    (
        "/projects/3/items/5/drafting/7/describe/",
        "/projects/3/backward-drafting/items/5/7/describe/",
        "annotation:drafting_describe",
    ),
    (
        "/projects/3/items/5/drafting/7/crop/",
        "/projects/3/backward-drafting/items/5/7/crop/",
        "annotation:drafting_crop",
    ),
    (
        "/projects/3/items/5/drafting/7/calls/29/mark/",
        "/projects/3/backward-drafting/items/5/7/calls/29/mark/",
        "annotation:drafting_mark",
    ),
    (
        "/projects/3/items/5/drafting/7/draft/",
        "/projects/3/backward-drafting/items/5/7/draft/",
        "annotation:drafting_draft",
    ),
    ("/projects/3/drafts/", "/projects/3/model-drafts/", "annotation:model_drafts"),
    (
        "/projects/3/drafts/queries/",
        "/projects/3/model-drafts/queries/",
        "annotation:model_draft_queries",
    ),
    ("/projects/3/drafts/7/", "/projects/3/model-drafts/7/", "annotation:model_draft_detail"),
    (
        "/projects/3/drafts/7/candidates/31/",
        "/projects/3/model-drafts/7/candidates/31/",
        "annotation:model_draft_decide",
    ),
    (
        "/projects/3/items/5/draft/answer/",
        "/projects/3/model-drafts/items/5/answer/",
        "annotation:model_draft_item",
    ),
    (
        "/projects/3/items/5/trajectory/",
        "/projects/3/trajectories/items/5/",
        "annotation:trajectory_edit",
    ),
    (
        "/projects/3/items/5/trajectory/versions/",
        "/projects/3/trajectories/items/5/versions/",
        "annotation:trajectory_versions",
    ),
    (
        "/projects/3/items/5/trajectory/versions/2/",
        "/projects/3/trajectories/items/5/versions/2/",
        "annotation:trajectory_version",
    ),
    (
        "/projects/3/items/5/trajectory/versions/2/revert/",
        "/projects/3/trajectories/items/5/versions/2/revert/",
        "annotation:trajectory_version_revert",
    ),
    ("/projects/3/items/bulk/", "/projects/3/bulk-actions/", "annotation:bulk_action"),
    ("/projects/3/items/5/plan/", "/projects/3/plan-editor/items/5/", "annotation:plan_edit"),
    (
        "/projects/3/items/5/plan/findings/",
        "/projects/3/plan-editor/items/5/findings/",
        "annotation:plan_findings",
    ),
    (
        "/projects/3/items/5/plan/alternatives/",
        "/projects/3/plan-editor/items/5/alternatives/",
        "annotation:plan_alternative_add",
    ),
    (
        "/projects/3/items/5/plan/alternatives/remove/",
        "/projects/3/plan-editor/items/5/alternatives/remove/",
        "annotation:plan_alternative_remove",
    ),
    (
        "/projects/3/items/5/plan/versions/",
        "/projects/3/plan-editor/items/5/versions/",
        "annotation:plan_versions",
    ),
    (
        "/projects/3/items/5/plan/versions/2/",
        "/projects/3/plan-editor/items/5/versions/2/",
        "annotation:plan_version",
    ),
    (
        "/projects/3/items/5/plan/versions/2/revert/",
        "/projects/3/plan-editor/items/5/versions/2/revert/",
        "annotation:plan_version_revert",
    ),
    ("/review/7/disputes/", "/adjudication/7/disputes/", "review:dispute_list"),
    ("/review/7/items/5/", "/adjudication/7/items/5/", "review:adjudicate"),
    (
        "/projects/3/discard-proposals/",
        "/projects/3/adjudication/discard-proposals/",
        "review:discard_proposals",
    ),
    (
        "/projects/3/discard-proposals/7/decide/",
        "/projects/3/adjudication/discard-proposals/7/decide/",
        "review:discard_proposal_decide",
    ),
    ("/review/7/agreement/", "/agreement/7/", "review:agreement"),
    ("/review/7/agreement/pair/", "/agreement/7/pair/", "review:agreement_pair"),
    ("/review/7/judgments.csv", "/agreement/7/judgments.csv", "review:judgments_export"),
    ("/review/7/judgments.jsonl", "/agreement/7/judgments.jsonl", "review:judgments_export"),
    ("/projects/3/balance/", "/projects/3/plan-scoring/balance/", "review:balance"),
    ("/projects/3/score-plans/", "/projects/3/plan-scoring/", "review:score_plans"),
    ("/projects/3/score-answers/", "/projects/3/answers/", "review:score_answers"),
    ("/projects/3/runs/", "/projects/3/runs/", "review:runs"),
    ("/runs/7/", "/runs/7/", "review:run_set"),
    ("/runs/7/rescore/", "/runs/7/rescore/", "review:run_set_rescore"),
    ("/runs/7/examples/add/", "/runs/7/examples/add/", "review:check_examples_add"),
    ("/runs/examples/7/", "/runs/examples/7/", "review:check_example_set"),
    ("/runs/examples/7/held-back/", "/runs/examples/7/held-back/", "review:check_held_back_start"),
    ("/agent-runs/7/", "/runs/agent-runs/7/", "review:run_detail"),
    ("/agent-runs/7/visual/", "/runs/agent-runs/7/visual/", "review:run_visual"),
    ("/agent-runs/7/label/", "/runs/agent-runs/7/label/", "review:run_label"),
    # New with issue 26's S judge calibration: nothing to redirect.
    ("/runs/agent-runs/7/search/", "/runs/agent-runs/7/search/", "review:run_search"),
    ("/projects/3/oracle/", "/projects/3/oracle/", "review:oracle"),
    ("/oracle-runs/7/", "/oracle/runs/7/", "review:oracle_run"),
    ("/oracle-runs/7/resume/", "/oracle/runs/7/resume/", "review:oracle_run_resume"),
    ("/oracle-results/7/", "/oracle/results/7/", "review:oracle_result"),
    ("/projects/3/rate-judge/new/", "/projects/3/rate-judge/new/", "review:rate_judge_new"),
    (
        "/projects/3/score-criteria/new/",
        "/projects/3/rate-judge/score-criteria/new/",
        "review:criterion_task_new",
    ),
    ("/projects/3/judge-runs/", "/projects/3/judges/", "review:judge_runs"),
    ("/projects/3/judge-runs/compare/", "/projects/3/judges/compare/", "review:judge_compare"),
    ("/judge-runs/7/", "/judges/runs/7/", "review:judge_run"),
    ("/judge-runs/7/resume/", "/judges/runs/7/resume/", "review:judge_run_resume"),
    (
        "/agreement/judge-examples/tasks/7/add/",
        "/agreement/judge-examples/tasks/7/add/",
        "review:judge_examples_add",
    ),
    (
        "/agreement/judge-examples/tasks/7/reports/",
        "/agreement/judge-examples/tasks/7/reports/",
        "review:report_cases",
    ),
    (
        "/agreement/judge-examples/tasks/7/reports/correct/",
        "/agreement/judge-examples/tasks/7/reports/correct/",
        "review:report_correct",
    ),
    (
        "/agreement/judge-examples/tasks/7/reports/add/",
        "/agreement/judge-examples/tasks/7/reports/add/",
        "review:report_examples_add",
    ),
    ("/agreement/judge-examples/7/", "/agreement/judge-examples/7/", "review:example_set"),
    (
        "/agreement/judge-examples/7/held-back/",
        "/agreement/judge-examples/7/held-back/",
        "review:held_back_start",
    ),
    ("/projects/3/judges/settings/", "/projects/3/judge-settings/", "review:judge_settings"),
    (
        "/projects/3/judges/templates/",
        "/projects/3/judge-settings/templates/",
        "review:judge_template_save",
    ),
    (
        "/projects/3/judges/weights/",
        "/projects/3/judge-settings/weights/",
        "review:judge_weights_save",
    ),
    ("/projects/3/human-eval/new/", "/projects/3/human-eval/new/", "review:human_eval_new"),
    ("/human-eval/7/", "/human-eval/7/", "review:human_eval_results"),
    ("/human-eval/7/ratings.csv", "/human-eval/7/ratings.csv", "review:human_eval_export"),
    ("/projects/3/render/", "/projects/3/answer-rendering/", "review:render_answers"),
    ("/answers/7/rendered/", "/answer-rendering/7/", "review:rendered_answer"),
    (
        "/answers/7/rendered/download/",
        "/answer-rendering/7/download/",
        "review:rendered_answer_download",
    ),
    # new with issue 24: never had another path
    ("/projects/3/evaluation/", "/projects/3/evaluation/", "review:evaluation"),
    (
        "/projects/3/evaluation/leaderboard/",
        "/projects/3/evaluation/leaderboard/",
        "review:leaderboard",
    ),
    (
        "/projects/3/evaluation/pilot/",
        "/projects/3/evaluation/pilot/",
        "review:evaluation_pilot",
    ),
    ("/evaluation/runs/7/", "/evaluation/runs/7/", "review:evaluation_run"),
    # new with issue 26
    ("/projects/3/model-compare/", "/projects/3/model-compare/", "review:model_compare"),
    ("/evaluation/runs/7/resume/", "/evaluation/runs/7/resume/", "review:evaluation_run_resume"),
    ("/evaluation/runs/7/cancel/", "/evaluation/runs/7/cancel/", "review:evaluation_run_cancel"),
    ("/evaluation/runs/7/judge/", "/evaluation/runs/7/judge/", "review:evaluation_run_judge"),
    ("/evaluation/runs/7/items/5/", "/evaluation/runs/7/items/5/", "review:evaluation_result"),
    (
        "/evaluation/runs/7/files/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/",
        "/evaluation/runs/7/files/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/",
        "review:evaluation_file",
    ),
    ("/projects/3/team/", "/projects/3/team/", "review:team"),
    # Routing by doubt, next item's images (issues 25, 26), audio inputs (issue 24).
    (
        "/judgment-tasks/doubt/7/recompute/",
        "/judgment-tasks/doubt/7/recompute/",
        "annotation:doubt_recompute",
    ),
    (
        "/judgment-tasks/7/next/images/",
        "/judgment-tasks/7/next/images/",
        "annotation:task_next_images",
    ),
    (
        "/judgment-tasks/7/next/ahead/",
        "/judgment-tasks/7/next/ahead/",
        "annotation:task_next_ahead",
    ),
    (
        "/judgment-tasks/7/next/ahead/release/",
        "/judgment-tasks/7/next/ahead/release/",
        "annotation:task_next_ahead_release",
    ),
    (
        "/audio/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/",
        "/audio/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/",
        "benchmark:audio",
    ),
    (
        "/projects/3/audio/items/5/attach/",
        "/projects/3/audio/items/5/attach/",
        "benchmark:audio_attach",
    ),
    # Gold items (issue 26): added later, kept their paths.
    ("/gold/7/", "/gold/7/", "review:gold"),
    ("/gold/7/mark/", "/gold/7/mark/", "review:gold_mark"),
    ("/gold/7/items/5/unmark/", "/gold/7/items/5/unmark/", "review:gold_unmark"),
    ("/gold/7/people/5/pause/", "/gold/7/people/5/pause/", "review:gold_pause"),
    ("/gold/7/people/5/resume/", "/gold/7/people/5/resume/", "review:gold_resume"),
    ("/gold/7/people/5/send-back/", "/gold/7/people/5/send-back/", "review:gold_send_back"),
    ("/projects/3/releases/", "/projects/3/releases/", "review:release_list"),
    ("/projects/3/releases/compare/", "/projects/3/releases/compare/", "review:release_compare"),
    ("/projects/3/items/5/releases/", "/projects/3/releases/items/5/", "review:item_release_state"),
    ("/projects/3/releases/7/", "/projects/3/releases/7/", "review:release_detail"),
    ("/projects/3/releases/7/verify/", "/projects/3/releases/7/verify/", "review:release_verify"),
    (
        "/projects/3/releases/7/download/",
        "/projects/3/releases/7/download/",
        "review:release_download",
    ),
]

QUERY = "?a=1&b=two%20words&b=3"

MOVED_PATHS = [(old, new, name) for old, new, name in PATHS if old != new]
KEPT_PATHS = [(old, name) for old, new, name in PATHS if old == new]


def _page_routes(patterns: list[Any], namespace: str = "") -> set[str]:
    """Every named route of the root URLconf outside the API, the admin and the old paths."""
    names: set[str] = set()
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            if pattern.app_name in ("admin", "moved") or str(pattern.pattern) == "api/":
                continue
            inner = namespace
            if pattern.namespace:
                inner = f"{namespace}:{pattern.namespace}" if namespace else pattern.namespace
            names |= _page_routes(pattern.url_patterns, inner)
        elif isinstance(pattern, URLPattern) and pattern.name:
            names.add(f"{namespace}:{pattern.name}" if namespace else pattern.name)
    return names


def test_the_table_names_every_page_route() -> None:
    listed = {name for _, _, name in PATHS}
    routes = _page_routes(get_resolver().url_patterns)
    assert sorted(routes - listed) == [], "page routes missing from PATHS"
    assert sorted(listed - routes) == [], "rows of PATHS whose route is gone"


@pytest.mark.parametrize(("old", "new", "name"), MOVED_PATHS, ids=[r[0] for r in MOVED_PATHS])
def test_an_old_path_redirects_to_its_new_one_with_the_query_string(
    old: str, new: str, name: str
) -> None:
    match = resolve(new)
    assert match.view_name == name, f"{new} is not {name}"
    assert reverse(name, kwargs=match.kwargs) == new
    client = Client()
    for method in ("get", "head"):
        response = getattr(client, method)(old + QUERY)
        assert response.status_code == 301, (method, old)
        assert response["Location"] == new + QUERY
        assert getattr(client, method)(old)["Location"] == new  # no "?" without a query
    for method in ("post", "put", "patch", "delete", "options"):
        response = getattr(client, method)(old + QUERY)
        assert response.status_code == 308, (method, old)
        assert response["Location"] == new + QUERY


@pytest.mark.parametrize(("path", "name"), KEPT_PATHS, ids=[r[0] for r in KEPT_PATHS])
def test_a_kept_path_is_still_its_route(path: str, name: str) -> None:
    assert resolve(path).view_name == name
    assert reverse(name, kwargs=resolve(path).kwargs) == path


def test_every_row_of_the_redirect_table_is_reached_and_none_is_shadowed() -> None:
    """Each old pattern of benchmark/old_urls.py is what answers one old path above (so no
    current route hides it and no row is dead), and sends it to the route the table says."""
    reached: dict[str, str] = {}
    for old, _, name in MOVED_PATHS:
        match = resolve(old)
        assert match.namespace == "moved", f"{old} is answered by {match.view_name}, not a redirect"
        assert match.kwargs["to"] == name
        reached[match.route] = name
    assert reached == dict(MOVED), "rows of MOVED that no old path of PATHS reaches"


@pytest.mark.django_db
def test_a_redirect_lets_through_nothing_the_new_page_refuses(
    project: Any, users: dict[str, Any], client_for: Any
) -> None:
    """Members are the project admin's page: the old path sends everyone to the new one,
    which answers each as it would directly."""
    old = f"/projects/{project.pk}/members/"
    new = reverse("benchmark:members", args=[project.pk])
    expected = {"admin": 200, "reviewer": 403, "annotator": 403, "outsider": 404}
    for role, status in expected.items():
        client = client_for(users[role])
        first = client.get(old)
        assert (first.status_code, first["Location"]) == (301, new), role
        assert client.get(old, follow=True).status_code == status, role
        assert client.get(new).status_code == status, role
    anonymous = Client().get(old, follow=True)
    assert anonymous.redirect_chain[0] == (new, 301)
    assert anonymous.redirect_chain[-1][0].startswith(reverse("login"))


@pytest.mark.django_db
def test_a_form_posted_to_an_old_path_is_posted_again_at_the_new_one(
    project: Any, users: dict[str, Any], client_for: Any
) -> None:
    membership = Membership.objects.get(project=project, user=users["annotator"])
    old = f"/projects/{project.pk}/members/{membership.pk}/role/"
    new = reverse("benchmark:member_role", args=[project.pk, membership.pk])
    # A reviewer may not change roles: the 308 leads to the same refusal as the new path.
    refused = client_for(users["reviewer"]).post(old, {"role": Role.REVIEWER}, follow=True)
    assert refused.redirect_chain == [(new, 308)] and refused.status_code == 403
    membership.refresh_from_db()
    assert membership.role == Role.ANNOTATOR
    # The admin's POST arrives as a POST, with its body, and is done.
    done = client_for(users["admin"]).post(old, {"role": Role.REVIEWER}, follow=True)
    assert done.redirect_chain[0] == (new, 308) and done.status_code == 200
    membership.refresh_from_db()
    assert membership.role == Role.REVIEWER


@pytest.mark.django_db
def test_an_old_api_token_page_makes_a_token_only_for_a_logged_in_user(client_for: Any) -> None:
    alice = UserFactory(username="alice")
    made = client_for(alice).post("/account/tokens/", {"name": "laptop"}, follow=True)
    assert made.redirect_chain == [(reverse("benchmark:api_tokens"), 308)]
    assert made.status_code == 200
    assert list(ApiToken.objects.filter(user=alice).values_list("name", flat=True)) == ["laptop"]
    anonymous = Client().post("/account/tokens/", {"name": "stolen"}, follow=True)
    assert anonymous.redirect_chain[-1][0].startswith(reverse("login"))
    assert ApiToken.objects.filter(name="stolen").count() == 0
