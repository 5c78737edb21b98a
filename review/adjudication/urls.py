from django.urls import path

from review.adjudication import views

urlpatterns = [
    path("review/<int:pk>/disputes/", views.dispute_list, name="dispute_list"),
    path("review/<int:pk>/items/<int:item_id>/", views.adjudicate, name="adjudicate"),
    path(
        "projects/<int:project_id>/discard-proposals/",
        views.discard_proposals,
        name="discard_proposals",
    ),
    path(
        "projects/<int:project_id>/discard-proposals/<int:pk>/decide/",
        views.discard_proposal_decide,
        name="discard_proposal_decide",
    ),
]
