from django.urls import path

from annotation import tag_views, views

app_name = "annotation"

_RESPONSE = "projects/<int:project>/items/<int:item>/responses/<int:response>/"

urlpatterns = [
    path("projects/<int:pk>/judge/", views.task_list, name="task_list"),
    path("projects/<int:pk>/judge/new/", views.task_edit, name="task_new"),
    path("projects/<int:pk>/judge/defaults/", views.task_defaults, name="task_defaults"),
    path("projects/<int:pk>/judge/<int:task_pk>/edit/", views.task_edit, name="task_edit"),
    path("judge/<int:pk>/next/", views.task_next, name="task_next"),
    path("judge/<int:pk>/items/<int:item_pk>/", views.judge, name="judge"),
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
]
