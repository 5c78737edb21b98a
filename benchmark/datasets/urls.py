from django.urls import path

from benchmark.datasets import views

# Mounted at projects/<project_id>/datasets/ (benchmark/routing.py).
project_urlpatterns = [
    path("import/", views.project_import, name="project_import"),
    path("export/", views.project_export, name="project_export"),
]
