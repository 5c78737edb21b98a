from django.urls import path

from benchmark.input_drafts import views

# Mounted at input-drafts/ (benchmark/routing.py).
urlpatterns = [
    # One form's unsaved input of the logged-in user: read, autosave, discard.
    path("<str:key>/", views.input_draft, name="input_draft"),
]
