from django.urls import path

from annotation.bulk_actions import views

urlpatterns = [
    path("projects/<int:project_id>/items/bulk/", views.bulk_action, name="bulk_action"),
]
