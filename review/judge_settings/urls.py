from django.urls import path

from review.judge_settings import views

# Mounted at projects/<project_id>/judge-settings/ (benchmark/routing.py).
project_urlpatterns = [
    path("", views.judge_settings, name="judge_settings"),
    path("templates/", views.judge_template_save, name="judge_template_save"),
    path("weights/", views.judge_weights_save, name="judge_weights_save"),
]
