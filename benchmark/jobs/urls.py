from django.urls import path

from benchmark.jobs import views

# Mounted at jobs/ (benchmark/routing.py).
urlpatterns = [
    path("<int:pk>/", views.job_detail, name="job_detail"),
    path("<int:pk>/cancel/", views.job_cancel, name="job_cancel"),
]
