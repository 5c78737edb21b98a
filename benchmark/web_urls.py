from django.urls import path, re_path

from benchmark import image_views, llm_views, toolset_views, views

app_name = "benchmark"

urlpatterns = [
    path("", views.project_list, name="project_list"),
    path("projects/<int:pk>/", views.project_detail, name="project_detail"),
    path("projects/<int:project_pk>/items/<int:pk>/", views.item_detail, name="item_detail"),
    path("projects/<int:pk>/import/", views.project_import, name="project_import"),
    path("projects/<int:pk>/export/", views.project_export, name="project_export"),
    path("jobs/<int:pk>/", views.job_detail, name="job_detail"),
    path("jobs/<int:pk>/model-call/", llm_views.model_call_job, name="model_call_job"),
    path("jobs/<int:pk>/retry/", llm_views.job_retry, name="job_retry"),
    path(
        "projects/<int:project_pk>/items/<int:pk>/model/",
        llm_views.item_model,
        name="item_model",
    ),
    path("projects/<int:pk>/toolset/", toolset_views.toolset_detail, name="toolset"),
    path("projects/<int:pk>/images/", image_views.image_list, name="images"),
    path("projects/<int:pk>/images/preview/", image_views.image_preview, name="image_preview"),
    path("projects/<int:pk>/images/derive/", image_views.image_derive, name="image_derive"),
    re_path(
        r"^projects/(?P<pk>[0-9]+)/images/(?P<sha256>[0-9a-f]{64})/edit/$",
        image_views.image_edit,
        name="image_edit",
    ),
    re_path(r"^images/(?P<sha256>[0-9a-f]{64})/$", views.image_file, name="image"),
    re_path(r"^images/(?P<sha256>[0-9a-f]{64})/thumb/$", views.image_thumb, name="image_thumb"),
]
