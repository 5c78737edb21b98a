"""What annotators do, one ``urls.py`` per feature package, each mounted under the prefix that
names it (``benchmark/routing.py``)."""

from benchmark.routing import feature_urls

app_name = "annotation"

urlpatterns = [
    *feature_urls("judgment-tasks", "annotation.judgment_tasks.urls"),
    *feature_urls("verification", "annotation.verification.urls"),
    *feature_urls("tag-review", "annotation.tag_review.urls"),
    *feature_urls("backward-drafting", "annotation.backward_drafting.urls"),
    *feature_urls("model-drafts", "annotation.model_drafts.urls"),
    *feature_urls("trajectories", "annotation.trajectories.urls"),
    *feature_urls("bulk-actions", "annotation.bulk_actions.urls"),
    *feature_urls("plan-editor", "annotation.plan_editor.urls"),
    *feature_urls("judgment-tasks/doubt", "annotation.judgment_tasks.doubt.urls"),
]
