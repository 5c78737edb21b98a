from django.urls import path

from benchmark.jobs import views

urlpatterns = [
    path("jobs/<int:pk>/", views.job_detail, name="job_detail"),
]
