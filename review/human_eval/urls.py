from django.urls import path, re_path

from review.human_eval import views

urlpatterns = [
    path("projects/<int:project_id>/human-eval/new/", views.human_eval_new, name="human_eval_new"),
    path("human-eval/<int:pk>/", views.human_eval_results, name="human_eval_results"),
    re_path(
        r"^human-eval/(?P<pk>\d+)/ratings\.(?P<fmt>csv|jsonl)$",
        views.human_eval_export,
        name="human_eval_export",
    ),
]
