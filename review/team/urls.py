from django.urls import path

from review.team import views

# Mounted at projects/<project_id>/team/ (benchmark/routing.py).
project_urlpatterns = [
    path("", views.team, name="team"),
]
