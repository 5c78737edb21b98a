from django.urls import path, re_path

from benchmark.images import views

_SHA256 = r"(?P<sha256>[0-9a-f]{64})"

# Mounted at projects/<project_id>/images/ and images/ (benchmark/routing.py).
project_urlpatterns = [
    path("", views.image_list, name="images"),
    path("preview/", views.image_preview, name="image_preview"),
    path("derive/", views.image_derive, name="image_derive"),
    re_path(rf"^{_SHA256}/edit/$", views.image_edit, name="image_edit"),
]
urlpatterns = [
    re_path(rf"^{_SHA256}/$", views.image_file, name="image"),
    re_path(rf"^{_SHA256}/thumb/$", views.image_thumb, name="image_thumb"),
]
