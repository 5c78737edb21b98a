from django.urls import path

from review.plan_scoring import views

urlpatterns = [
    path("projects/<int:project_id>/balance/", views.balance, name="balance"),
    path("projects/<int:project_id>/score-plans/", views.score_plans, name="score_plans"),
]
