from django.urls import path

from review.team import views

urlpatterns = [
    path("projects/<int:project_id>/team/", views.team, name="team"),
]
