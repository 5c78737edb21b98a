from django.urls import path, re_path

from benchmark.images import views

urlpatterns = [
    path("projects/<int:project_id>/images/", views.image_list, name="images"),
    path("projects/<int:project_id>/images/preview/", views.image_preview, name="image_preview"),
    path("projects/<int:project_id>/images/derive/", views.image_derive, name="image_derive"),
    re_path(
        r"^projects/(?P<project_id>[0-9]+)/images/(?P<sha256>[0-9a-f]{64})/edit/$",
        views.image_edit,
        name="image_edit",
    ),
    re_path(r"^images/(?P<sha256>[0-9a-f]{64})/$", views.image_file, name="image"),
    re_path(r"^images/(?P<sha256>[0-9a-f]{64})/thumb/$", views.image_thumb, name="image_thumb"),
]
