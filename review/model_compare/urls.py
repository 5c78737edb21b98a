from django.urls import path

from review.model_compare import views

# Mounted at projects/<project_id>/model-compare/ (benchmark/routing.py).
project_urlpatterns = [
    path("", views.model_compare, name="model_compare"),
]
