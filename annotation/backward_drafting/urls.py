from django.urls import path

from annotation.backward_drafting import views

_DRAFTING = "projects/<int:project_id>/items/<int:item_id>/drafting/"

urlpatterns = [
    # An item's sessions, one session's steps.
    path(_DRAFTING, views.drafting_list, name="drafting_list"),
    path(_DRAFTING + "<int:pk>/", views.drafting_session, name="drafting_session"),
    path(_DRAFTING + "<int:pk>/describe/", views.drafting_describe, name="drafting_describe"),
    path(_DRAFTING + "<int:pk>/crop/", views.drafting_crop, name="drafting_crop"),
    path(_DRAFTING + "<int:pk>/calls/<int:call>/mark/", views.drafting_mark, name="drafting_mark"),
    path(_DRAFTING + "<int:pk>/draft/", views.drafting_draft, name="drafting_draft"),
]
