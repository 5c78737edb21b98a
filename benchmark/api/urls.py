from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import IsAuthenticated
from rest_framework.routers import DefaultRouter

from benchmark.api import views

LOGGED_IN = [IsAuthenticated]

router = DefaultRouter()
router.register("projects", views.ProjectViewSet, basename="project")
router.register("items", views.ItemViewSet, basename="item")
router.register("responses", views.ResponseViewSet, basename="response")
router.register("plans", views.PlanViewSet, basename="plan")
router.register("trajectories", views.TrajectoryViewSet, basename="trajectory")
router.register("images", views.ImageViewSet, basename="image")
router.register("jobs", views.JobViewSet, basename="job")

urlpatterns = [
    # Like every page, the schema and its docs are for logged-in users only.
    path("schema/", SpectacularAPIView.as_view(permission_classes=LOGGED_IN), name="schema"),
    path(
        "docs/",
        # The split view loads its start-up script by URL: the Content-Security-Policy runs
        # no inline scripts.
        SpectacularSwaggerSplitView.as_view(
            url_name="schema", permission_classes=LOGGED_IN, template_name="benchmark/api_docs.html"
        ),
        name="api-docs",
    ),
    path("", include(router.urls)),
]
