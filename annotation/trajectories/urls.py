from django.urls import path

from annotation.trajectories import views

_ITEM = "items/<int:item_id>/"

# Mounted at projects/<project_id>/trajectories/ (benchmark/routing.py).
project_urlpatterns = [
    # The editor: steps, checkpoints, answer, efficiency; its history, one version, revert.
    path(_ITEM, views.trajectory_edit, name="trajectory_edit"),
    path(_ITEM + "versions/", views.trajectory_versions, name="trajectory_versions"),
    path(_ITEM + "versions/<int:number>/", views.trajectory_version, name="trajectory_version"),
    path(
        _ITEM + "versions/<int:number>/revert/",
        views.trajectory_version_revert,
        name="trajectory_version_revert",
    ),
]
