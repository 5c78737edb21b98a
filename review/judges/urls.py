from django.urls import path

from review.judges import views

# Mounted at projects/<project_id>/judges/ and judges/ (benchmark/routing.py).
project_urlpatterns = [
    path("", views.judge_runs, name="judge_runs"),
    path("compare/", views.judge_compare, name="judge_compare"),
]
urlpatterns = [
    path("runs/<int:pk>/", views.judge_run_detail, name="judge_run"),
    path("runs/<int:pk>/resume/", views.judge_run_resume, name="judge_run_resume"),
]
