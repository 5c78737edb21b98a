"""What reviewers do, one ``urls.py`` per feature package."""

from django.urls import include, path

app_name = "review"

urlpatterns = [
    path("", include("review.adjudication.urls")),
    path("", include("review.agreement.urls")),
    path("", include("review.plan_scoring.urls")),
    path("", include("review.answers.urls")),
    path("", include("review.runs.urls")),
    path("", include("review.oracle.urls")),
    path("", include("review.rate_judge.urls")),
    path("", include("review.judges.urls")),
    path("", include("review.evaluation.urls")),
    path("", include("review.judge_settings.urls")),
    path("", include("review.human_eval.urls")),
    path("", include("review.answer_rendering.urls")),
    path("", include("review.team.urls")),
    path("", include("review.releases.urls")),
]
