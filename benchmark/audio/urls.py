from django.urls import path, re_path

from benchmark.audio import views

# Mounted at projects/<project_id>/audio/ and audio/ (benchmark/routing.py).
project_urlpatterns = [
    path("items/<int:item_id>/attach/", views.audio_attach, name="audio_attach"),
]
urlpatterns = [
    re_path(r"^(?P<sha256>[0-9a-f]{64})/$", views.audio_file, name="audio"),
]
