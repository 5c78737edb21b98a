"""The paths that moved when each feature got a prefix naming it (issue 23), and where they went.

Links people keep (bookmarks, invitation and password links already sent, stored job links)
still work: each old path answers 301 (GET, HEAD) or 308 (any other method, so a form re-posted
to an old path stays a POST) to the route named beside it, with the same arguments and query
string. The redirect checks nothing: the new route checks permissions as before. Included last
by ``benchmark/urls.py``, so a current route always wins. ``tests/test_moved_urls.py`` walks
every row.

A route that moves again gets a row here (old pattern, new name); rows are never removed.
"""

from benchmark.routing import moved

app_name = "moved"

_P = "projects/<int:project_id>/"
_ITEM = _P + "items/<int:item_id>/"

MOVED: list[tuple[str, str]] = [
    # benchmark
    (_P + "import/", "benchmark:project_import"),
    (_P + "export/", "benchmark:project_export"),
    ("jobs/<int:pk>/retry/", "benchmark:job_retry"),
    (_ITEM + "model/", "benchmark:item_model"),
    (_P + "toolset/", "benchmark:toolset"),
    (_P + "members/", "benchmark:members"),
    (_P + "members/<int:membership_id>/role/", "benchmark:member_role"),
    (_P + "members/<int:membership_id>/remove/", "benchmark:member_remove"),
    (_P + "invitations/", "benchmark:invitation_create"),
    (_P + "invitations/<int:invitation_id>/revoke/", "benchmark:invitation_revoke"),
    ("invitations/<str:token>/", "benchmark:invitation_open"),
    ("password-link/<str:uidb64>/<str:token>/", "benchmark:password_link_open"),
    ("account/tokens/", "benchmark:api_tokens"),
    ("account/tokens/<int:token_id>/revoke/", "benchmark:api_token_revoke"),
    # annotation
    (_P + "judge/", "annotation:task_list"),
    (_P + "judge/new/", "annotation:task_new"),
    (_P + "judge/defaults/", "annotation:task_defaults"),
    (_P + "judge/<int:pk>/edit/", "annotation:task_edit"),
    ("judge/<int:pk>/next/", "annotation:task_next"),
    ("judge/<int:pk>/items/<int:item_id>/", "annotation:judge"),
    ("judge/<int:pk>/units/<str:unit>/", "annotation:judge_unit"),
    ("judge/<int:pk>/items/<int:item_id>/audit/", "annotation:verification_audit"),
    ("judge/<int:pk>/audits/", "annotation:verification_audits"),
    (_ITEM + "responses/<int:response_id>/review/", "annotation:tag_review"),
    (_ITEM + "responses/<int:response_id>/discard/", "annotation:tag_discard"),
    (_ITEM + "responses/<int:response_id>/versions/", "annotation:tag_versions"),
    (_ITEM + "responses/<int:response_id>/versions/<int:number>/", "annotation:tag_version"),
    (
        _ITEM + "responses/<int:response_id>/versions/<int:number>/revert/",
        "annotation:tag_version_revert",
    ),
    (_P + "tag-decisions/", "annotation:tag_stats"),
    (_ITEM + "drafting/", "annotation:drafting_list"),
    (_ITEM + "drafting/<int:pk>/", "annotation:drafting_session"),
    (_ITEM + "drafting/<int:pk>/describe/", "annotation:drafting_describe"),
    (_ITEM + "drafting/<int:pk>/crop/", "annotation:drafting_crop"),
    (_ITEM + "drafting/<int:pk>/calls/<int:call>/mark/", "annotation:drafting_mark"),
    (_ITEM + "drafting/<int:pk>/draft/", "annotation:drafting_draft"),
    (_P + "drafts/", "annotation:model_drafts"),
    (_P + "drafts/queries/", "annotation:model_draft_queries"),
    (_P + "drafts/<int:pk>/", "annotation:model_draft_detail"),
    (_P + "drafts/<int:pk>/candidates/<int:candidate>/", "annotation:model_draft_decide"),
    (_ITEM + "draft/<str:kind>/", "annotation:model_draft_item"),
    (_ITEM + "trajectory/", "annotation:trajectory_edit"),
    (_ITEM + "trajectory/versions/", "annotation:trajectory_versions"),
    (_ITEM + "trajectory/versions/<int:number>/", "annotation:trajectory_version"),
    (_ITEM + "trajectory/versions/<int:number>/revert/", "annotation:trajectory_version_revert"),
    (_P + "items/bulk/", "annotation:bulk_action"),
    (_ITEM + "plan/", "annotation:plan_edit"),
    (_ITEM + "plan/findings/", "annotation:plan_findings"),
    (_ITEM + "plan/alternatives/", "annotation:plan_alternative_add"),
    (_ITEM + "plan/alternatives/remove/", "annotation:plan_alternative_remove"),
    (_ITEM + "plan/versions/", "annotation:plan_versions"),
    (_ITEM + "plan/versions/<int:number>/", "annotation:plan_version"),
    (_ITEM + "plan/versions/<int:number>/revert/", "annotation:plan_version_revert"),
    # review
    ("review/<int:pk>/disputes/", "review:dispute_list"),
    ("review/<int:pk>/items/<int:item_id>/", "review:adjudicate"),
    (_P + "discard-proposals/", "review:discard_proposals"),
    (_P + "discard-proposals/<int:pk>/decide/", "review:discard_proposal_decide"),
    ("review/<int:pk>/agreement/", "review:agreement"),
    ("review/<int:pk>/agreement/pair/", "review:agreement_pair"),
    (r"^review/(?P<pk>\d+)/judgments\.(?P<fmt>csv|jsonl)$", "review:judgments_export"),
    (_P + "balance/", "review:balance"),
    (_P + "score-plans/", "review:score_plans"),
    (_P + "score-answers/", "review:score_answers"),
    ("agent-runs/<int:pk>/", "review:run_detail"),
    ("agent-runs/<int:pk>/visual/", "review:run_visual"),
    ("agent-runs/<int:pk>/label/", "review:run_label"),
    ("oracle-runs/<int:pk>/", "review:oracle_run"),
    ("oracle-runs/<int:pk>/resume/", "review:oracle_run_resume"),
    ("oracle-results/<int:pk>/", "review:oracle_result"),
    (_P + "score-criteria/new/", "review:criterion_task_new"),
    (_P + "judge-runs/", "review:judge_runs"),
    (_P + "judge-runs/compare/", "review:judge_compare"),
    ("judge-runs/<int:pk>/", "review:judge_run"),
    ("judge-runs/<int:pk>/resume/", "review:judge_run_resume"),
    (_P + "judges/settings/", "review:judge_settings"),
    (_P + "judges/templates/", "review:judge_template_save"),
    (_P + "judges/weights/", "review:judge_weights_save"),
    (_P + "render/", "review:render_answers"),
    ("answers/<int:pk>/rendered/", "review:rendered_answer"),
    ("answers/<int:pk>/rendered/download/", "review:rendered_answer_download"),
    (_ITEM + "releases/", "review:item_release_state"),
]

urlpatterns = [moved(old, to) for old, to in MOVED]
