from django.urls import path, re_path

from review.agreement import views

urlpatterns = [
    path("review/<int:pk>/agreement/", views.agreement, name="agreement"),
    path("review/<int:pk>/agreement/pair/", views.agreement_pair, name="agreement_pair"),
    re_path(
        r"^review/(?P<pk>\d+)/judgments\.(?P<fmt>csv|jsonl)$",
        views.judgments_export,
        name="judgments_export",
    ),
]
