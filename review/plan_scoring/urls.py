from django.urls import path

from review.plan_scoring import views

# Mounted at projects/<project_id>/plan-scoring/ (benchmark/routing.py).
project_urlpatterns = [
    path("", views.score_plans, name="score_plans"),
    path("balance/", views.balance, name="balance"),
]
