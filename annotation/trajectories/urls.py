from django.urls import path

from annotation.trajectories import views

_TRAJECTORY = "projects/<int:project_id>/items/<int:item_id>/trajectory/"

urlpatterns = [
    # The editor: steps, checkpoints, answer, efficiency; its history, one version, revert.
    path(_TRAJECTORY, views.trajectory_edit, name="trajectory_edit"),
    path(_TRAJECTORY + "versions/", views.trajectory_versions, name="trajectory_versions"),
    path(
        _TRAJECTORY + "versions/<int:number>/", views.trajectory_version, name="trajectory_version"
    ),
    path(
        _TRAJECTORY + "versions/<int:number>/revert/",
        views.trajectory_version_revert,
        name="trajectory_version_revert",
    ),
]
