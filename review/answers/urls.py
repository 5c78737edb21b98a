from django.urls import path

from review.answers import views

urlpatterns = [
    path("projects/<int:project_id>/score-answers/", views.score_answers, name="score_answers"),
]
