from django.urls import path

from benchmark import views

app_name = "benchmark"

urlpatterns = [
    path("", views.project_list, name="project_list"),
]
