from django.urls import path

from review.api import views

urlpatterns = [
    path(
        "judgment-tasks/<int:pk>/agreement/", views.task_agreement, name="judgment-task-agreement"
    ),
]
