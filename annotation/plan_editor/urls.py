from django.urls import path

from annotation.plan_editor import views

_PLAN = "projects/<int:project_id>/items/<int:item_id>/plan/"

urlpatterns = [
    # An item's plan (?key= for an alternative): the editor, its live check, alternatives,
    # and the history with revert.
    path(_PLAN, views.plan_edit, name="plan_edit"),
    path(_PLAN + "findings/", views.plan_findings, name="plan_findings"),
    path(_PLAN + "alternatives/", views.plan_alternative_add, name="plan_alternative_add"),
    path(
        _PLAN + "alternatives/remove/",
        views.plan_alternative_remove,
        name="plan_alternative_remove",
    ),
    path(_PLAN + "versions/", views.plan_versions, name="plan_versions"),
    path(_PLAN + "versions/<int:number>/", views.plan_version, name="plan_version"),
    path(
        _PLAN + "versions/<int:number>/revert/",
        views.plan_version_revert,
        name="plan_version_revert",
    ),
]
