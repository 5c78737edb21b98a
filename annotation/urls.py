"""What annotators do, one ``urls.py`` per feature package."""

from django.urls import include, path

app_name = "annotation"

urlpatterns = [
    path("", include("annotation.judgment_tasks.urls")),
    path("", include("annotation.verification.urls")),
    path("", include("annotation.tag_review.urls")),
    path("", include("annotation.backward_drafting.urls")),
    path("", include("annotation.model_drafts.urls")),
    path("", include("annotation.trajectories.urls")),
    path("", include("annotation.bulk_actions.urls")),
    path("", include("annotation.plan_editor.urls")),
]
