from django.urls import path

from annotation.model_drafts import views

_DRAFTS = "projects/<int:project_id>/drafts/"

urlpatterns = [
    # The project's drafts and figures; drafting queries; one draft and its candidates.
    path(_DRAFTS, views.model_drafts, name="model_drafts"),
    path(_DRAFTS + "queries/", views.model_draft_queries, name="model_draft_queries"),
    path(_DRAFTS + "<int:pk>/", views.model_draft_detail, name="model_draft_detail"),
    path(
        _DRAFTS + "<int:pk>/candidates/<int:candidate>/",
        views.model_draft_decide,
        name="model_draft_decide",
    ),
    # Drafting an item's answer, rubric or plan.
    path(
        "projects/<int:project_id>/items/<int:item_id>/draft/<str:kind>/",
        views.model_draft_item,
        name="model_draft_item",
    ),
]
