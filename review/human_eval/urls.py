from django.urls import path, re_path

from review.human_eval import views

# Mounted at projects/<project_id>/human-eval/ and human-eval/ (benchmark/routing.py).
project_urlpatterns = [
    path("new/", views.human_eval_new, name="human_eval_new"),
]
urlpatterns = [
    path("<int:pk>/", views.human_eval_results, name="human_eval_results"),
    re_path(
        r"^(?P<pk>\d+)/ratings\.(?P<fmt>csv|jsonl)$",
        views.human_eval_export,
        name="human_eval_export",
    ),
]
