from django.urls import path, re_path

from review import views

app_name = "review"

urlpatterns = [
    path("review/<int:pk>/disputes/", views.dispute_list, name="dispute_list"),
    path("review/<int:pk>/items/<int:item_pk>/", views.adjudicate, name="adjudicate"),
    path("review/<int:pk>/agreement/", views.agreement, name="agreement"),
    path("projects/<int:pk>/balance/", views.balance, name="balance"),
    path("projects/<int:pk>/score-plans/", views.score_plans, name="score_plans"),
    re_path(
        r"^review/(?P<pk>\d+)/judgments\.(?P<fmt>csv|jsonl)$",
        views.judgments_export,
        name="judgments_export",
    ),
]
