from django.contrib import admin

from annotation.judging.models import Assignment, Judgment, JudgmentTask, Outcome


@admin.register(JudgmentTask)
class JudgmentTaskAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "scheme", "overlap", "consensus", "active"]
    list_filter = ["scheme", "consensus", "active"]
    search_fields = ["name", "question", "project__name"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["task", "item", "user", "status", "expires_at"]
    list_filter = ["status"]
    raw_id_fields = ["item"]


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = ["task", "item", "user", "value", "reason", "seconds", "created_at"]
    list_filter = ["task"]
    raw_id_fields = ["item", "assignment"]


@admin.register(Outcome)
class OutcomeAdmin(admin.ModelAdmin):
    list_display = ["task", "item", "verdict", "decided_by", "decided_at"]
    list_filter = ["verdict"]
    raw_id_fields = ["item"]
