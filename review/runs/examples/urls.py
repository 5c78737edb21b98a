from django.urls import path

from review.runs.examples import views

# Included by review.runs.urls (runs/): <pk> is the upload (add) or the example set.
urlpatterns = [
    path("<int:pk>/examples/add/", views.check_examples_add, name="check_examples_add"),
    path("examples/<int:pk>/", views.check_example_set, name="check_example_set"),
    path("examples/<int:pk>/held-back/", views.check_held_back_start, name="check_held_back_start"),
]
