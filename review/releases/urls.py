from django.urls import path

from review.releases import views

urlpatterns = [
    path("projects/<int:project_id>/releases/", views.release_list, name="release_list"),
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
