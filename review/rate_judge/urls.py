from django.urls import path

from review.rate_judge import views

# Mounted at projects/<project_id>/rate-judge/ (benchmark/routing.py).
project_urlpatterns = [
    path("new/", views.rate_judge_new, name="rate_judge_new"),
    path("score-criteria/new/", views.criterion_task_new, name="criterion_task_new"),
]
