from django.urls import path

from annotation.judgment_tasks import views

# Mounted at projects/<project_id>/judgment-tasks/ and judgment-tasks/ (benchmark/routing.py).
project_urlpatterns = [
    path("", views.task_list, name="task_list"),
    path("new/", views.task_edit, name="task_new"),
    path("defaults/", views.task_defaults, name="task_defaults"),
    path("<int:pk>/edit/", views.task_edit, name="task_edit"),
]
urlpatterns = [
    # Judging: the next item of a task, one item, one unit.
    path("<int:pk>/next/", views.task_next, name="task_next"),
    path("<int:pk>/next/images/", views.task_next_images, name="task_next_images"),
    path("<int:pk>/next/ahead/", views.task_next_ahead, name="task_next_ahead"),
    path(
        "<int:pk>/next/ahead/release/",
        views.task_next_ahead_release,
        name="task_next_ahead_release",
    ),
    path("<int:pk>/items/<int:item_id>/", views.judge, name="judge"),
    path("<int:pk>/units/<str:unit>/", views.judge_unit, name="judge_unit"),
]
