from django.urls import path

from benchmark.jobs import views

urlpatterns = [
    path("jobs/<int:pk>/", views.job_detail, name="job_detail"),
    path("jobs/<int:pk>/cancel/", views.job_cancel, name="job_cancel"),
]
