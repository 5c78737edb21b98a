from django.contrib import admin

from annotation.judgment_tasks.models import Assignment, Judgment, JudgmentTask, Outcome, TaskUnit


@admin.register(JudgmentTask)
class JudgmentTaskAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "unit_kind", "scheme", "overlap", "consensus", "active"]
    list_filter = ["unit_kind", "scheme", "consensus", "active"]
    search_fields = ["name", "question", "project__name"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["task", "item", "unit", "user", "status", "expires_at"]
    list_filter = ["status"]
    raw_id_fields = ["item"]


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = ["task", "item", "unit", "user", "value", "reason", "seconds", "created_at"]
    list_filter = ["task"]
    raw_id_fields = ["item", "assignment"]


@admin.register(Outcome)
class OutcomeAdmin(admin.ModelAdmin):
    list_display = ["task", "item", "unit", "verdict", "decided_by", "decided_at"]
    list_filter = ["verdict"]
    raw_id_fields = ["item"]


@admin.register(TaskUnit)
class TaskUnitAdmin(admin.ModelAdmin):
    list_display = ["task", "key", "item", "position"]
    list_filter = ["task"]
    raw_id_fields = ["item"]
