from django.urls import path

from benchmark.items import views

# Mounted at projects/<project_id>/items/ (benchmark/routing.py); the item page itself,
# projects/<project_id>/items/<item_id>/, is the projects feature's.
project_urlpatterns = [
    path("new/", views.item_new, name="item_new"),
    path("<int:item_id>/edit/", views.item_edit, name="item_edit"),
    path("<int:item_id>/history/", views.item_history, name="item_history"),
    path("<int:item_id>/history/<int:number>/revert/", views.item_revert, name="item_revert"),
]
