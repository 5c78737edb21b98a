from django.urls import path

from annotation.model_drafts import views

# Mounted at projects/<project_id>/model-drafts/ (benchmark/routing.py).
project_urlpatterns = [
    # The project's drafts and figures; drafting queries; one draft and its candidates.
    path("", views.model_drafts, name="model_drafts"),
    path("queries/", views.model_draft_queries, name="model_draft_queries"),
    path("<int:pk>/", views.model_draft_detail, name="model_draft_detail"),
    path(
        "<int:pk>/candidates/<int:candidate>/",
        views.model_draft_decide,
        name="model_draft_decide",
    ),
    # Drafting an item's answer, rubric or plan.
    path("items/<int:item_id>/<str:kind>/", views.model_draft_item, name="model_draft_item"),
]
