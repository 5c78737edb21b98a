from django.urls import path, re_path

from review.evaluation import views

urlpatterns = [
    path("projects/<int:project_id>/evaluation/", views.evaluation_page, name="evaluation"),
    path("projects/<int:project_id>/leaderboard/", views.leaderboard, name="leaderboard"),
    path("evaluation-runs/<int:pk>/", views.evaluation_run_detail, name="evaluation_run"),
    path(
        "evaluation-runs/<int:pk>/resume/",
        views.evaluation_run_resume,
        name="evaluation_run_resume",
    ),
    path(
        "evaluation-runs/<int:pk>/cancel/",
        views.evaluation_run_cancel,
        name="evaluation_run_cancel",
    ),
    path(
        "evaluation-runs/<int:pk>/items/<int:item_id>/",
        views.evaluation_result,
        name="evaluation_result",
    ),
    re_path(
        r"^evaluation-runs/(?P<pk>[0-9]+)/files/(?P<sha256>[0-9a-f]{64})/$",
        views.evaluation_file,
        name="evaluation_file",
    ),
]
