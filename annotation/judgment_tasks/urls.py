from django.urls import path

from annotation.judgment_tasks import views

urlpatterns = [
    path("projects/<int:project_id>/judge/", views.task_list, name="task_list"),
    path("projects/<int:project_id>/judge/new/", views.task_edit, name="task_new"),
    path("projects/<int:project_id>/judge/defaults/", views.task_defaults, name="task_defaults"),
    path("projects/<int:project_id>/judge/<int:pk>/edit/", views.task_edit, name="task_edit"),
    path("judge/<int:pk>/next/", views.task_next, name="task_next"),
    path("judge/<int:pk>/items/<int:item_id>/", views.judge, name="judge"),
    path("judge/<int:pk>/units/<str:unit>/", views.judge_unit, name="judge_unit"),
]
