from django.urls import path

from review.runs import views

urlpatterns = [
    path("projects/<int:project_id>/runs/", views.runs_page, name="runs"),
    path("runs/<int:pk>/", views.run_set_detail, name="run_set"),
    path("runs/<int:pk>/rescore/", views.run_set_rescore, name="run_set_rescore"),
    path("agent-runs/<int:pk>/", views.run_detail, name="run_detail"),
    path("agent-runs/<int:pk>/visual/", views.run_visual, name="run_visual"),
    path("agent-runs/<int:pk>/label/", views.run_label, name="run_label"),
]
