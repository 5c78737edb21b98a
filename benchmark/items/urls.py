from django.urls import path

from benchmark.items import views

_ITEM = "projects/<int:project_id>/items/<int:item_id>/"

urlpatterns = [
    path("projects/<int:project_id>/items/new/", views.item_new, name="item_new"),
    path(_ITEM + "edit/", views.item_edit, name="item_edit"),
    path(_ITEM + "history/", views.item_history, name="item_history"),
    path(_ITEM + "history/<int:number>/revert/", views.item_revert, name="item_revert"),
]
