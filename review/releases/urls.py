from django.urls import path

from review.releases import views

# Mounted at projects/<project_id>/releases/ (benchmark/routing.py).
project_urlpatterns = [
    path("", views.release_list, name="release_list"),
    path("compare/", views.release_compare, name="release_compare"),
    path("items/<int:item_id>/", views.item_release_state, name="item_release_state"),
    path("<int:pk>/", views.release_detail, name="release_detail"),
    path("<int:pk>/verify/", views.release_verify, name="release_verify"),
    path("<int:pk>/download/", views.release_download, name="release_download"),
]
