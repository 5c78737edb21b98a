from django.urls import path
from rest_framework.routers import DefaultRouter

from annotation import verification_views
from annotation.api.views import JudgmentTaskViewSet

router = DefaultRouter()
router.register("judgment-tasks", JudgmentTaskViewSet, basename="judgment-task")
urlpatterns = [
    *router.urls,
    # Blind verification: the verifier's blind view of an item, and the step audit.
    path(
        "judgment-tasks/<int:pk>/items/<int:item_pk>/blind/",
        verification_views.api_blind_item,
        name="verify-blind-item",
    ),
    path(
        "judgment-tasks/<int:pk>/items/<int:item_pk>/audit/",
        verification_views.api_audit,
        name="verify-audit",
    ),
]
