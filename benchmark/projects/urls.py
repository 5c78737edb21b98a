from django.urls import path

from benchmark.projects import views

# Mounted at the site's root (benchmark/web_urls.py): every other feature's project pages sit
# below projects/<project_id>/ (benchmark/routing.py).
urlpatterns = [
    path("", views.project_list, name="project_list"),
    path("projects/new/", views.project_create, name="project_create"),
    path("projects/<int:project_id>/", views.project_detail, name="project_detail"),
    path("projects/<int:project_id>/edit/", views.project_edit, name="project_edit"),
    path(
        "projects/<int:project_id>/first-run/dismiss/",
        views.project_first_run_dismiss,
        name="project_first_run_dismiss",
    ),
    path("projects/<int:project_id>/items/<int:item_id>/", views.item_detail, name="item_detail"),
    path(
        "projects/<int:project_id>/items/<int:item_id>/restore/",
        views.item_restore,
        name="item_restore",
    ),
]
