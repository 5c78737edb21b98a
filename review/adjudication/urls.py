from django.urls import path

from review.adjudication import views

# Mounted at projects/<project_id>/adjudication/ and adjudication/ (benchmark/routing.py).
project_urlpatterns = [
    path("discard-proposals/", views.discard_proposals, name="discard_proposals"),
    path(
        "discard-proposals/<int:pk>/decide/",
        views.discard_proposal_decide,
        name="discard_proposal_decide",
    ),
]
urlpatterns = [
    # <pk> is the judgment task whose disagreements are adjudicated.
    path("<int:pk>/disputes/", views.dispute_list, name="dispute_list"),
    path("<int:pk>/items/<int:item_id>/", views.adjudicate, name="adjudicate"),
]
