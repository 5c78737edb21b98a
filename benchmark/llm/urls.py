from django.urls import path

from benchmark.llm import views

urlpatterns = [
    path("jobs/<int:pk>/retry/", views.job_retry, name="job_retry"),
    path(
        "projects/<int:project_id>/items/<int:item_id>/model/", views.item_model, name="item_model"
    ),
]
