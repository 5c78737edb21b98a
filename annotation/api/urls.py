from rest_framework.routers import DefaultRouter

from annotation.api.views import JudgmentTaskViewSet

router = DefaultRouter()
router.register("judgment-tasks", JudgmentTaskViewSet, basename="judgment-task")
urlpatterns = router.urls
