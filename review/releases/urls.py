from django.urls import path

from review.releases import views

urlpatterns = [
    path("projects/<int:project_id>/releases/", views.release_list, name="release_list"),
    path(
        "projects/<int:project_id>/releases/compare/", views.release_compare, name="release_compare"
    ),
    path(
        "projects/<int:project_id>/items/<int:item_id>/releases/",
        views.item_release_state,
        name="item_release_state",
    ),
    path(
        "projects/<int:project_id>/releases/<int:pk>/", views.release_detail, name="release_detail"
    ),
    path(
        "projects/<int:project_id>/releases/<int:pk>/verify/",
        views.release_verify,
        name="release_verify",
    ),
    path(
        "projects/<int:project_id>/releases/<int:pk>/download/",
        views.release_download,
        name="release_download",
    ),
]
