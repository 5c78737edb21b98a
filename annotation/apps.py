from importlib import import_module

from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "annotation"

    def ready(self) -> None:
        # Routing by doubt: a doubt row for every item a routed task may serve.
        from annotation.judgment_tasks.doubt import signals as _doubt_signals  # noqa: F401

        # Blind verification: the items a verifier may not see the answer of yet (every item
        # selector in benchmark applies it), and the state rule that a verifier may not change
        # the answer of an item they verify (benchmark.permissions.require applies it).
        from benchmark import permissions, visibility

        visibility.register_answer_hiding_rule("annotation.verification.selectors.hidden_items")
        permissions.register_state_rule("annotation.verification.services.verifier_may_not_edit")
        # ... and its blind solve screen, which is the judge page of a solve task.
        from annotation.judgment_tasks.screens import task_screen_register
        from annotation.judgment_tasks.solving import is_solve_task

        task_screen_register(is_solve_task, "annotation.verification.views.solve")

        # The item list's bulk actions: the bar on the project page, and the job that runs
        # an action on a large selection.
        from benchmark.jobs.kinds import JobKind, job_kind_register
        from benchmark.projects.page_hooks import project_page_extend

        project_page_extend("annotation.bulk_actions.views.bulk_context")
        # The first-run checklist's "start a task" step (h-ui, issue 25).
        project_page_extend("annotation.judgment_tasks.first_run.first_run_context")
        job_kind_register(
            JobKind(
                name="bulk_action",
                runner="annotation.bulk_actions.services.bulk_action_job",
                action="set_status",
                starter_sees=True,
                result_template="annotation/bulk_action_result.html",
                title="Bulk action",
                unit="items",
            )
        )

        # The item's one history: its plans', answers' and reference trajectory's versions
        # next to its fields' (benchmark's item history page lists every registered source).
        from benchmark.items.history_sources import history_source_register

        history_source_register("annotation.plan_editor.history.plan_entries")
        history_source_register("annotation.tag_review.history.response_entries")
        history_source_register("annotation.trajectories.history.trajectory_entries")

        # Unsaved input kept as drafts (benchmark.input_drafts): the editors' keys.
        from benchmark.input_drafts.scopes import input_draft_scope_register

        for feature in ("tag_review", "trajectories", "plan_editor"):
            module = import_module(f"annotation.{feature}.input_drafts")
            input_draft_scope_register(module.SCOPE, f"annotation.{feature}.input_drafts.check")
        # Model drafting: a model-call job whose answer becomes candidates.
        from annotation.job_names import MODEL_DRAFT_KIND
        from benchmark.llm.services import model_call_kind_register

        job_kind_register(
            JobKind(
                name=MODEL_DRAFT_KIND,
                runner="annotation.model_drafts.services.model_draft_job",
                action="view",
                scope="benchmark.llm.selectors.model_call_jobs_visible",
                time_limit=31 * 60,
                result_template="annotation/model_drafts/job_result.html",
                title="Model draft",
                done_event="model-draft-done",
            )
        )
        model_call_kind_register(MODEL_DRAFT_KIND)
        # Routing by doubt: "Recompute doubt" of a whole task (annotation.judgment_tasks.doubt).
        from annotation.judgment_tasks.doubt.services import DOUBT_KIND

        job_kind_register(
            JobKind(
                name=DOUBT_KIND,
                runner="annotation.judgment_tasks.doubt.services.doubt_recompute_job",
                action="manage_studies",
                title="Doubt",
                unit="items",
            )
        )

        # Label Studio annotations in and out as judgments (benchmark's import_dataset and
        # export_dataset call these by name: benchmark may not import annotation).
        from benchmark.datasets.interop import interop_hook_register

        interop_hook_register(
            "label_studio.judgments_import",
            "annotation.interop.services.label_studio_judgments_import",
        )
        interop_hook_register(
            "label_studio.judgments_check",
            "annotation.interop.services.label_studio_judgments_check",
        )
        interop_hook_register(
            "label_studio.judgments_export",
            "annotation.interop.services.label_studio_judgments_export",
        )
