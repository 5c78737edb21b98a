from django.urls import path

from annotation import drafting_views, tag_views, trajectory_views, verification_views, views

app_name = "annotation"

_RESPONSE = "projects/<int:project>/items/<int:item>/responses/<int:response>/"
_DRAFTING = "projects/<int:project>/items/<int:item>/drafting/"

urlpatterns = [
    path("projects/<int:pk>/judge/", views.task_list, name="task_list"),
    path("projects/<int:pk>/judge/new/", views.task_edit, name="task_new"),
    path("projects/<int:pk>/judge/defaults/", views.task_defaults, name="task_defaults"),
    path("projects/<int:pk>/judge/<int:task_pk>/edit/", views.task_edit, name="task_edit"),
    path("judge/<int:pk>/next/", views.task_next, name="task_next"),
    path("judge/<int:pk>/items/<int:item_pk>/", views.judge, name="judge"),
    # Blind verification (verification_views): the audit after answering, reviewers' overview.
    path(
        "judge/<int:pk>/items/<int:item_pk>/audit/",
        verification_views.audit,
        name="verify_audit",
    ),
    path("judge/<int:pk>/audits/", verification_views.audit_list, name="verify_audits"),
    # Tag review (tag_views): one answer's tool calls, its versions, discarding the sample.
    path(_RESPONSE + "review/", tag_views.review, name="tag_review"),
    path(_RESPONSE + "discard/", tag_views.discard, name="tag_discard"),
    path(_RESPONSE + "versions/", tag_views.versions, name="tag_versions"),
    path(_RESPONSE + "versions/<int:number>/", tag_views.version_detail, name="tag_version"),
    path(
        _RESPONSE + "versions/<int:number>/revert/",
        tag_views.version_revert,
        name="tag_version_revert",
    ),
    path("projects/<int:project>/tag-decisions/", tag_views.stats, name="tag_stats"),
    # Backward drafting with a model (drafting_views): an item's sessions, one session's steps.
    path(_DRAFTING, drafting_views.drafting_list, name="drafting_list"),
    path(_DRAFTING + "<int:pk>/", drafting_views.drafting_session, name="drafting_session"),
    path(
        _DRAFTING + "<int:pk>/describe/",
        drafting_views.drafting_describe,
        name="drafting_describe",
    ),
    path(_DRAFTING + "<int:pk>/crop/", drafting_views.drafting_crop, name="drafting_crop"),
    path(
        _DRAFTING + "<int:pk>/calls/<int:call>/mark/",
        drafting_views.drafting_mark,
        name="drafting_mark",
    ),
    path(_DRAFTING + "<int:pk>/draft/", drafting_views.drafting_draft, name="drafting_draft"),
    # Reference trajectory editor (trajectory_views): steps, checkpoints, answer, efficiency.
    path(
        "projects/<int:project>/items/<int:item>/trajectory/",
        trajectory_views.trajectory_edit,
        name="trajectory_edit",
    ),
    # Its history: every version, one version with its difference, revert.
    path(
        "projects/<int:project>/items/<int:item>/trajectory/versions/",
        trajectory_views.trajectory_versions,
        name="trajectory_versions",
    ),
    path(
        "projects/<int:project>/items/<int:item>/trajectory/versions/<int:number>/",
        trajectory_views.trajectory_version,
        name="trajectory_version",
    ),
    path(
        "projects/<int:project>/items/<int:item>/trajectory/versions/<int:number>/revert/",
        trajectory_views.trajectory_version_revert,
        name="trajectory_version_revert",
    ),
]
