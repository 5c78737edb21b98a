from django.urls import path

from review.gold import views

# Mounted at gold/ (benchmark/routing.py); <pk> is the judgment task.
urlpatterns = [
    path("<int:pk>/", views.gold_page, name="gold"),
    path("<int:pk>/mark/", views.gold_mark, name="gold_mark"),
    path("<int:pk>/items/<int:item_id>/unmark/", views.gold_unmark, name="gold_unmark"),
    path("<int:pk>/people/<int:user_id>/pause/", views.queue_pause, name="gold_pause"),
    path("<int:pk>/people/<int:user_id>/resume/", views.queue_resume, name="gold_resume"),
    path(
        "<int:pk>/people/<int:user_id>/send-back/",
        views.judgments_send_back,
        name="gold_send_back",
    ),
]
