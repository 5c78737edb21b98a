from django.urls import path

from annotation.bulk_actions import views

# Mounted at projects/<project_id>/bulk-actions/ (benchmark/routing.py).
project_urlpatterns = [
    path("", views.bulk_action, name="bulk_action"),
]
