from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from benchmark.api_tokens import services as api_token_services
from benchmark.exceptions import DomainError
from benchmark.llm.client import ModelNotConfigured
from benchmark.llm.services import model_resolve
from benchmark.models import (
    ApiToken,
    Image,
    Item,
    Job,
    Membership,
    Plan,
    Project,
    Response,
    Taxonomy,
    TaxonomyTerm,
    Tool,
    ToolEdge,
    Toolset,
    Trajectory,
)


class ToolInline(admin.TabularInline):
    model = Tool
    extra = 0
    fields = ["position", "name", "category", "input_types", "output_types"]


@admin.register(Toolset)
class ToolsetAdmin(admin.ModelAdmin):
    list_display = ["name", "builtin", "n_tools", "created_at"]
    list_filter = ["builtin"]
    search_fields = ["name", "description"]
    inlines = [ToolInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Toolset]:
        return super().get_queryset(request).annotate(_n_tools=Count("tools"))

    @admin.display(description="tools", ordering="_n_tools")
    def n_tools(self, obj: Toolset) -> int:
        return obj._n_tools  # type: ignore[attr-defined]


@admin.register(Tool)
class ToolAdmin(admin.ModelAdmin):
    list_display = ["name", "toolset", "category", "position"]
    list_filter = ["toolset", "category"]
    search_fields = ["name", "description", "category"]
    list_select_related = ["toolset"]


@admin.register(ToolEdge)
class ToolEdgeAdmin(admin.ModelAdmin):
    list_display = ["source", "target", "toolset"]
    list_filter = ["toolset"]
    search_fields = ["source__name", "target__name"]
    list_select_related = ["source", "target", "toolset"]
    raw_id_fields = ["source", "target"]


class TaxonomyTermInline(admin.TabularInline):
    model = TaxonomyTerm
    extra = 0
    fields = ["kind", "name", "parent", "position"]
    raw_id_fields = ["parent"]


@admin.register(Taxonomy)
class TaxonomyAdmin(admin.ModelAdmin):
    list_display = ["name", "builtin"]
    list_filter = ["builtin"]
    search_fields = ["name", "description"]
    inlines = [TaxonomyTermInline]


@admin.register(TaxonomyTerm)
class TaxonomyTermAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "taxonomy", "parent", "position"]
    list_filter = ["taxonomy", "kind"]
    search_fields = ["name", "description"]
    list_select_related = ["taxonomy", "parent"]
    raw_id_fields = ["parent"]


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


class ProjectAdminForm(forms.ModelForm):
    """The admin's project form: a project's own model settings must resolve, and the reason
    they do not (a key variable that is not allow-listed, a cache mode, a number) is shown on
    "settings". The check lives here, where settings are edited by hand, and in
    ``project_model_set``, so that the model itself imports no service."""

    class Meta:
        model = Project
        fields = [
            "name",
            "kind",
            "tag_syntax",
            "data_format",
            "toolset",
            "taxonomy",
            "description",
            "guidelines",
            "settings",
        ]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        project_settings = cleaned.get("settings") or {}
        if isinstance(project_settings, dict) and project_settings.get("model"):
            try:
                model_resolve(project=Project(settings=project_settings))
            except ModelNotConfigured as exc:
                self.add_error("settings", str(exc))
        return cleaned


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    form = ProjectAdminForm
    list_display = ["name", "kind", "data_format", "tag_syntax", "toolset", "n_items", "created_at"]
    list_filter = ["kind", "data_format"]
    search_fields = ["name", "description"]
    list_select_related = ["toolset"]
    inlines = [MembershipInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Project]:
        return super().get_queryset(request).annotate(_n_items=Count("items"))

    @admin.display(description="items", ordering="_n_items")
    def n_items(self, obj: Project) -> int:
        return obj._n_items  # type: ignore[attr-defined]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "role"]
    list_filter = ["role", "project"]
    search_fields = ["user__username", "user__email", "project__name"]
    list_select_related = ["user", "project"]
    raw_id_fields = ["user"]


@admin.register(Image)
class ImageAdmin(admin.ModelAdmin):
    list_display = ["short_sha", "format", "width", "height", "size_bytes", "created_at"]
    list_filter = ["format", "projects"]
    search_fields = ["sha256"]
    readonly_fields = ["sha256", "file", "thumbnail", "format", "width", "height", "size_bytes"]
    filter_horizontal = ["projects"]

    @admin.display(description="sha256", ordering="sha256")
    def short_sha(self, obj: Image) -> str:
        return obj.sha256[:12]


class _AttachedInline(admin.StackedInline):
    extra = 0
    show_change_link = True
    fields = ["key", "origin", "model_name", "position"]


class ResponseInline(_AttachedInline):
    model = Response


class PlanInline(_AttachedInline):
    model = Plan
    fields = [*_AttachedInline.fields, "form", "is_alternative"]


class TrajectoryInline(_AttachedInline):
    model = Trajectory


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = [
        "external_id",
        "project",
        "status",
        "category",
        "intent",
        "level",
        "modality",
        "updated_at",
    ]
    list_filter = ["project", "status", "modality", "level", "category"]
    search_fields = ["external_id", "query"]
    list_select_related = ["project"]
    readonly_fields = ["raw", "created_at", "updated_at"]
    inlines = [ResponseInline, PlanInline, TrajectoryInline]
    list_per_page = 50


class _AttachedAdmin(admin.ModelAdmin):
    list_display = ["key", "item", "origin", "model_name", "position", "created_at"]
    list_filter = ["origin", "item__project"]
    search_fields = ["key", "model_name", "item__external_id"]
    list_select_related = ["item"]
    raw_id_fields = ["item"]
    readonly_fields = ["raw", "created_at"]


@admin.register(Response)
class ResponseAdmin(_AttachedAdmin):
    search_fields = [*_AttachedAdmin.search_fields, "text"]


@admin.register(Plan)
class PlanAdmin(_AttachedAdmin):
    list_display = [*_AttachedAdmin.list_display, "form", "is_alternative"]
    list_filter = [*_AttachedAdmin.list_filter, "form", "is_alternative"]


@admin.register(Trajectory)
class TrajectoryAdmin(_AttachedAdmin):
    pass


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "kind",
        "status",
        "project",
        "progress",
        "total",
        "created_by",
        "created_at",
        "finished_at",
    ]
    list_filter = ["kind", "status", "project"]
    search_fields = ["message", "error"]
    list_select_related = ["project", "created_by"]
    readonly_fields = ["created_at", "started_at", "finished_at"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Users' API tokens, read only (keys are made on the user's page or by ``manage.py
    api_token``, and shown only then); staff may revoke them."""

    list_display = [
        "prefix",
        "name",
        "user",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["revoked_at"]
    search_fields = ["prefix", "name", "user__username"]
    list_select_related = ["user"]
    readonly_fields = [f.name for f in ApiToken._meta.fields]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke the selected API tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        done = 0
        for token in queryset.filter(revoked_at__isnull=True):
            try:
                api_token_services.api_token_revoke(token=token, actor=request.user)  # type: ignore[arg-type]
            except DomainError as exc:
                self.message_user(request, exc.message, level="error")
            else:
                done += 1
        self.message_user(request, f"{done} API token(s) revoked.")
