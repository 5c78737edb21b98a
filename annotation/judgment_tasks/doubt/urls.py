from django.urls import path

from annotation.judgment_tasks.doubt import views

# Mounted at judgment-tasks/doubt/ (annotation/urls.py); <pk> is the judgment task.
urlpatterns = [
    path("<int:pk>/recompute/", views.doubt_recompute, name="doubt_recompute"),
]
