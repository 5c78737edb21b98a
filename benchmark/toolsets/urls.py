from django.urls import path

from benchmark.toolsets import views

# Mounted at projects/<project_id>/toolsets/ (benchmark/routing.py).
project_urlpatterns = [
    path("", views.toolset_detail, name="toolset"),
]
