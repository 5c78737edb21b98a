from django.urls import path, re_path

from review import answer_views, run_views, views

app_name = "review"

urlpatterns = [
    path("review/<int:pk>/disputes/", views.dispute_list, name="dispute_list"),
    path("review/<int:pk>/items/<int:item_pk>/", views.adjudicate, name="adjudicate"),
    path("review/<int:pk>/agreement/", views.agreement, name="agreement"),
    path("projects/<int:pk>/balance/", views.balance, name="balance"),
    path("projects/<int:pk>/score-plans/", views.score_plans, name="score_plans"),
    path("projects/<int:pk>/score-answers/", answer_views.score_answers, name="score_answers"),
    path(
        "score-answers/jobs/<int:pk>/",
        answer_views.score_answers_job,
        name="score_answers_job",
    ),
    path("projects/<int:pk>/runs/", run_views.runs_page, name="runs"),
    path("runs/<int:pk>/", run_views.run_set_detail, name="run_set"),
    path("runs/<int:pk>/rescore/", run_views.run_set_rescore, name="run_set_rescore"),
    path("runs/jobs/<int:pk>/", run_views.runs_job, name="runs_job"),
    path("agent-runs/<int:pk>/", run_views.run_detail, name="run_detail"),
    path("agent-runs/<int:pk>/visual/", run_views.run_visual, name="run_visual"),
    path("agent-runs/<int:pk>/label/", run_views.run_label, name="run_label"),
    re_path(
        r"^review/(?P<pk>\d+)/judgments\.(?P<fmt>csv|jsonl)$",
        views.judgments_export,
        name="judgments_export",
    ),
]
