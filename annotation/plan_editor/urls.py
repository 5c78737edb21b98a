from django.urls import path

from annotation.plan_editor import views

_ITEM = "items/<int:item_id>/"

# Mounted at projects/<project_id>/plan-editor/ (benchmark/routing.py).
project_urlpatterns = [
    # An item's plan (?key= for an alternative): the editor, its live check, alternatives,
    # and the history with revert.
    path(_ITEM, views.plan_edit, name="plan_edit"),
    path(_ITEM + "findings/", views.plan_findings, name="plan_findings"),
    path(_ITEM + "alternatives/", views.plan_alternative_add, name="plan_alternative_add"),
    path(
        _ITEM + "alternatives/remove/",
        views.plan_alternative_remove,
        name="plan_alternative_remove",
    ),
    path(_ITEM + "versions/", views.plan_versions, name="plan_versions"),
    path(_ITEM + "versions/<int:number>/", views.plan_version, name="plan_version"),
    path(
        _ITEM + "versions/<int:number>/revert/",
        views.plan_version_revert,
        name="plan_version_revert",
    ),
]
