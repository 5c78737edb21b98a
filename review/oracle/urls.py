from django.urls import path

from review.oracle import views

urlpatterns = [
    path("projects/<int:project_id>/oracle/", views.oracle_page, name="oracle"),
    path("oracle-runs/<int:pk>/", views.oracle_run_detail, name="oracle_run"),
    path("oracle-runs/<int:pk>/resume/", views.oracle_run_resume, name="oracle_run_resume"),
    path("oracle-results/<int:pk>/", views.oracle_result_detail, name="oracle_result"),
]
