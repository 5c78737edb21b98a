from django.urls import path

from review.judge_settings import views

urlpatterns = [
    path("projects/<int:project_id>/judges/settings/", views.judge_settings, name="judge_settings"),
    path(
        "projects/<int:project_id>/judges/templates/",
        views.judge_template_save,
        name="judge_template_save",
    ),
    path(
        "projects/<int:project_id>/judges/weights/",
        views.judge_weights_save,
        name="judge_weights_save",
    ),
]
