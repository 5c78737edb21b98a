from django.urls import path

from review.answer_rendering import views

# Mounted at projects/<project_id>/answer-rendering/ and answer-rendering/
# (benchmark/routing.py); <pk> is the rendered answer (a response).
project_urlpatterns = [
    path("", views.render_answers, name="render_answers"),
]
urlpatterns = [
    path("<int:pk>/", views.rendered_answer, name="rendered_answer"),
    path("<int:pk>/download/", views.rendered_answer_download, name="rendered_answer_download"),
]
