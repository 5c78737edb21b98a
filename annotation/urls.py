from django.urls import path

from annotation import views

app_name = "annotation"

urlpatterns = [
    path("projects/<int:pk>/judge/", views.task_list, name="task_list"),
    path("judge/<int:pk>/next/", views.task_next, name="task_next"),
    path("judge/<int:pk>/items/<int:item_pk>/", views.judge, name="judge"),
]
