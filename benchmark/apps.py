from django.apps import AppConfig


class BenchmarkConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "benchmark"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        post_migrate.connect(_item_indexes_ensure, sender=self, dispatch_uid="item_indexes")

        from axes.signals import user_locked_out

        from benchmark import checks  # noqa: F401 - registers the deploy checks

        # Unsaved input kept as drafts: the item form's keys.
        from benchmark.input_drafts.scopes import input_draft_scope_register
        from benchmark.items import input_drafts as item_drafts

        input_draft_scope_register(item_drafts.NEW, "benchmark.items.input_drafts.new_check")
        input_draft_scope_register(item_drafts.EDIT, "benchmark.items.input_drafts.edit_check")
        from benchmark.login_throttle import api_locked_out

        user_locked_out.connect(api_locked_out, dispatch_uid="benchmark.api_locked_out")

        from benchmark.projects.page_hooks import project_page_extend

        # The item list's saved filters (benchmark.saved_filters sits above the project pages).
        project_page_extend("benchmark.saved_filters.views.saved_filters_context")

        from benchmark.job_names import IMPORT_AREA, IMPORT_KIND
        from benchmark.jobs.kinds import JobKind, job_kind_register
        from benchmark.llm.services import MODEL_CALL_KIND

        job_kind_register(
            JobKind(
                name=IMPORT_KIND,
                runner="benchmark.datasets.services.dataset_import_job",
                action="import",  # admins, and whoever started it
                starter_sees=True,
                upload_area=IMPORT_AREA,
                result_template="benchmark/jobs/import_result.html",
                title="Import",
                unit="records",
            )
        )
        job_kind_register(
            JobKind(
                name=MODEL_CALL_KIND,
                runner="benchmark.llm.services.model_call_job",
                action="view",
                # Whoever may view the call's item (the hook for the blind rule).
                scope="benchmark.llm.selectors.model_call_jobs_visible",
                time_limit=31 * 60,
                result_template="benchmark/jobs/model_call_result.html",
                title="Model call",
                done_event="model-call-done",
            )
        )


def _item_indexes_ensure(sender: AppConfig, using: str = "default", **kwargs: object) -> None:
    """Put back the item tally triggers and search index if a migration dropped them
    (SQLite rebuilds a table it alters, without its triggers)."""
    from django.db import connections

    from benchmark.models import indexing

    indexing.ensure(connections[using])
