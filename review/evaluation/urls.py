from django.urls import path, re_path

from review.evaluation import views

# Mounted by review/urls.py under "evaluation" (benchmark/routing.py): a project's pages at
# /projects/<id>/evaluation/..., a run's pages at /evaluation/runs/<pk>/...
project_urlpatterns = [
    path("", views.evaluation_page, name="evaluation"),
    path("leaderboard/", views.leaderboard, name="leaderboard"),
    path("pilot/", views.evaluation_pilot, name="evaluation_pilot"),
]

urlpatterns = [
    path("runs/<int:pk>/", views.evaluation_run_detail, name="evaluation_run"),
    path("runs/<int:pk>/resume/", views.evaluation_run_resume, name="evaluation_run_resume"),
    path("runs/<int:pk>/cancel/", views.evaluation_run_cancel, name="evaluation_run_cancel"),
    path("runs/<int:pk>/judge/", views.evaluation_run_judge, name="evaluation_run_judge"),
    path("runs/<int:pk>/items/<int:item_id>/", views.evaluation_result, name="evaluation_result"),
    re_path(
        r"^runs/(?P<pk>[0-9]+)/files/(?P<sha256>[0-9a-f]{64})/$",
        views.evaluation_file,
        name="evaluation_file",
    ),
]
