from django.urls import path

from annotation.backward_drafting import views

_ITEM = "items/<int:item_id>/"

# Mounted at projects/<project_id>/backward-drafting/ (benchmark/routing.py).
project_urlpatterns = [
    # An item's sessions, one session's steps.
    path(_ITEM, views.drafting_list, name="drafting_list"),
    path(_ITEM + "<int:pk>/", views.drafting_session, name="drafting_session"),
    path(_ITEM + "<int:pk>/describe/", views.drafting_describe, name="drafting_describe"),
    path(_ITEM + "<int:pk>/crop/", views.drafting_crop, name="drafting_crop"),
    path(_ITEM + "<int:pk>/calls/<int:call>/mark/", views.drafting_mark, name="drafting_mark"),
    path(_ITEM + "<int:pk>/draft/", views.drafting_draft, name="drafting_draft"),
]
