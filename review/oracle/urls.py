from django.urls import path

from review.oracle import views

# Mounted at projects/<project_id>/oracle/ and oracle/ (benchmark/routing.py).
project_urlpatterns = [
    path("", views.oracle_page, name="oracle"),
]
urlpatterns = [
    path("runs/<int:pk>/", views.oracle_run_detail, name="oracle_run"),
    path("runs/<int:pk>/resume/", views.oracle_run_resume, name="oracle_run_resume"),
    path("results/<int:pk>/", views.oracle_result_detail, name="oracle_result"),
]
