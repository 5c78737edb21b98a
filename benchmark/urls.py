"""The root URLconf: each app's pages (each feature under the prefix naming it, see
``benchmark/routing.py`` and docs/reference/urls.md), the REST API under ``api/``, the login
pages and the admin site, then the old paths that redirect to where their pages moved."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("benchmark.web_urls")),
    path("", include("annotation.urls")),
    path("", include("review.urls")),
    path("api/", include("benchmark.api.urls")),
    path("api/", include("annotation.api.urls")),
    path("api/", include("review.api.urls")),
    # Paths that moved to their feature's prefix answer a redirect there; last, so a current
    # route always wins.
    path("", include("benchmark.old_urls")),
]

handler404 = "benchmark.errors.page_not_found"
