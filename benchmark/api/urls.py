from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from benchmark.api import views

router = DefaultRouter()
router.register("projects", views.ProjectViewSet, basename="project")
router.register("items", views.ItemViewSet, basename="item")
router.register("responses", views.ResponseViewSet, basename="response")
router.register("plans", views.PlanViewSet, basename="plan")
router.register("trajectories", views.TrajectoryViewSet, basename="trajectory")
router.register("images", views.ImageViewSet, basename="image")
router.register("jobs", views.JobViewSet, basename="job")

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("", include(router.urls)),
]
