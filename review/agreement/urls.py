from django.urls import path, re_path

from review.agreement import views

# Mounted at agreement/ (benchmark/routing.py); <pk> is the judgment task.
urlpatterns = [
    path("<int:pk>/", views.agreement, name="agreement"),
    path("<int:pk>/pair/", views.agreement_pair, name="agreement_pair"),
    re_path(
        r"^(?P<pk>\d+)/judgments\.(?P<fmt>csv|jsonl)$",
        views.judgments_export,
        name="judgments_export",
    ),
]
