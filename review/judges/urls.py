from django.urls import path

from review.judges import views

urlpatterns = [
    path("projects/<int:project_id>/judge-runs/", views.judge_runs, name="judge_runs"),
    path(
        "projects/<int:project_id>/judge-runs/compare/",
        views.judge_compare,
        name="judge_compare",
    ),
    path("judge-runs/<int:pk>/", views.judge_run_detail, name="judge_run"),
    path("judge-runs/<int:pk>/resume/", views.judge_run_resume, name="judge_run_resume"),
]
