"""The benchmark app's pages, one ``urls.py`` per feature package."""

from django.urls import include, path

app_name = "benchmark"

urlpatterns = [
    path("", include("benchmark.projects.urls")),
    path("", include("benchmark.datasets.urls")),
    path("", include("benchmark.jobs.urls")),
    path("", include("benchmark.llm.urls")),
    path("", include("benchmark.toolsets.urls")),
    path("", include("benchmark.images.urls")),
    path("", include("benchmark.items.urls")),
    path("", include("benchmark.people.urls")),
    path("", include("benchmark.api_tokens.urls")),
]
