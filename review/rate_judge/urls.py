from django.urls import path

from review.rate_judge import views

urlpatterns = [
    path("projects/<int:project_id>/rate-judge/new/", views.rate_judge_new, name="rate_judge_new"),
    path(
        "projects/<int:project_id>/score-criteria/new/",
        views.criterion_task_new,
        name="criterion_task_new",
    ),
]
