from django.urls import path

from review.agreement.judge_examples.reports import views

# Included by review.agreement.judge_examples.urls (agreement/judge-examples/): <pk> is the
# "Rate the judge" task.
urlpatterns = [
    path("tasks/<int:pk>/reports/", views.report_cases, name="report_cases"),
    path("tasks/<int:pk>/reports/correct/", views.report_correct, name="report_correct"),
    path("tasks/<int:pk>/reports/add/", views.report_examples_add, name="report_examples_add"),
]
