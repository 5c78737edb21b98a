from django.urls import include, path

from review.runs import views

# Mounted at projects/<project_id>/runs/ and runs/ (benchmark/routing.py).
project_urlpatterns = [
    path("", views.runs_page, name="runs"),
]
urlpatterns = [
    # One scored upload of run folders; one agent's run on one item.
    path("<int:pk>/", views.run_set_detail, name="run_set"),
    path("<int:pk>/rescore/", views.run_set_rescore, name="run_set_rescore"),
    path("agent-runs/<int:pk>/", views.run_detail, name="run_detail"),
    path("agent-runs/<int:pk>/visual/", views.run_visual, name="run_visual"),
    path("agent-runs/<int:pk>/search/", views.run_search, name="run_search"),
    path("agent-runs/<int:pk>/label/", views.run_label, name="run_label"),
    # Correction cases of the S and V judges become worked examples.
    path("", include("review.runs.examples.urls")),
]
