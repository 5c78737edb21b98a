from django.urls import path

from review.adjudication import views

urlpatterns = [
    path("review/<int:pk>/disputes/", views.dispute_list, name="dispute_list"),
    path("review/<int:pk>/items/<int:item_id>/", views.adjudicate, name="adjudicate"),
]
