from django.urls import path

from benchmark.api_tokens import views

urlpatterns = [
    path("account/tokens/", views.api_tokens, name="api_tokens"),
    path(
        "account/tokens/<int:token_id>/revoke/",
        views.api_token_revoke,
        name="api_token_revoke",
    ),
]
