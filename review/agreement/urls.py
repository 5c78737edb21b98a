from django.urls import path, re_path

from review.agreement import views

urlpatterns = [
    path("review/<int:pk>/agreement/", views.agreement, name="agreement"),
    re_path(
        r"^review/(?P<pk>\d+)/judgments\.(?P<fmt>csv|jsonl)$",
        views.judgments_export,
        name="judgments_export",
    ),
]
