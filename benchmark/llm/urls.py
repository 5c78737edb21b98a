from django.urls import path

from benchmark.llm import views

# Mounted at projects/<project_id>/llm/ and llm/ (benchmark/routing.py).
project_urlpatterns = [
    path("items/<int:item_id>/", views.item_model, name="item_model"),
]
urlpatterns = [
    path("jobs/<int:pk>/retry/", views.job_retry, name="job_retry"),
]
