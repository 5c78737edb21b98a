from django.urls import path

from benchmark.saved_filters import views

# Mounted at projects/<project_id>/saved-filters/ (benchmark/routing.py).
project_urlpatterns = [
    path("", views.saved_filters, name="saved_filters"),
    path("<int:pk>/delete/", views.saved_filter_delete, name="saved_filter_delete"),
]
