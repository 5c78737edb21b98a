from django.urls import path

from review.answers import views

# Mounted at projects/<project_id>/answers/ (benchmark/routing.py).
project_urlpatterns = [
    path("", views.score_answers, name="score_answers"),
]
