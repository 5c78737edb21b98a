from django.urls import path

from annotation.tag_review import views

_RESPONSE = "items/<int:item_id>/responses/<int:response_id>/"

# Mounted at projects/<project_id>/tag-review/ (benchmark/routing.py).
project_urlpatterns = [
    # One answer's tool calls, its versions, discarding the sample; the project's statistics.
    path(_RESPONSE + "review/", views.review, name="tag_review"),
    path(_RESPONSE + "discard/", views.discard, name="tag_discard"),
    path(_RESPONSE + "versions/", views.versions, name="tag_versions"),
    path(_RESPONSE + "versions/<int:number>/", views.version_detail, name="tag_version"),
    path(
        _RESPONSE + "versions/<int:number>/revert/",
        views.version_revert,
        name="tag_version_revert",
    ),
    path("decisions/", views.stats, name="tag_stats"),
]
