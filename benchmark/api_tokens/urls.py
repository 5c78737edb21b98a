from django.urls import path

from benchmark.api_tokens import views

# Mounted at api-tokens/ (benchmark/routing.py).
urlpatterns = [
    path("", views.api_tokens, name="api_tokens"),
    path("<int:token_id>/revoke/", views.api_token_revoke, name="api_token_revoke"),
]
