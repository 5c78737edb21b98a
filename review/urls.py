"""What reviewers do, one ``urls.py`` per feature package, each mounted under the prefix that
names it (``benchmark/routing.py``)."""

from benchmark.routing import feature_urls

app_name = "review"

urlpatterns = [
    *feature_urls("adjudication", "review.adjudication.urls"),
    *feature_urls("agreement", "review.agreement.urls"),
    *feature_urls("plan-scoring", "review.plan_scoring.urls"),
    *feature_urls("answers", "review.answers.urls"),
    *feature_urls("runs", "review.runs.urls"),
    *feature_urls("oracle", "review.oracle.urls"),
    *feature_urls("rate-judge", "review.rate_judge.urls"),
    *feature_urls("judges", "review.judges.urls"),
    *feature_urls("evaluation", "review.evaluation.urls"),
    *feature_urls("model-compare", "review.model_compare.urls"),
    *feature_urls("judge-settings", "review.judge_settings.urls"),
    *feature_urls("agreement/judge-examples", "review.agreement.judge_examples.urls"),
    *feature_urls("human-eval", "review.human_eval.urls"),
    *feature_urls("answer-rendering", "review.answer_rendering.urls"),
    *feature_urls("team", "review.team.urls"),
    *feature_urls("gold", "review.gold.urls"),
    *feature_urls("releases", "review.releases.urls"),
]
