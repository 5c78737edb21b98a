from django.urls import path

from benchmark.toolsets import views

urlpatterns = [
    path("projects/<int:project_id>/toolset/", views.toolset_detail, name="toolset"),
]
