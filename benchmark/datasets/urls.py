from django.urls import path

from benchmark.datasets import views

urlpatterns = [
    path("projects/<int:project_id>/import/", views.project_import, name="project_import"),
    path("projects/<int:project_id>/export/", views.project_export, name="project_export"),
]
