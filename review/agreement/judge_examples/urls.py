from django.urls import include, path

from review.agreement.judge_examples import views

# Mounted at agreement/judge-examples/ (review/urls.py): <pk> is the judgment task (add) or the
# example set.
urlpatterns = [
    path("tasks/<int:pk>/add/", views.judge_examples_add, name="judge_examples_add"),
    path("<int:pk>/", views.example_set_detail, name="example_set"),
    path("<int:pk>/held-back/", views.held_back_start, name="held_back_start"),
    # Corrected reports of a "Rate the judge" task (MAM agents, LLM-I judges).
    path("", include("review.agreement.judge_examples.reports.urls")),
]
