from django.urls import path
from rest_framework.routers import DefaultRouter

from annotation.api.views import JudgmentTaskViewSet
from annotation.verification import views as verification_views

router = DefaultRouter()
router.register("judgment-tasks", JudgmentTaskViewSet, basename="judgment-task")
urlpatterns = [
    *router.urls,
    # Blind verification: the verifier's blind view of an item, and the step audit.
    path(
        "judgment-tasks/<int:pk>/items/<int:item_id>/blind/",
        verification_views.api_blind_item,
        name="verification-blind-item",
    ),
    path(
        "judgment-tasks/<int:pk>/items/<int:item_id>/audit/",
        verification_views.api_audit,
        name="verification-audit",
    ),
]
