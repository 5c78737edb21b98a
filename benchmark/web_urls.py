"""The benchmark app's pages, one ``urls.py`` per feature package, each mounted under the
prefix that names it (``benchmark/routing.py``)."""

from django.urls import include, path

from benchmark.routing import feature_urls

app_name = "benchmark"

urlpatterns = [
    # The site's root: the project list, a project's page and an item's page.
    path("", include("benchmark.projects.urls")),
    *feature_urls("datasets", "benchmark.datasets.urls"),
    *feature_urls("jobs", "benchmark.jobs.urls"),
    *feature_urls("llm", "benchmark.llm.urls"),
    *feature_urls("toolsets", "benchmark.toolsets.urls"),
    *feature_urls("images", "benchmark.images.urls"),
    *feature_urls("audio", "benchmark.audio.urls"),
    *feature_urls("items", "benchmark.items.urls"),
    *feature_urls("saved-filters", "benchmark.saved_filters.urls"),
    *feature_urls("people", "benchmark.people.urls"),
    *feature_urls("api-tokens", "benchmark.api_tokens.urls"),
    *feature_urls("input-drafts", "benchmark.input_drafts.urls"),
]
