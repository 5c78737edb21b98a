from django.urls import path

from review.answer_rendering import views

urlpatterns = [
    path("projects/<int:project_id>/render/", views.render_answers, name="render_answers"),
    path("answers/<int:pk>/rendered/", views.rendered_answer, name="rendered_answer"),
    path(
        "answers/<int:pk>/rendered/download/",
        views.rendered_answer_download,
        name="rendered_answer_download",
    ),
]
